"""An APIExport's identity: set once in its status, and what every binding of it stores its objects under."""

from __future__ import annotations

from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apis.types import API_EXPORT, identity_hash
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry, now_rfc3339


async def reconcile_export(registry: Registry, cluster: str, export: Obj) -> None:
    """`export` is the controller's own copy."""
    meta = export["metadata"]
    status = export.setdefault("status", {})
    if status.get("identityHash") or meta.get("deletionTimestamp"):
        return
    status["identityHash"] = identity_hash(cluster, meta["name"], meta["uid"])
    status["conditions"] = [{"type": "IdentityValid", "status": "True", "lastTransitionTime": now_rfc3339()}]
    await registry.update(API_EXPORT, cluster, "", meta["name"], export, subresource="status",
                          ctx=system_context(cluster))
