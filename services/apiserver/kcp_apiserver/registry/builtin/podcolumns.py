"""kube's Table columns for Pods (pkg/printers/internalversion's printPod).

The simulated cluster prints its pods with them, and kcp the pods its syncers mirror up from the physical
clusters (a CRD imported from them): there, a last column names the SyncTarget each runs on, read from the
`state.workload.kcp.io/<target>: Upsync` label the syncer puts on its copy.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kcp_apiserver.registry.resource import Column, Obj
from kcp_apiserver.registry.tables import AGE, NAME, human_duration, parse_time
from kcp_apiserver.registry.tables import field_at as _get
from kcp_apiserver.registry.tables import wide_column as _wide

UPSYNC_LABEL_PREFIX, UPSYNC = "state.workload.kcp.io/", "Upsync"


def pod_ready(pod: Obj) -> str:
    statuses = _get(pod, "status", "containerStatuses") or []
    total = len(_get(pod, "spec", "containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _has_condition(pod: Obj, kind: str, status: str = "True") -> bool:
    return any(c.get("type") == kind and c.get("status") == status
               for c in _get(pod, "status", "conditions") or [])


def pod_status(pod: Obj) -> str:
    """kube's printPod reason: the phase, overridden by init containers' and containers' states."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_statuses = status.get("initContainerStatuses") or []
    initializing = False
    for i, container in enumerate(init_statuses):
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            reason = "Init:" + (terminated.get("reason") or (f"Signal:{terminated['signal']}"
                                if terminated.get("signal") else f"ExitCode:{terminated.get('exitCode')}"))
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(_get(pod, 'spec', 'initContainers') or [])}"
        initializing = True
        break
    if not initializing:
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"ExitCode:{terminated.get('exitCode')}")
            elif state.get("running") and container.get("ready"):
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running" if _has_condition(pod, "Ready") else "NotReady"
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason


def pod_restarts(pod: Obj) -> str:
    """Restarts, with how long ago the last one was (`3 (42s ago)`), as kubectl prints them."""
    restarts, last = 0, None
    for container in _get(pod, "status", "containerStatuses") or []:
        restarts += int(container.get("restartCount") or 0)
        finished = _get(container, "lastState", "terminated", "finishedAt")
        when = parse_time(finished)
        if when is not None and (last is None or when > last):
            last = when
    if restarts and last is not None:
        return f"{restarts} ({human_duration((datetime.now(UTC) - last).total_seconds())} ago)"
    return str(restarts)


def _readiness_gates(pod: Obj) -> str:
    gates = _get(pod, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    ready = sum(1 for g in gates if _has_condition(pod, g.get("conditionType", "")))
    return f"{ready}/{len(gates)}"


POD = (
    NAME,
    Column("Ready", "string", pod_ready, "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", pod_status, "The aggregate status of the containers in this pod."),
    Column("Restarts", "string", pod_restarts, "The number of times the containers in this pod have been "
           "restarted and when the last container in this pod has restarted."),
    AGE,
    _wide("IP", lambda p: _get(p, "status", "podIP") or "<none>", "IP address allocated to the pod."),
    _wide("Node", lambda p: _get(p, "spec", "nodeName") or "<none>", "Name of the node the pod is assigned to."),
    _wide("Nominated Node", lambda p: _get(p, "status", "nominatedNodeName") or "<none>",
          "Name of the node where the pod is nominated to run."),
    _wide("Readiness Gates", _readiness_gates, "Readiness gates of the pod."),
)


def upsynced_from(pod: Obj) -> str:
    """The SyncTarget(s) a mirrored pod runs on, from its upsync label."""
    labels = _get(pod, "metadata", "labels") or {}
    return ",".join(sorted(k.removeprefix(UPSYNC_LABEL_PREFIX) for k, v in labels.items()
                           if k.startswith(UPSYNC_LABEL_PREFIX) and v == UPSYNC)) or "<none>"


MIRRORED_POD = (*POD[:5], Column("Cluster", "string", upsynced_from, "The SyncTarget the pod runs on."), *POD[5:])
