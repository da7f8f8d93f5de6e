"""The coordination.k8s.io group: Leases, which leader election and node heartbeats write."""

from __future__ import annotations

from kcp_apiserver.registry.resource import Column, Resource
from kcp_apiserver.registry.tables import AGE, NAME

RESOURCES: tuple[Resource, ...] = (
    Resource("coordination.k8s.io", "v1", "Lease", "leases", "lease", True,
             definition="io.k8s.api.coordination.v1.Lease",
             columns=(NAME, Column("Holder", "string", lambda o: (o.get("spec") or {}).get("holderIdentity", ""),
                                   "The holder of the lease"), AGE)),
)
