"""The kubelets of the simulated nodes: bound pods run, turn Ready, crash or complete.

A pod bound to a simulated node of a Ready node gets, in one status write, phase Running, a pod IP
from its node's CIDR, hostIP, startTime, a running status per container and the conditions
PodReadyToStartContainers, Initialized, ContainersReady, Ready and PodScheduled; Ready turns True
`ready_delay` seconds after the start (in that same write when the delay is 0). Pod-template
annotations steer it: `sim.kcp.io/ready: "false"` keeps it unready; `sim.kcp.io/crash: "true"`
makes its containers crash and restart with kube's back-off (CrashLoopBackOff, restartCount
climbing). A pod that does not restart always (restartPolicy Never or OnFailure, a Job's pods)
completes after `ready_delay`: Succeeded (Failed when it crashes under Never). A deleting pod is
stopped and removed (the kubelet's final delete with grace 0).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import structlog

from kcp_apiserver.embedding import KeyNotFound, Resource, RevisionConflict
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.informer import cluster_of, key_of
from kcp_sim_cluster.controlplane.ipam import NodeIPs
from kcp_sim_cluster.controlplane.nodes import host_ip, node_index, wants_not_ready
from kcp_sim_cluster.controlplane.objects import Obj, annotations_of, get_condition, set_condition
from kcp_sim_cluster.controlplane.podutil import is_terminal, node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.scheduler import node_index_value
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time as rfc3339
from kcpcommon.kubetime import parse_time

log = structlog.get_logger("sim.kubelet")

READY_ANNOTATION = "sim.kcp.io/ready"
CRASH_ANNOTATION = "sim.kcp.io/crash"
COMPONENT = "kubelet"
BACKOFF_INITIAL = 10.0
BACKOFF_CAP = 300.0


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


def _container_id(pod: Obj, name: str, restarts: int) -> str:
    seed = f"{pod['metadata'].get('uid', '')}/{name}/{restarts}".encode()
    return "containerd://" + hashlib.sha256(seed).hexdigest()


def _image_id(image: str) -> str:
    return f"{image.split('@')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


class Kubelet(SimController):
    name = "sim-kubelet"
    needs = ("pods", "nodes")
    workers = 16

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.ips: dict[tuple[str, str], NodeIPs] = {}
        self.started: dict[str, float] = {}  # pod uid -> when its containers started (finer than startTime)

    def wire(self) -> None:
        self.sim.informer("pods").add_handler(self._on_pod)
        self.sim.informer("nodes").add_handler(self._on_node)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self.started.pop(str(old["metadata"].get("uid", "")), None)
            ip = (old.get("status") or {}).get("podIP")
            pool = self.ips.get((cluster_of(old), node_name(old)))
            if ip and pool is not None:
                pool.release(ip)
            return
        if is_terminal(new):
            self.started.pop(str(new["metadata"].get("uid", "")), None)
        elif node_name(new):
            self.enqueue(new)

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        """A node that recovers (or appears) starts the pods bound to it."""
        if new is None or old is None or wants_not_ready(old) == wants_not_ready(new):
            return
        cluster = cluster_of(new)
        for key in self.sim.informer("pods").keys_by_index("node", node_index_value(cluster, new["metadata"]["name"])):
            self.controller.enqueue(key)

    def _pool(self, cluster: str, node: Obj) -> NodeIPs:
        name = node["metadata"]["name"]
        pool = self.ips.get((cluster, name))
        if pool is None:
            cidr = (node.get("spec") or {}).get("podCIDR") or f"10.244.{node_index(name) % 256}.0/24"
            pool = self.ips[(cluster, name)] = NodeIPs(cidr)
            for pod in self.sim.informer("pods").by_index("node", node_index_value(cluster, name)):
                ip = (pod.get("status") or {}).get("podIP")
                if ip:
                    pool.take(ip, key_of(pod))
        return pool

    async def reconcile(self, key: ObjectKey) -> Result | None:
        pod = self.sim.informer("pods").get(key)
        if pod is None or not node_name(pod):
            return None
        node = self.sim.informer("nodes").get(ObjectKey(key.cluster, "", node_name(pod)))
        if node is None or wants_not_ready(node):
            return None  # no kubelet there (or a sick one): nothing happens to the pod
        if pod["metadata"].get("deletionTimestamp"):
            await self._remove(pod)
            return None
        if is_terminal(pod):
            return None
        status = pod.get("status") or {}
        if not status.get("startTime"):
            return await self._start(pod, node)
        return await self._progress(pod)

    async def _remove(self, pod: Obj) -> None:
        """The containers are stopped: the kubelet's final delete (grace 0). Finalizers keep it until removed."""
        if pod["metadata"].get("finalizers"):
            return
        key = self.sim.key(self.pod_res, pod)
        try:
            await self.sim.storage.delete(key, int(pod["metadata"]["resourceVersion"]))
        except (KeyNotFound, RevisionConflict):
            self.controller.enqueue(key_of(pod))  # changed meanwhile: look again (a no-op once gone)

    def _steer(self, pod: Obj) -> tuple[bool, bool]:
        """(may become ready, crashes) from the pod's annotations."""
        notes = annotations_of(pod)
        return notes.get(READY_ANNOTATION) != "false", notes.get(CRASH_ANNOTATION) == "true"

    async def _start(self, pod: Obj, node: Obj) -> Result | None:
        cluster = cluster_of(pod)
        pool = self._pool(cluster, node)
        started = time.time()
        stamp = rfc3339()
        delay = self.sim.options.ready_delay
        may_ready, crashes = self._steer(pod)
        ready = may_ready and not crashes and delay <= 0
        ip_holder: list[str] = []

        def start(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            if status.get("startTime") or current["metadata"].get("deletionTimestamp"):
                return False
            ip = status.get("podIP") or (ip_holder[0] if ip_holder else pool.allocate(key_of(current)))
            if ip is None:
                return False
            if not ip_holder:
                ip_holder.append(ip)
            status.update({"phase": "Running", "hostIP": host_ip(node_index(node_name(current))),
                           "hostIPs": [{"ip": host_ip(node_index(node_name(current)))}],
                           "podIP": ip, "podIPs": [{"ip": ip}], "startTime": stamp})
            status.setdefault("qosClass", qos_class(current))
            _init_statuses(current, status, stamp)
            status["containerStatuses"] = [
                _container_status(current, c, stamp, ready=ready, crashing=crashes, restarts=1 if crashes else 0)
                for c in current["spec"].get("containers") or []]
            _conditions(status, stamp, containers_ready=ready)
            return True

        written = await self.sim.write_status(self.pod_res, pod, start)
        if written is None:
            if ip_holder and not (pod.get("status") or {}).get("podIP"):
                pool.release(ip_holder[0])
            return None
        self.started[str(pod["metadata"].get("uid", ""))] = started
        self._started_events(written, crashes)
        if crashes:
            return Result(requeue_after=BACKOFF_INITIAL)
        if not _restarts_always(pod) or (may_ready and not ready):
            return Result(requeue_after=max(delay - (time.time() - started), 0.0) or None)
        return None

    async def _progress(self, pod: Obj) -> Result | None:
        status = pod.get("status") or {}
        started = self.started.get(str(pod["metadata"].get("uid", "")))
        if started is None:  # started before this process: the status's time (to the second) will do
            since = parse_time(status.get("startTime"))
            started = since.timestamp() if since else time.time()
        elapsed = time.time() - started
        delay = self.sim.options.ready_delay
        may_ready, crashes = self._steer(pod)
        if crashes:
            return await self._crash(pod, elapsed)
        if elapsed < delay:
            return Result(requeue_after=delay - elapsed)
        if not _restarts_always(pod):
            await self._complete(pod)
            return None
        want_ready = may_ready
        if all(c.get("ready") == want_ready for c in status.get("containerStatuses") or []) and \
                _condition_is(status, "Ready", want_ready):
            return None
        stamp = rfc3339()

        def ready(current: dict[str, Any]) -> bool:
            st = current.setdefault("status", {})
            if not st.get("startTime"):
                return False
            for cs in st.get("containerStatuses") or []:
                cs["ready"] = want_ready
                cs["started"] = True
            _conditions(st, stamp, containers_ready=want_ready)
            return True

        await self.sim.write_status(self.pod_res, pod, ready)
        return None

    async def _crash(self, pod: Obj, elapsed: float) -> Result | None:
        restarts, wait = crash_restarts(elapsed)
        status = pod.get("status") or {}
        current_restarts = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []),
                               default=0)
        if not _restarts_always(pod) and (pod.get("spec") or {}).get("restartPolicy") == "Never":
            await self._complete(pod, failed=True)
            return None
        if restarts > current_restarts:
            stamp = rfc3339()

            def crash(current: dict[str, Any]) -> bool:
                st = current.setdefault("status", {})
                st["containerStatuses"] = [
                    _container_status(current, c, stamp, ready=False, crashing=True, restarts=restarts)
                    for c in current["spec"].get("containers") or []]
                _conditions(st, stamp, containers_ready=False)
                return True

            written = await self.sim.write_status(self.pod_res, pod, crash)
            if written is not None:
                for c in pod["spec"].get("containers") or []:
                    self.sim.recorder.record(
                        written, WARNING, "BackOff",
                        f"Back-off restarting failed container {c['name']} in pod "
                        f"{pod['metadata']['name']}_{pod['metadata'].get('namespace', '')}"
                        f"({pod['metadata'].get('uid', '')})", component=COMPONENT,
                        host=node_name(pod))
        return Result(requeue_after=max(wait, 0.5))

    async def _complete(self, pod: Obj, *, failed: bool = False) -> None:
        stamp = rfc3339()

        def complete(current: dict[str, Any]) -> bool:
            st = current.setdefault("status", {})
            if st.get("phase") in ("Succeeded", "Failed"):
                return False
            st["phase"] = "Failed" if failed else "Succeeded"
            statuses = []
            for c in current["spec"].get("containers") or []:
                cs = _container_status(current, c, stamp, ready=False, crashing=False, restarts=0)
                cs["started"] = False
                cs["state"] = {"terminated": {"exitCode": 1 if failed else 0,
                                              "reason": "Error" if failed else "Completed",
                                              "startedAt": st.get("startTime", stamp), "finishedAt": stamp,
                                              "containerID": cs["containerID"]}}
                statuses.append(cs)
            st["containerStatuses"] = statuses
            _conditions(st, stamp, containers_ready=False, reason="PodCompleted" if not failed else "PodFailed")
            set_condition(st, "PodReadyToStartContainers", "False", when=stamp)
            return True

        await self.sim.write_status(self.pod_res, pod, complete)

    def _started_events(self, pod: Obj, crashes: bool) -> None:
        host = node_name(pod)
        for c in pod["spec"].get("containers") or []:
            name, image = c["name"], c.get("image", "")
            self.sim.recorder.record(pod, NORMAL, "Pulled", f'Container image "{image}" already present on machine',
                                     component=COMPONENT, host=host)
            self.sim.recorder.record(pod, NORMAL, "Created", f"Created container: {name}", component=COMPONENT,
                                     host=host)
            self.sim.recorder.record(pod, NORMAL, "Started", f"Started container {name}", component=COMPONENT,
                                     host=host)


def _restarts_always(pod: Obj) -> bool:
    return ((pod.get("spec") or {}).get("restartPolicy") or "Always") == "Always"


def _condition_is(status: Obj, type_: str, value: bool) -> bool:
    cond = get_condition(status, type_)
    return bool(cond) and cond.get("status") == ("True" if value else "False")  # type: ignore[union-attr]


def _container_status(pod: Obj, container: Obj, stamp: str, *, ready: bool, crashing: bool,
                      restarts: int) -> dict[str, Any]:
    name, image = container["name"], container.get("image", "")
    status: dict[str, Any] = {"name": name, "image": image, "imageID": _image_id(image),
                              "containerID": _container_id(pod, name, restarts), "ready": ready,
                              "started": not crashing, "restartCount": restarts, "lastState": {}}
    if crashing:
        status["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                       "message": f"back-off {int(min(BACKOFF_INITIAL * 2 ** max(restarts - 1, 0), BACKOFF_CAP))}s "
                                                  f"restarting failed container={name} pod={pod['metadata']['name']}_"
                                                  f"{pod['metadata'].get('namespace', '')}({pod['metadata'].get('uid', '')})"}}
        status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": stamp,
                                              "finishedAt": stamp,
                                              "containerID": _container_id(pod, name, restarts - 1)}}
    else:
        status["state"] = {"running": {"startedAt": stamp}}
    return status


def _init_statuses(pod: Obj, status: dict[str, Any], stamp: str) -> None:
    inits = (pod.get("spec") or {}).get("initContainers") or []
    if not inits:
        return
    status["initContainerStatuses"] = [
        {"name": c["name"], "image": c.get("image", ""), "imageID": _image_id(c.get("image", "")),
         "containerID": _container_id(pod, c["name"], 0), "ready": True, "started": False, "restartCount": 0,
         "lastState": {}, "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp,
                                                   "finishedAt": stamp}}}
        for c in inits]


def _conditions(status: dict[str, Any], stamp: str, *, containers_ready: bool, reason: str = "") -> None:
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
    order = {t: i for i, t in enumerate(("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                         "PodScheduled"))}
    status["conditions"].sort(key=lambda c: order.get(c.get("type"), 99))
    for cond in status["conditions"]:
        cond.setdefault("lastProbeTime", None)
