"""Status up: the downstream object's status, patched into the upstream object's status subresource (or, for
an object on several targets or split, into this target's status annotation: `summary.py`)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from kcpcommon.errors import APIClientError, APIConflictError

from .metrics import UP, SyncerMetrics
from .objects import Obj
from .specdiff import is_split
from .summary import annotations_patch, own_status_patch, summary
from .synced import SyncedType, SyncKey
from .transform import status_change, upstream_status


class StatusUp:
    """Writes status up and times it: from the downstream status change seen to the upstream write."""

    def __init__(self, *, sync_target: str, metrics: SyncerMetrics) -> None:
        self._target = sync_target
        self._metrics = metrics
        self._seen: dict[SyncKey, float] = {}  # first unsynced downstream status change

    def downstream_changed(self, key: SyncKey, old: Obj | None, new: Obj) -> None:
        """Start the latency clock if the downstream status changed."""
        if new.get("status") is not None and (old is None or old.get("status") != new.get("status")):
            self._seen.setdefault(key, time.monotonic())

    def forget(self, key: SyncKey) -> None:
        self._seen.pop(key, None)

    async def sync(self, typ: SyncedType, key: SyncKey, up: Obj, down: Obj | None, applied_hash: str) -> None:
        """The downstream status, as a merge patch of the status subresource, without a precondition; for an
        object on several targets, first as this target's status annotation, and `.status` their summary; for an
        object split on this target, the annotation only.

        The syncer is the only writer of a synced object's status, and the patch is recomputed
        against the cache on every upstream change: a patch made from a stale copy is corrected by
        the reconcile its own event triggers. A precondition would only turn the cache's lag
        behind our own finalizer patch into conflicts and retries.
        """
        seen = self._seen.pop(key, None)
        if down is None or not typ.status_up:
            return
        mine = upstream_status(up, down, applied_hash)
        annotations: Mapping[str, str | None]
        split = is_split(up, self._target)
        if split:  # its own annotation only: the splitter owns `.status` (summary.py)
            annotations, change = own_status_patch(up, self._target, mine), None
        else:
            annotations = annotations_patch(up, self._target, mine)
            change = status_change(up.get("status"), summary(typ.name, up, self._target, mine))
        try:
            if annotations:  # metadata and status are separate writes
                await typ.up_resource.patch(key.name, {"metadata": {"annotations": annotations}},
                                            namespace=key.namespace or None)
            if change is None:
                if not (split and annotations):  # a split object's status is its annotation
                    return
            else:
                await typ.up_resource.patch(key.name, change, namespace=key.namespace or None, subresource="status")
        except APIClientError as exc:
            if not isinstance(exc, APIConflictError):
                self._metrics.error(exc.reason or f"HTTP{exc.status}")
            if seen is not None:
                self._seen.setdefault(key, seen)
            raise
        self._metrics.synced(UP, typ.name)
        if seen is not None:
            self._metrics.latency(UP, time.monotonic() - seen)
