"""Which served types are kube's own: a physical cluster serves them as built-ins, and kcp must too.

kcp serves a Deployment as a CRD imported from the physical clusters (the cluster controller writes it,
labelled `workload.kcp.io/imported`). To the user it is still kube's Deployment: strategic merge patch,
kube's defaults and validation apply. A CRD that is not imported, or whose group is not one of kube's,
keeps the behaviour kube gives custom resources.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

IMPORTED_LABEL = "workload.kcp.io/imported"

# the API groups kube-apiserver itself serves (core is "")
KUBE_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
    "authentication.k8s.io", "authorization.k8s.io", "certificates.k8s.io", "coordination.k8s.io",
    "discovery.k8s.io", "events.k8s.io", "extensions", "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io", "networking.k8s.io", "node.k8s.io", "rbac.authorization.k8s.io",
    "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io", "storagemigration.k8s.io",
})


def is_kube_group(group: str) -> bool:
    return group in KUBE_GROUPS


def is_imported_kube_type(crd: Mapping[str, Any]) -> bool:
    """Is this CRD one of kube's built-in types imported from a physical cluster?"""
    meta = crd.get("metadata") or {}
    spec = crd.get("spec") or {}
    return (meta.get("labels") or {}).get(IMPORTED_LABEL) == "true" and is_kube_group(spec.get("group", ""))
