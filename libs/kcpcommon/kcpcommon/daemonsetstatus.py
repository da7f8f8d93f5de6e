"""One DaemonSet's status over several clusters: each cluster's counts summed, as if their nodes were one cluster's.

A DaemonSet in kcp placed on several physical clusters runs one copy on each, and each copy's status counts the
nodes of its cluster. kcp's `.status` is their sum, so `kubectl get ds` shows every node that runs it and
`kubectl rollout status ds` waits for all of them: kube's rollout check reads observedGeneration (the smallest
any cluster reported: the set is observed at a generation once every cluster has seen it), updatedNumberScheduled,
desiredNumberScheduled and numberAvailable. A cluster that has not reported yet has observed nothing. A stale
cluster (its SyncTarget not Ready: its syncer reports nothing) keeps its nodes in the desired counts but none of
its pods counts as ready or available, as kube's node lifecycle controller marks the pods of an unreachable node
not ready.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

# always present in kube's DaemonSetStatus (the others are omitted when zero)
REQUIRED = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
SUMMED = (*REQUIRED, "updatedNumberScheduled", "numberAvailable")


def _count(status: Mapping[str, Any], field: str) -> int:
    value = status.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def sum_statuses(statuses: Mapping[str, Mapping[str, Any]], *, placed: Collection[str], generation: int,
                 stale: Collection[str] = ()) -> dict[str, Any]:
    """The status of a DaemonSet of `generation` placed on `placed`, from what each cluster reported
    (`statuses`, by target; a target not in `placed` is left out)."""
    total = dict.fromkeys(SUMMED, 0)
    observed = generation
    collisions = 0
    for target in placed:
        status = statuses.get(target)
        if status is None:
            observed = min(observed, max(0, generation - 1))
            continue
        reported = status.get("observedGeneration")
        observed = min(observed, reported if isinstance(reported, int) and not isinstance(reported, bool) else 0)
        collisions = max(collisions, _count(status, "collisionCount"))
        for field in SUMMED:
            if target in stale and field in ("numberReady", "numberAvailable"):
                continue
            total[field] += _count(status, field)
    result: dict[str, Any] = {field: total[field] for field in REQUIRED}
    for field in ("updatedNumberScheduled", "numberAvailable"):
        if total[field]:
            result[field] = total[field]
    unavailable = total["desiredNumberScheduled"] - total["numberAvailable"]
    if unavailable > 0:
        result["numberUnavailable"] = unavailable
    if collisions:
        result["collisionCount"] = collisions
    result["observedGeneration"] = observed
    return result
