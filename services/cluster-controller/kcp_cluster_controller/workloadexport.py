"""A compute workspace's workload APIs, shared rather than copied: once its admin makes an APIExport named
`kubernetes` there, the controller keeps it offering every type imported from the workspace's SyncTargets (the
negotiated CRDs, each as an APIResourceSchema with its kube semantics), so a team's workspace that binds it
serves Deployments, Services... as kube does, with no SyncTarget, kubeconfig or CRD of its own. A type the
SyncTargets stop importing leaves the export's latest schemas (bindings keep it: apis/evolution)."""

from __future__ import annotations

from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError
from kcpcommon.kubetypes import IMPORTED_LABEL

from .exports import APIS, schema_from_crd

log = structlog.get_logger("kcp-cluster-controller.workloadexport")

EXPORT = "kubernetes"  # kcp's name for the export of a compute workspace's workload APIs


async def offer_imported_types(kcp: ClientFactory, cluster: str) -> list[str] | None:
    """Bring `cluster`'s `kubernetes` export up to its imported types; the schemas it offers (None: no export)."""
    client = kcp.dynamic(cluster)
    exports = client.resource(APIS, "apiexports", namespaced=False)
    try:
        export = await exports.get(EXPORT)
    except APINotFoundError:
        return None
    crds = await client.resource("apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False).list(
        label_selector=f"{IMPORTED_LABEL}=true")
    schemas = client.resource(APIS, "apiresourceschemas", namespaced=False)
    # one list instead of a create per type on every reconcile (a bench counted 1,282 AlreadyExists answers)
    existing = {(s.get("metadata") or {}).get("name") for s in (await schemas.list()).get("items") or []}
    offered: list[str] = []
    for crd in crds.get("items") or []:
        schema = schema_from_crd(crd)
        if schema["metadata"]["name"] not in existing:
            try:
                await schemas.create(schema)
            except APIAlreadyExistsError:
                pass  # named after its content: the same, made since the list
        offered.append(schema["metadata"]["name"])
    offered.sort()
    spec: dict[str, Any] = export.get("spec") or {}
    if spec.get("latestResourceSchemas") != offered:
        await exports.patch(EXPORT, {"spec": {"latestResourceSchemas": offered}})
        log.info("workload APIs offered", cluster=cluster, export=EXPORT, schemas=len(offered))
    return offered
