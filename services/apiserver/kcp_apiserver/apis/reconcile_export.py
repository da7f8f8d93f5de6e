"""An APIExport's status, written by the server only: its identity, which every binding of it stores its
objects under, and whether every consumer follows its latest schemas (`BindingsUpToDate`: the consumers an
incompatible schema would break, each kept on what it had; see evolution.py)."""

from __future__ import annotations

from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apis.reconcile_binding import INCOMPATIBLE_SCHEMA, UP_TO_DATE, with_condition
from kcp_apiserver.apis.types import API_EXPORT, identity_hash
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry

BINDINGS_UP_TO_DATE = "BindingsUpToDate"
SHOWN = 10  # consumers named in the condition's message; the count says how many there are


def bindings_condition(held: dict[str, str]) -> tuple[str, str, str]:
    """(status, reason, message) of `BindingsUpToDate` for the consumers held back (consumer -> why)."""
    if not held:
        return "True", UP_TO_DATE, "every binding follows the latest schemas"
    names = sorted(held)
    shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
    return "False", INCOMPATIBLE_SCHEMA, (f"{len(names)} consumer(s) keep their schema, the latest would break "
                                          f"them: {shown}; {held[names[0]]}")


async def reconcile_export(registry: Registry, cluster: str, export: Obj, held: dict[str, str]) -> None:
    """`export` is the controller's own copy; `held` the consumers that stay on an older schema."""
    meta = export["metadata"]
    if meta.get("deletionTimestamp"):
        return
    status = export.setdefault("status", {})
    before = dict(status)
    wanted = identity_hash(cluster, meta["name"], meta["uid"])
    if status.get("identityHash") != wanted:  # put back if anyone wrote another: it decides where objects live
        status["identityHash"] = wanted
        status["conditions"] = with_condition(status.get("conditions"), "IdentityValid", "True", "IdentityValid",
                                              "the export's identity is its own")
    status["conditions"] = with_condition(status.get("conditions"), BINDINGS_UP_TO_DATE, *bindings_condition(held))
    if status != before:
        await registry.update(API_EXPORT, cluster, "", meta["name"], export, subresource="status",
                              ctx=system_context(cluster))
