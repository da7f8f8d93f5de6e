"""Facts about pods that several controllers need (kube's podutil)."""

from __future__ import annotations

from kcp_sim_cluster.controlplane.objects import Obj, get_condition, is_deleting
from kcpcommon.kubetime import parse_time

DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL = ("Succeeded", "Failed")


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminal(pod: Obj) -> bool:
    return phase(pod) in TERMINAL


def is_active(pod: Obj) -> bool:
    """kube's FilterActivePods: not finished and not being deleted."""
    return not is_terminal(pod) and not is_deleting(pod)


def node_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def is_pending_schedule(pod: Obj) -> bool:
    """Waiting for the default scheduler."""
    spec = pod.get("spec") or {}
    return (not spec.get("nodeName") and not is_deleting(pod) and not is_terminal(pod)
            and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER)


def is_gated(pod: Obj) -> bool:
    """Held back by spec.schedulingGates: the scheduler leaves it alone until they are removed."""
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def is_ready(pod: Obj) -> bool:
    cond = get_condition(pod.get("status"), "Ready")
    return bool(cond and cond.get("status") == "True")


def is_available(pod: Obj, min_ready_seconds: int, now_ts: float) -> bool:
    """Ready for at least minReadySeconds."""
    cond = get_condition(pod.get("status"), "Ready")
    if not cond or cond.get("status") != "True":
        return False
    if not min_ready_seconds:
        return True
    since = parse_time(cond.get("lastTransitionTime"))
    return since is not None and since.timestamp() + min_ready_seconds <= now_ts
