"""What the Deployments on each target request (their shares there), summed as the informer's events arrive.

The allocatable estimate (capacity.py) takes off a target's allocatable what every other Deployment
assigned to it requests. Summing that per reconcile is a scan of every Deployment on the target,
O(N) per root and O(N^2) to spread N roots, so the sums are kept here instead: each Deployment's
contribution is remembered by key and moved between sums when it changes. The sums follow the
informer's handler, a moment behind its cache; an estimate that is a few events old is no worse
than one two workers read at the same time.

The sums are per SyncTarget (its `sync_target_key`), not per logical cluster: with shared compute, the
Deployments of every workspace placed on one physical cluster take from the same allocatable. `resolve`
says which SyncTarget a Deployment assigned to a target name in its namespace is on (the splitter asks
its caches: the workspace's own SyncTarget, or the one the namespace is placed on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from kcpcommon.informer import DeletedFinalStateUnknown, deleted_object
from kcpcommon.keys import ObjectKey, key_for, sync_target_key

from .capacity import pod_requests
from .shares import shares_of

Slot = str  # a SyncTarget's sync_target_key(workspace, name)
Resolve = Callable[[str, str, str], Slot]  # (logical cluster, namespace, target name) -> the SyncTarget's key


def own_workspace(cluster: str, namespace: str, target: str) -> Slot:
    """The single-workspace model: a target name means the SyncTarget of the Deployment's own workspace."""
    return sync_target_key(cluster, target)


def _add(total: dict[str, Fraction], amounts: Mapping[str, Fraction], sign: int) -> None:
    for name, value in amounts.items():
        left = total.get(name, Fraction(0)) + sign * value
        if left:
            total[name] = left
        else:
            total.pop(name, None)


class TargetLoad:
    """Requests per SyncTarget, kept up to date by `on_add`/`on_update`/`on_delete`."""

    def __init__(self, resolve: Resolve = own_workspace) -> None:
        self._resolve = resolve
        self._parts: dict[ObjectKey, list[tuple[Slot, dict[str, Fraction]]]] = {}
        self._totals: dict[Slot, dict[str, Fraction]] = {}

    def on_add(self, obj: Mapping[str, Any]) -> None:
        self._set(key_for(obj), obj)

    def on_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self._set(key_for(new), new)

    def on_delete(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        self._set(key_for(deleted_object(obj)), None)

    def used(self, slot: Slot, *, excluding: Iterable[ObjectKey] = ()) -> dict[str, Fraction]:
        """What the Deployments on SyncTarget `slot` request, less those in `excluding` (the root asking)."""
        total = dict(self._totals.get(slot, {}))
        for key in excluding:
            for part_slot, amounts in self._parts.get(key, ()):
                if part_slot == slot:
                    _add(total, amounts, -1)
        return total

    def _set(self, key: ObjectKey, obj: Mapping[str, Any] | None) -> None:
        for slot, amounts in self._parts.pop(key, ()):
            _add(self._totals[slot], amounts, -1)
            if not self._totals[slot]:
                del self._totals[slot]
        if obj is None:
            return
        one = {**pod_requests(((obj.get("spec") or {}).get("template")) or {}), "pods": Fraction(1)}
        parts = []
        for target, replicas in shares_of(obj).items():
            if replicas <= 0:
                continue
            amounts = {name: value * replicas for name, value in one.items()}
            slot = self._resolve(key.cluster, key.namespace, target)
            parts.append((slot, amounts))
            _add(self._totals.setdefault(slot, {}), amounts, 1)
        if parts:
            self._parts[key] = parts
