"""An APIExport's identity: set by the server in its status (only the server), and what every binding of it
stores its objects under."""

from __future__ import annotations

from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apis.types import API_EXPORT, identity_hash
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry, now_rfc3339


async def reconcile_export(registry: Registry, cluster: str, export: Obj) -> None:
    """`export` is the controller's own copy."""
    meta = export["metadata"]
    status = export.setdefault("status", {})
    wanted = identity_hash(cluster, meta["name"], meta["uid"])
    if status.get("identityHash") == wanted or meta.get("deletionTimestamp"):
        return
    status["identityHash"] = wanted  # and put back if anyone wrote another: it decides where objects are stored
    status["conditions"] = [{"type": "IdentityValid", "status": "True", "lastTransitionTime": now_rfc3339()}]
    await registry.update(API_EXPORT, cluster, "", meta["name"], export, subresource="status",
                          ctx=system_context(cluster))
