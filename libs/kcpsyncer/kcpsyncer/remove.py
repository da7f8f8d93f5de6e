"""Removal: an upstream object unassigned, deleted or being deleted loses its downstream copy, then the finalizer.

Deletes only ever follow positive evidence: an object missing from the upstream cache, whatever the
reason (a DELETED event, a relist tombstone, a downstream object with no upstream counterpart in
cache), is looked up with a GET on kcp (`absent_upstream`), and only a 404 naming that very object, or
the object itself showing it is unassigned or being deleted, lets the syncer delete downstream. kcp
unreachable, a list that failed or came back empty wrongly, a type not served: all of these raise, and
the key is retried with backoff, deleting nothing. The upstream finalizer keeps an object deleted while
the syncer was down until the syncer has removed its downstream copy.

The downstream delete propagates as the user's did: `kubectl delete --cascade=orphan` (or foreground) in
kcp puts kube's `orphan` (`foregroundDeletion`) finalizer on the object with its deletionTimestamp, and the
syncer deletes its copy with that policy, so a ReplicaSet deleted with orphan leaves its pods running on the
cluster as it would there. kcp's garbage collector lifts that finalizer soon after, so the policy is noted
from the upstream events as they come (`note`), not read from the cache when the key is reconciled.
"""

from __future__ import annotations

from structlog.typing import FilteringBoundLogger

from kcpcommon.controller import Result
from kcpcommon.errors import APIConflictError, APINotFoundError

from .down import SpecDown, set_finalizers
from .metrics import DELETE, SyncerMetrics
from .objects import Obj, deleting, finalizers, meta
from .synced import SyncedType, SyncKey
from .up import StatusUp

DELETE_WAIT = 2.0  # seconds before looking again at a downstream object still being finalized
# kube's finalizers of a delete that orphans or waits for dependents -> the propagation policy they stand for
POLICY_FINALIZERS = {"orphan": "Orphan", "foregroundDeletion": "Foreground"}


def propagation_of(up: Obj) -> str | None:
    """The propagation policy of `up`'s deletion, when it is not the default (background)."""
    if not deleting(up):
        return None
    return next((policy for finalizer, policy in POLICY_FINALIZERS.items() if finalizer in finalizers(up)), None)


async def absent_upstream(typ: SyncedType, key: SyncKey) -> Obj | None:
    """The upstream object, read from kcp because the cache lacks it; None only on a 404 naming it.

    Any other answer (kcp unreachable, 403, the type gone: a 404 without the object's name) raises,
    so the key is retried with backoff and nothing is deleted.
    """
    try:
        obj: Obj = await typ.up_resource.get(key.name, namespace=key.namespace or None)
    except APINotFoundError as exc:
        if exc.details.get("name") == key.name:
            return None
        raise
    return obj


class Removal:
    """Deletes downstream copies (that very object) and releases the upstream finalizer once they are gone."""

    def __init__(self, *, spec_down: SpecDown, status_up: StatusUp, metrics: SyncerMetrics,
                 log: FilteringBoundLogger) -> None:
        self._down = spec_down
        self._up = status_up
        self._metrics = metrics
        self._log = log
        self._policies: dict[SyncKey, tuple[str, str]] = {}  # key -> (upstream uid, policy of its deletion)

    def note(self, key: SyncKey, up: Obj) -> None:
        """Remember the propagation policy of an upstream deletion as its event shows it."""
        policy = propagation_of(up)
        if policy is not None:
            self._policies[key] = (str(meta(up).get("uid") or ""), policy)

    def _policy(self, key: SyncKey, up: Obj | None) -> str:
        noted = self._policies.get(key)
        if noted is not None and up is not None and noted[0] != str(meta(up).get("uid") or ""):
            noted = None  # another object by that name since
        return (noted[1] if noted else None) or (propagation_of(up) if up is not None else None) or "Background"

    async def remove(self, typ: SyncedType, key: SyncKey, up: Obj | None, down: Obj | None,
                     down_ns: str | None) -> Result | None:
        """Unassigned, deleted or being deleted upstream: delete downstream, then release the finalizer."""
        self._down.forget_change(key)
        self._up.forget(key)
        if down is not None:
            if not await self._delete_downstream(typ, key, down, down_ns, self._policy(key, up)):
                return Result(requeue_after=DELETE_WAIT)
        self._policies.pop(key, None)
        self._down.forget_writes(key)
        finalizer = self._down.finalizer
        if up is not None and finalizer in finalizers(up):
            await set_finalizers(typ.up_resource, up, [f for f in finalizers(up) if f != finalizer])
        self._down.forget_report(key)
        return None

    async def _delete_downstream(self, typ: SyncedType, key: SyncKey, down: Obj, down_ns: str | None,
                                 policy: str) -> bool:
        """Delete our downstream copy (that very object: uid precondition) with `policy`; True once it is gone."""
        if deleting(down):
            return False
        uid = str(meta(down).get("uid") or "")
        try:
            result = await typ.down_resource.delete(str(meta(down).get("name") or key.name), namespace=down_ns,
                                                    propagation_policy=policy,
                                                    preconditions={"uid": uid} if uid else None)
        except APINotFoundError:
            return True
        except APIConflictError:  # another object by that name now: its own events bring it here again
            return True
        self._metrics.synced(DELETE, typ.name)
        self._log.info("deleted downstream", resource=typ.name, namespace=key.namespace, name=key.name,
                       downstream_namespace=down_ns, propagation=policy)
        return result.get("kind") == "Status" or not finalizers(result)
