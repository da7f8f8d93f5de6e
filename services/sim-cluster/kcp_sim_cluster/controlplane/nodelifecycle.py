"""The node lifecycle controller: a NotReady node is tainted, its pods turn unready, then are evicted.

When a node's Ready condition is not True, it gets kube's `node.kubernetes.io/not-ready` taints
(NoSchedule, so the scheduler avoids it, and NoExecute), its pods get Ready=False (kube's
MarkPodsNotReady) and a NodeNotReady event, and each pod is deleted once it has tolerated the
NoExecute taint for its toleration's seconds (kube's taint-based eviction), so its controller
recreates it elsewhere. The API server stamps every pod with kube's default 300 s toleration; that
default is read as `--eviction-toleration`, so a test can shorten it. A node Ready again loses the
taints and the kubelet makes its pods Ready again.

A Node whose kubelet never posted a status (one made by hand, as kube's own test harness does) gets
kube's Unknown conditions (NodeStatusNeverUpdated) once `--node-startup-grace-period` has passed since
its creation, and so the unreachable taints.
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.informer import cluster_of
from kcp_sim_cluster.controlplane.objects import Obj, get_condition, set_condition
from kcp_sim_cluster.controlplane.podutil import is_terminal
from kcp_sim_cluster.controlplane.runtime import Sim
from kcp_sim_cluster.controlplane.scheduler import node_index_value
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time as rfc3339
from kcpcommon.kubetime import parse_time

log = structlog.get_logger("sim.nodelifecycle")

COMPONENT = "node-controller"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
CONDITION_TAINTS = (NOT_READY_TAINT, UNSCHEDULABLE_TAINT, UNREACHABLE_TAINT)
DEFAULT_TOLERATION_SECONDS = 300  # what the API server's DefaultTolerationSeconds stamps on pods
HEALTH_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")  # kube leaves NetworkUnavailable


def toleration_seconds(pod: Obj, default: float, taint: str = "node.kubernetes.io/not-ready") -> float | None:
    """How long the pod stays on a node with this NoExecute taint; None: for ever."""
    best: float | None = default
    found = False
    for tol in (pod.get("spec") or {}).get("tolerations") or []:
        if tol.get("effect") not in (None, "", "NoExecute"):
            continue
        if tol.get("key") not in (None, "", taint):
            continue
        if not tol.get("key") and tol.get("operator") != "Exists":
            continue
        seconds = tol.get("tolerationSeconds")
        if seconds is None:
            return None
        value = default if int(seconds) == DEFAULT_TOLERATION_SECONDS else float(seconds)
        best = value if not found else max(best or 0, value)
        found = True
    return best


def sickness(node: Obj) -> str:
    """The taint kube gives the node for its Ready condition: "" (Ready, or not reporting yet, as kube's
    grace), not-ready (Ready=False) or unreachable (Ready=Unknown: the kubelet stopped reporting)."""
    cond = get_condition(node.get("status"), "Ready")
    if cond is None or cond.get("status") == "True":
        return ""
    return UNREACHABLE_TAINT if cond.get("status") == "Unknown" else NOT_READY_TAINT


def never_updated(node: dict[str, Any]) -> bool:
    """kube's node lifecycle controller on a node whose kubelet never posted status: each health condition
    it lacks is added as Unknown, its last heartbeat the node's creation. True when anything was added."""
    status = node.setdefault("status", {})
    created = node["metadata"].get("creationTimestamp")
    added = False
    for type_ in HEALTH_CONDITIONS:
        if get_condition(status, type_) is None:
            set_condition(status, type_, "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")
            if created:
                status["conditions"][-1]["lastHeartbeatTime"] = created
            added = True
    return added


def node_ready(node: Obj) -> bool:
    return not sickness(node)


def _taints(sick: str, current: list[dict[str, Any]], *, cordoned: bool = False) -> list[dict[str, Any]]:
    """The node's taints with kube's condition taints brought in line: `sick` (not-ready or unreachable,
    "" for none) as NoSchedule and NoExecute, unschedulable (NoSchedule) while cordoned; other taints
    untouched, and existing ones kept as they are (their timeAdded too)."""
    key = sick
    kept = [t for t in current if t.get("key") not in CONDITION_TAINTS]
    existing = {(t.get("key"), t.get("effect")): t for t in current}
    if cordoned:
        kept.append(existing.get((UNSCHEDULABLE_TAINT, "NoSchedule"))
                    or {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": rfc3339()})
    if not key:
        return kept
    return [*kept, existing.get((key, "NoSchedule")) or {"key": key, "effect": "NoSchedule"},
            existing.get((key, "NoExecute")) or {"key": key, "effect": "NoExecute", "timeAdded": rfc3339()}]


def sickness_of(taints: list[dict[str, Any]]) -> str:
    """Which condition taint the node carried ("" for none)."""
    return next((str(t["key"]) for t in taints if t.get("key") in (NOT_READY_TAINT, UNREACHABLE_TAINT)), "")


class NodeLifecycleController(SimController):
    name = "sim-nodelifecycle"
    needs = ("nodes", "pods")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.node_res: Resource = sim.resource("nodes")  # type: ignore[assignment]
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("nodes").add_handler(self._on_node)
        self.sim.informer("pods").add_handler(self._on_pod)

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (old is None or sickness(old) != sickness(new)
                                or (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints")
                                or (old.get("spec") or {}).get("unschedulable")
                                != (new.get("spec") or {}).get("unschedulable")):
            self.enqueue(new)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        """A pod arriving on a NotReady node needs marking too."""
        if new is None or not (new.get("spec") or {}).get("nodeName"):
            return
        if old is not None and (old.get("spec") or {}).get("nodeName"):
            return
        node = self.sim.informer("nodes").get(ObjectKey(cluster_of(new), "", new["spec"]["nodeName"]))
        if node is not None and not node_ready(node):
            self.enqueue(node)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        node = self.sim.informer("nodes").get(key)
        if node is None:
            return None
        if get_condition(node.get("status"), "Ready") is None:
            return await self._never_updated(node)
        sick = sickness(node)
        taints = list((node.get("spec") or {}).get("taints") or [])
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        wanted = _taints(sick, taints, cordoned=cordoned)
        if wanted != taints:
            def taint(current: dict[str, Any]) -> None:
                spec = current.setdefault("spec", {})
                spec["taints"] = _taints(sick, list(spec.get("taints") or []),
                                         cordoned=bool(spec.get("unschedulable")))
                if not spec["taints"]:
                    del spec["taints"]

            node = await self.sim.patch(self.node_res, node, taint) or node
        if wanted != taints and bool(sick) != bool(sickness_of(taints)):
            word = "NodeNotReady" if sick else "NodeReady"
            self.sim.recorder.record(node, NORMAL, word, f"Node {key.name} status is now: {word}", component=COMPONENT)
        if not sick:
            return None
        since = next((parse_time(t.get("timeAdded")) for t in wanted
                      if t.get("key") == sick and t.get("effect") == "NoExecute"), None)
        tainted_at = since.timestamp() if since else time.time()
        next_check: float | None = None
        for pod in self.sim.informer("pods").by_index("node", node_index_value(key.cluster, key.name)):
            if is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
                continue
            await self._mark_not_ready(pod)
            seconds = toleration_seconds(pod, self.sim.options.eviction_toleration, sick)
            if seconds is None:
                continue
            left = tainted_at + seconds - time.time()
            if left <= 0:
                if await self.sim.delete(self.pod_res, pod):
                    self.sim.recorder.record(pod, NORMAL, "TaintManagerEviction",
                                             f"Marking for deletion Pod {pod['metadata'].get('namespace', '')}/"
                                             f"{pod['metadata']['name']}", component="taint-eviction-controller")
            else:
                next_check = left if next_check is None else min(next_check, left)
        return Result(requeue_after=next_check + 0.1) if next_check is not None else None

    async def _never_updated(self, node: Obj) -> Result | None:
        """Unknown conditions once the startup grace period since the node's creation has passed."""
        created = parse_time(node["metadata"].get("creationTimestamp"))
        left = (created.timestamp() if created else 0) + self.sim.options.node_startup_grace_period - time.time()
        if left > 0:
            return Result(requeue_after=left + 0.1)
        await self.sim.write_status(self.node_res, node, never_updated)
        return None  # the informer's update brings the node back for its taints

    async def _mark_not_ready(self, pod: Obj) -> None:
        cond = get_condition(pod.get("status"), "Ready")
        if cond is not None and cond.get("status") == "False":
            return

        def mark(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            return set_condition(status, "Ready", "False")

        if await self.sim.write_status(self.pod_res, pod, mark) is not None:
            self.sim.recorder.record(pod, WARNING, "NodeNotReady", "Node is not ready", component=COMPONENT)
