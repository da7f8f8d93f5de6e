"""A Deployment's status from its ReplicaSets, with kube's conditions (Available, Progressing).

Progressing follows kube's syncRolloutStatus: NewReplicaSetAvailable once the rollout is complete,
ReplicaSetUpdated while it moves, ProgressDeadlineExceeded when it has not moved for
progressDeadlineSeconds; DeploymentPaused / DeploymentResumed (status Unknown) around a pause.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kcp_sim_cluster.controlplane.objects import Obj, get_condition
from kcpcommon.kubetime import format_time as rfc3339
from kcpcommon.kubetime import parse_time

AVAILABLE, PROGRESSING = "Available", "Progressing"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"


def _int(obj: Obj | None, path: str) -> int:
    spec, field = path.split(".")
    return int(((obj or {}).get(spec) or {}).get(field) or 0)


def replicas(d: Obj) -> int:
    value = (d.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def calculate(d: Obj, new_rs: Obj | None, all_rss: Sequence[Obj], max_unavailable: int) -> dict[str, Any]:
    """kube's calculateStatus: counts from the ReplicaSets, the Available condition, the rest kept."""
    old = d.get("status") or {}
    available = sum(_int(rs, "status.availableReplicas") for rs in all_rss)
    total = sum(_int(rs, "spec.replicas") for rs in all_rss)
    status: dict[str, Any] = {
        "observedGeneration": d["metadata"].get("generation", 1),
        "replicas": sum(_int(rs, "status.replicas") for rs in all_rss),
        "updatedReplicas": _int(new_rs, "status.replicas") if new_rs is not None else 0,
        "readyReplicas": sum(_int(rs, "status.readyReplicas") for rs in all_rss),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
        "conditions": [dict(c) for c in old.get("conditions") or []],
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= replicas(d) - max_unavailable:
        set_deployment_condition(status, AVAILABLE, "True", "MinimumReplicasAvailable",
                                 "Deployment has minimum availability.")
    else:
        set_deployment_condition(status, AVAILABLE, "False", "MinimumReplicasUnavailable",
                                 "Deployment does not have minimum availability.")
    return status


def is_complete(d: Obj, status: Obj) -> bool:
    want = replicas(d)
    return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
            and int(status.get("availableReplicas") or 0) == want
            and int(status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation", 1)))


def _progressed(old: Obj, new: Obj) -> bool:
    def get(s: Obj, f: str) -> int:
        return int(s.get(f) or 0)

    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (get(new, "updatedReplicas") > get(old, "updatedReplicas") or new_old < old_old
            or get(new, "readyReplicas") > get(old, "readyReplicas")
            or get(new, "availableReplicas") > get(old, "availableReplicas"))


def deadline(d: Obj) -> int | None:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return None if value is None else int(value)


def rollout_conditions(d: Obj, new_rs: Obj | None, status: dict[str, Any]) -> float | None:
    """Update Progressing in `status`; returns seconds until the deadline must be checked again."""
    limit = deadline(d)
    if limit is None:
        status["conditions"] = [c for c in status["conditions"] if c.get("type") != PROGRESSING]
        return None
    cond = get_condition(status, PROGRESSING)
    name = new_rs["metadata"]["name"] if new_rs is not None else ""
    if cond is not None and cond.get("reason") == NEW_RS_AVAILABLE and \
            int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0):
        return None  # complete and still so
    old = d.get("status") or {}
    if new_rs is not None and is_complete(d, status):
        set_deployment_condition(status, PROGRESSING, "True", NEW_RS_AVAILABLE,
                                 f'ReplicaSet "{name}" has successfully progressed.')
        return None
    if new_rs is not None and _progressed(old, status):
        set_deployment_condition(status, PROGRESSING, "True", "ReplicaSetUpdated",
                                 f'ReplicaSet "{name}" is progressing.', renew=True)
        return float(limit) + 1
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return None
    if cond.get("reason") == TIMED_OUT:
        return None
    since = parse_time(cond.get("lastUpdateTime") or cond.get("lastTransitionTime"))
    left = (since.timestamp() + limit - time.time()) if since else 0.0
    if left < 0 and new_rs is not None:
        set_deployment_condition(status, PROGRESSING, "False", TIMED_OUT,
                                 f'ReplicaSet "{name}" has timed out progressing.')
        return None
    return max(left, 0.0) + 1


def set_deployment_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str, *,
                             renew: bool = False) -> None:
    """kube's SetDeploymentCondition: nothing changes if status and reason are the same (unless `renew`,
    kube's remove-then-set for a rollout that moved on); otherwise the condition is replaced, keeping
    its lastTransitionTime when the status is unchanged, and moves to the end of the list."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    current = next((c for c in conditions if c.get("type") == type_), None)
    if current is not None and not renew and current.get("status") == value and current.get("reason") == reason:
        return
    stamp = rfc3339()
    condition = {"type": type_, "status": value, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
                 "reason": reason, "message": message}
    if current is not None and current.get("status") == value:
        condition["lastTransitionTime"] = current.get("lastTransitionTime", stamp)
    status["conditions"] = [c for c in conditions if c.get("type") != type_] + [condition]


def paused_condition(d: Obj, status: dict[str, Any]) -> None:
    """kube's checkPausedConditions."""
    if deadline(d) is None:
        return
    cond = get_condition(status, PROGRESSING)
    if cond is not None and cond.get("reason") == TIMED_OUT:
        return
    paused = bool((d.get("spec") or {}).get("paused"))
    shown = cond is not None and cond.get("reason") == PAUSED
    if paused and not shown:
        set_deployment_condition(status, PROGRESSING, "Unknown", PAUSED, "Deployment is paused")
    elif not paused and shown:
        set_deployment_condition(status, PROGRESSING, "Unknown", RESUMED, "Deployment is resumed")
