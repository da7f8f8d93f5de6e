"""Objects held once and shown in every logical cluster (kube's default ClusterRoles), read-through.

A logical cluster sees a shared object under its name until it stores its own: a get or list that
finds nothing stored there serves the shared one; an update or patch of it writes that cluster's
own copy (etcd's compare on revision 0 holds for an absent key), which shadows the shared object
in that cluster only from then on; deleting the copy brings the shared object back. Creating one
under a shared name is AlreadyExists, and the shared object itself cannot be deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.continuetoken import encode_continue
from kcp_apiserver.registry.listing import Entry, decoded
from kcp_apiserver.storage.keys import object_key, scope_prefix

Obj = dict[str, Any]
REVISION = 0  # a shared object's stored revision: none, so a write must find the key absent


class SharedObjects(Protocol):
    def get(self, cluster: str, name: str) -> Obj | None:
        """A fresh copy of the shared object `name` as `cluster` sees it, or None."""

    def names(self) -> Iterable[str]: ...


def with_shared(entries: list[Entry], shared: SharedObjects, cluster: str,
                matches: Callable[[Obj], bool] | None) -> list[Entry]:
    """A cluster's stored objects and the shared ones it does not shadow, in name order as etcd's keys."""
    stored = {decoded(e)["metadata"]["name"]: e for e in entries}
    for name in shared.names():
        if name not in stored:
            obj = shared.get(cluster, name)
            if obj is not None and (matches is None or matches(obj)):
                stored[name] = obj
    return [stored[name] for name in sorted(stored)]


def page(entries: list[Entry], prefix: str, cluster: str, revision: int, *, limit: int, start: str,
         exact: bool) -> tuple[list[Entry], str, int | None]:
    """One page of a merged list (stored and shared objects, in name order), as the registry pages etcd:
    from the continue token's start key, at most `limit` items, then a token naming the next item's key
    at the same revision. Returns (items, continue token, remainingItemCount when `exact`)."""
    scope = scope_prefix(prefix, cluster, None)
    if start and not start.startswith(scope):
        raise st.bad_request("continue key is not valid: it belongs to another list")
    keyed = [(object_key(prefix, cluster, "", decoded(e)["metadata"]["name"]), e) for e in entries]
    keyed = [(key, e) for key, e in keyed if key >= start]
    if not limit or len(keyed) <= limit:
        return [e for _, e in keyed], "", None
    return ([e for _, e in keyed[:limit]], encode_continue(revision, keyed[limit][0]),
            len(keyed) - limit if exact else None)
