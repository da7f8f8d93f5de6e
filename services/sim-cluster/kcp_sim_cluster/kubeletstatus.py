"""What a simulated kubelet writes into a pod's and a node's status, as pure functions over plain dicts.

The in-process kubelets (controlplane/kubelet.py, controlplane/nodes.py) and the node agent (agent/)
both write these, so a pod looks the same whichever of them runs it. Nothing here talks to a server:
the callers decide when, and write the result their own way (storage or the HTTP API).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcp_sim_cluster.conditions import get_condition, set_condition
from kcpcommon.kubetime import parse_time

Obj = Mapping[str, Any]
Mutator = Callable[[dict[str, Any]], bool]  # changes a pod in place; False: nothing to write

READY_ANNOTATION = "sim.kcp.io/ready"
CRASH_ANNOTATION = "sim.kcp.io/crash"
NOT_READY_ANNOTATION = "sim.kcp.io/not-ready"  # on a Node: its kubelet turns unhealthy (Ready=False, no heartbeats)
BACKOFF_INITIAL = 10.0
BACKOFF_CAP = 300.0
NORMAL, WARNING = "Normal", "Warning"
POD_CONDITION_ORDER = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


def steer(pod: Obj) -> tuple[bool, bool]:
    """(may become ready, crashes) from the pod's annotations."""
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    return notes.get(READY_ANNOTATION) != "false", notes.get(CRASH_ANNOTATION) == "true"


def wants_not_ready(node: Obj) -> bool:
    return ((node.get("metadata") or {}).get("annotations") or {}).get(NOT_READY_ANNOTATION) == "true"


def restarts_always(pod: Obj) -> bool:
    return ((pod.get("spec") or {}).get("restartPolicy") or "Always") == "Always"


def crash_restarts(elapsed: float) -> tuple[int, float]:
    """Restarts after `elapsed` seconds of crashing, and seconds until the next (kube's 10 s doubling, 5 min cap)."""
    restarts, at, delay = 1, 0.0, BACKOFF_INITIAL
    while at + delay <= elapsed:
        at += delay
        restarts += 1
        delay = min(delay * 2, BACKOFF_CAP)
    return restarts, at + delay - elapsed


def qos_class(pod: Obj) -> str:
    containers = list((pod.get("spec") or {}).get("containers") or [])
    containers += list((pod.get("spec") or {}).get("initContainers") or [])
    requests_any = limits_all = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            requests_any = True
        for name in ("cpu", "memory"):
            if name not in lim or (name in req and req[name] != lim[name]):
                guaranteed = False
        limits_all = limits_all or bool(lim)
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if guaranteed and limits_all else "Burstable"


def container_id(pod: Obj, name: str, restarts: int) -> str:
    seed = f"{pod['metadata'].get('uid', '')}/{name}/{restarts}".encode()
    return "containerd://" + hashlib.sha256(seed).hexdigest()


def image_id(image: str) -> str:
    return f"{image.split('@')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def condition_is(status: Obj, type_: str, value: bool) -> bool:
    cond = get_condition(status, type_)
    return bool(cond) and cond.get("status") == ("True" if value else "False")  # type: ignore[union-attr]


def is_settled(status: Obj, want_ready: bool) -> bool:
    """Every container's readiness and the Ready condition already say `want_ready`."""
    return all(c.get("ready") == want_ready for c in status.get("containerStatuses") or []) and \
        condition_is(status, "Ready", want_ready)


def container_status(pod: Obj, container: Obj, stamp: str, *, ready: bool, crashing: bool,
                     restarts: int) -> dict[str, Any]:
    name, image = container["name"], container.get("image", "")
    status: dict[str, Any] = {"name": name, "image": image, "imageID": image_id(image),
                              "containerID": container_id(pod, name, restarts), "ready": ready,
                              "started": not crashing, "restartCount": restarts, "lastState": {}}
    if crashing:
        status["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                       "message": f"back-off {int(min(BACKOFF_INITIAL * 2 ** max(restarts - 1, 0), BACKOFF_CAP))}s "
                                                  f"restarting failed container={name} pod={pod['metadata']['name']}_"
                                                  f"{pod['metadata'].get('namespace', '')}({pod['metadata'].get('uid', '')})"}}
        status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": stamp,
                                              "finishedAt": stamp,
                                              "containerID": container_id(pod, name, restarts - 1)}}
    else:
        status["state"] = {"running": {"startedAt": stamp}}
    return status


def init_statuses(pod: Obj, status: dict[str, Any], stamp: str) -> None:
    inits = (pod.get("spec") or {}).get("initContainers") or []
    if not inits:
        return
    status["initContainerStatuses"] = [
        {"name": c["name"], "image": c.get("image", ""), "imageID": image_id(c.get("image", "")),
         "containerID": container_id(pod, c["name"], 0), "ready": True, "started": False, "restartCount": 0,
         "lastState": {}, "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp,
                                                   "finishedAt": stamp}}}
        for c in inits]


def pod_conditions(status: dict[str, Any], stamp: str, *, containers_ready: bool, reason: str = "") -> None:
    """The five pod conditions, in kube's order; Ready follows the containers."""
    set_condition(status, "PodReadyToStartContainers", "True", when=stamp)
    set_condition(status, "Initialized", "True", when=stamp)
    if containers_ready:
        set_condition(status, "Ready", "True", when=stamp)
        set_condition(status, "ContainersReady", "True", when=stamp)
    else:
        why = reason or "ContainersNotReady"
        names = ",".join(cs["name"] for cs in status.get("containerStatuses") or [] if not cs.get("ready"))
        message = "" if reason else f"containers with unready status: [{names}]"
        set_condition(status, "Ready", "False", why, message, when=stamp)
        set_condition(status, "ContainersReady", "False", why, message, when=stamp)
    set_condition(status, "PodScheduled", "True", when=stamp)
    order = {t: i for i, t in enumerate(POD_CONDITION_ORDER)}
    status["conditions"].sort(key=lambda c: order.get(c.get("type"), 99))
    for cond in status["conditions"]:
        cond.setdefault("lastProbeTime", None)


def mark_running(pod: dict[str, Any], *, pod_ip: str, host_ip: str, stamp: str, ready: bool, crashes: bool) -> None:
    """The status of a pod whose containers just started (crashing at once when `crashes`)."""
    status = pod.setdefault("status", {})
    status.update({"phase": "Running", "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
                   "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": stamp})
    status.setdefault("qosClass", qos_class(pod))
    init_statuses(pod, status, stamp)
    status["containerStatuses"] = [
        container_status(pod, c, stamp, ready=ready, crashing=crashes, restarts=1 if crashes else 0)
        for c in pod["spec"].get("containers") or []]
    pod_conditions(status, stamp, containers_ready=ready)


def mark_ready(pod: dict[str, Any], *, ready: bool, stamp: str) -> None:
    """The running containers' readiness (and the pod's conditions) become `ready`."""
    status = pod.setdefault("status", {})
    for cs in status.get("containerStatuses") or []:
        cs["ready"] = ready
        cs["started"] = True
    pod_conditions(status, stamp, containers_ready=ready)


def mark_crashed(pod: dict[str, Any], *, restarts: int, stamp: str) -> None:
    """Every container crashed `restarts` times and waits in CrashLoopBackOff."""
    status = pod.setdefault("status", {})
    status["containerStatuses"] = [
        container_status(pod, c, stamp, ready=False, crashing=True, restarts=restarts)
        for c in pod["spec"].get("containers") or []]
    pod_conditions(status, stamp, containers_ready=False)


def mark_completed(pod: dict[str, Any], *, failed: bool, stamp: str) -> bool:
    """The containers exited (0: Succeeded, 1: Failed); False if the pod had finished already."""
    status = pod.setdefault("status", {})
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    status["phase"] = "Failed" if failed else "Succeeded"
    statuses = []
    for c in pod["spec"].get("containers") or []:
        cs = container_status(pod, c, stamp, ready=False, crashing=False, restarts=0)
        cs["started"] = False
        cs["state"] = {"terminated": {"exitCode": 1 if failed else 0,
                                      "reason": "Error" if failed else "Completed",
                                      "startedAt": status.get("startTime", stamp), "finishedAt": stamp,
                                      "containerID": cs["containerID"]}}
        statuses.append(cs)
    status["containerStatuses"] = statuses
    pod_conditions(status, stamp, containers_ready=False, reason="PodCompleted" if not failed else "PodFailed")
    set_condition(status, "PodReadyToStartContainers", "False", when=stamp)
    return True


@dataclass(frozen=True)
class Step:
    """What a kubelet does next to a started pod: write `mutate` (None: nothing to write), look again after
    `after` seconds (None: on the pod's next change), and record `events` once the write lands."""

    mutate: Mutator | None = None
    after: float | None = None
    events: Callable[[Obj], list[tuple[str, str, str]]] | None = None


def start_requeue(pod: Obj, *, ready_delay: float, ready: bool, crashes: bool, elapsed: float) -> float | None:
    """When to look at a pod again after starting it: the first crash, Ready or completion after the delay."""
    may_ready, _ = steer(pod)
    if crashes:
        return BACKOFF_INITIAL
    if not restarts_always(pod) or (may_ready and not ready):
        return max(ready_delay - elapsed, 0.0) or None
    return None


def started_at(pod: Obj, started: Mapping[str, float]) -> float:
    """When the pod's containers started: as this kubelet recorded it (by uid), else, for a pod started before
    this process, the status's startTime (to the second), else now."""
    recorded = started.get(str(pod["metadata"].get("uid", "")))
    if recorded is not None:
        return recorded
    since = parse_time((pod.get("status") or {}).get("startTime"))
    return since.timestamp() if since else time.time()


def progress(pod: Obj, *, elapsed: float, ready_delay: float, stamp: str) -> Step:
    """The next step for a pod whose containers started `elapsed` seconds ago: crash again (back-off),
    complete (no restart), turn Ready (or stay unready by annotation), or wait for the delay."""
    may_ready, crashes = steer(pod)
    status = pod.get("status") or {}
    if crashes:
        if (pod.get("spec") or {}).get("restartPolicy") == "Never":
            return Step(lambda current: mark_completed(current, failed=True, stamp=stamp))
        restarts, wait = crash_restarts(elapsed)
        current_restarts = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []),
                               default=0)
        if restarts <= current_restarts:
            return Step(after=max(wait, 0.5))

        def crash(current: dict[str, Any]) -> bool:
            mark_crashed(current, restarts=restarts, stamp=stamp)
            return True

        return Step(crash, max(wait, 0.5), backoff_events)
    if elapsed < ready_delay:
        return Step(after=ready_delay - elapsed)
    if not restarts_always(pod):
        return Step(lambda current: mark_completed(current, failed=False, stamp=stamp))
    if is_settled(status, may_ready):
        return Step()

    def ready(current: dict[str, Any]) -> bool:
        if not (current.get("status") or {}).get("startTime"):
            return False
        mark_ready(current, ready=may_ready, stamp=stamp)
        return True

    return Step(ready)


def started_events(pod: Obj) -> list[tuple[str, str, str]]:
    """The kubelet's Events (type, reason, message) for a pod whose containers started."""
    events = []
    for c in pod["spec"].get("containers") or []:
        name, image = c["name"], c.get("image", "")
        events += [(NORMAL, "Pulled", f'Container image "{image}" already present on machine'),
                   (NORMAL, "Created", f"Created container: {name}"), (NORMAL, "Started", f"Started container {name}")]
    return events


def backoff_events(pod: Obj) -> list[tuple[str, str, str]]:
    """The kubelet's Events (type, reason, message) for a pod whose containers crashed again."""
    meta = pod["metadata"]
    return [(WARNING, "BackOff", f"Back-off restarting failed container {c['name']} in pod "
                                 f"{meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})")
            for c in pod["spec"].get("containers") or []]


def node_status(node: dict[str, Any], *, capacity: Mapping[str, str], kubelet_version: str, address: str,
                machine_id: str, ready: bool, stamp: str) -> bool:
    """The status a healthy (or, with `ready` False, unhealthy) kubelet reports; True if it changed."""
    before = node.get("status") or {}
    status: dict[str, Any] = dict(before)
    full = dict(capacity)
    full.setdefault("ephemeral-storage", "100Gi")
    full.setdefault("hugepages-2Mi", "0")
    status["capacity"] = full
    status["allocatable"] = dict(full)
    status["addresses"] = [{"type": "InternalIP", "address": address},
                           {"type": "Hostname", "address": node["metadata"]["name"]}]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {
        "machineID": machine_id, "systemUUID": machine_id, "bootID": machine_id,
        "kernelVersion": "6.1.0-sim", "osImage": "kcp simulated node", "containerRuntimeVersion": "sim://1.0.0",
        "kubeletVersion": kubelet_version, "kubeProxyVersion": kubelet_version,
        "operatingSystem": "linux", "architecture": "amd64",
    }
    status["conditions"] = [dict(c) for c in before.get("conditions") or []]
    for type_, reason, message in (
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")):
        set_condition(status, type_, "False", reason, message, when=stamp)
    if ready:
        set_condition(status, "Ready", "True", "KubeletReady", "kubelet is posting ready status", when=stamp)
    else:
        set_condition(status, "Ready", "False", "KubeletNotReady",
                      "container runtime status check may not have completed yet", when=stamp)
    for cond in status["conditions"]:
        cond.setdefault("lastHeartbeatTime", stamp)
    if status == before:
        return False
    node["status"] = status
    return True


def pre_stop_seconds(pod: Obj) -> float:
    """How long the containers' preStop hooks keep a deleted pod running, serving what it served: kube's `sleep`
    action (`lifecycle.preStop.sleep.seconds`) or an exec of `sleep N` (alone or as `sh -c "sleep N"`), the
    longest of the containers'. Any other hook ends at once here."""
    longest = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        hook = ((container.get("lifecycle") or {}).get("preStop")) or {}
        seconds = (hook.get("sleep") or {}).get("seconds")
        words = [str(w) for w in (hook.get("exec") or {}).get("command") or []]
        if len(words) == 3 and words[0].rsplit("/", 1)[-1] in ("sh", "bash", "ash") and words[1] == "-c":
            words = words[2].split()
        if len(words) == 2 and words[0].rsplit("/", 1)[-1] == "sleep":
            seconds = words[1]
        try:
            longest = max(longest, float(seconds or 0))
        except (TypeError, ValueError):
            continue
    return longest


def stopping_for(pod: Obj, now: float) -> float:
    """Seconds a deleted pod still runs its preStop hooks (0: its containers stop now): within the deletion's grace
    period, counted from when the delete came (the deletionTimestamp less that grace period)."""
    meta = pod.get("metadata") or {}
    deadline = parse_time(meta.get("deletionTimestamp"))
    grace = float(meta.get("deletionGracePeriodSeconds") or 0)
    if deadline is None or grace <= 0:
        return 0.0
    started = deadline.timestamp() - grace
    return max(0.0, started + min(pre_stop_seconds(pod), grace) - now)
