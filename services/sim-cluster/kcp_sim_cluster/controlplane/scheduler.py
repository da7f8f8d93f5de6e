"""The scheduler of each simulated cluster: binds pending pods to nodes where they fit.

One work item per logical cluster: a pass takes every pending pod (highest priority, then oldest
first), places each with `fit.schedule` against the nodes' allocatable minus what their pods
request, and binds the placed ones concurrently (a binding writes spec.nodeName and PodScheduled,
as kube's binding subresource does). Pods placed but not yet seen bound by the informer are
"assumed", as in kube's scheduler cache, so a second pass neither moves nor double-counts them.
A pod that fits nowhere gets PodScheduled=False, reason Unschedulable, and a FailedScheduling
event; it is tried again whenever a node or a bound pod changes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane import fit
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL, WARNING
from kcp_sim_cluster.controlplane.informer import cluster_of, key_of
from kcp_sim_cluster.controlplane.objects import Obj, get_condition, set_condition
from kcp_sim_cluster.controlplane.podutil import is_gated, is_pending_schedule, is_terminal, node_name
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

log = structlog.get_logger("sim.scheduler")

COMPONENT = "default-scheduler"
BIND_CONCURRENCY = 64
ALL = "*"


def node_index_value(cluster: str, node: str) -> str:
    return f"{cluster}/{node}"


class Scheduler(SimController):
    name = "sim-scheduler"
    needs = ("pods", "nodes")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.pending: dict[str, dict[ObjectKey, None]] = {}
        self.assumed: dict[ObjectKey, tuple[str, str, fit.Requests]] = {}  # pod -> (uid, node, requests)
        self.requests: dict[str, fit.Requests] = {}  # pod uid -> its requests (a pod's resources do not change)
        self._binds = asyncio.Semaphore(BIND_CONCURRENCY)

    def wire(self) -> None:
        self.sim.informer("pods").add_handler(self._on_pod)
        self.sim.informer("nodes").add_handler(self._on_node)

    def initial_keys(self) -> list[ObjectKey]:
        return [ObjectKey(c, "", ALL) for c in self.sim.options.clusters]

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        if old is None or new is None or old.get("spec") != new.get("spec") or \
                (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"):
            self.controller.enqueue(ObjectKey(cluster_of(obj), "", ALL))

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        key, cluster = key_of(obj), cluster_of(obj)
        pending = self.pending.setdefault(cluster, {})
        if new is not None and is_pending_schedule(new):
            if key not in pending or (old is not None and is_gated(old) and not is_gated(new)):
                pending[key] = None
                self.controller.enqueue(ObjectKey(cluster, "", ALL))
            return
        pending.pop(key, None)
        if new is None:
            self.requests.pop(str(obj["metadata"].get("uid", "")), None)
        if new is None or node_name(new):
            assumed = self.assumed.get(key)
            if assumed is not None and (new is None or assumed[0] == new["metadata"].get("uid")):
                del self.assumed[key]
        freed = old is not None and node_name(old) and not is_terminal(old) and (new is None or is_terminal(new))
        if freed and pending:
            self.controller.enqueue(ObjectKey(cluster, "", ALL))

    def _node_states(self, cluster: str) -> list[fit.NodeState]:
        pods = self.sim.informer("pods")
        states = {}
        for node_obj in self.sim.informer("nodes").in_cluster(cluster):
            state = fit.NodeState.from_node(node_obj)
            for pod in pods.by_index("node", node_index_value(cluster, state.name)):
                if not is_terminal(pod):
                    state.add(self._requests(pod))
            states[state.name] = state
        for key, (_, target, requests) in self.assumed.items():
            if key.cluster == cluster and target in states:
                assumed = pods.get(key)
                if assumed is None or not node_name(assumed):  # not counted above yet
                    states[target].add(requests)
        return sorted(states.values(), key=lambda s: s.name)

    def _requests(self, pod: Obj) -> fit.Requests:
        uid = str(pod["metadata"].get("uid", ""))
        found = self.requests.get(uid)
        if found is None:
            found = self.requests[uid] = fit.pod_requests(pod)
        return found

    async def reconcile(self, key: ObjectKey) -> Result | None:
        cluster = key.cluster
        pods = self.sim.informer("pods")
        waiting = [p for k in list(self.pending.get(cluster, {})) if k not in self.assumed
                   and (p := pods.get(k)) is not None and is_pending_schedule(p)]
        if not waiting:
            return None
        waiting.sort(key=lambda p: (-int((p.get("spec") or {}).get("priority") or 0),
                                    p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        nodes = self._node_states(cluster)
        by_name = {n.name: n for n in nodes}
        binds = []
        for pod in waiting:
            if is_gated(pod):
                binds.append(self._gated(pod))
                continue
            requests = self._requests(pod)
            placement = fit.schedule(pod, nodes, requests)
            if placement.node is None:
                binds.append(self._unschedulable(pod, placement.message))
                continue
            by_name[placement.node].add(requests)
            self.assumed[key_of(pod)] = (pod["metadata"]["uid"], placement.node, requests)
            binds.append(self._bind(pod, placement.node))
        await asyncio.gather(*binds)
        return None

    async def _bind(self, pod: Obj, node: str) -> None:
        def assign(current: dict[str, Any]) -> bool:
            if (current.get("spec") or {}).get("nodeName"):
                return False
            current["spec"]["nodeName"] = node
            set_condition(current.setdefault("status", {}), "PodScheduled", "True")
            _probe_time(current["status"], "PodScheduled")
            return True

        async with self._binds:
            try:
                bound = await self.sim.write_status(self.pod_res, pod, assign)
            except Exception:
                self.assumed.pop(key_of(pod), None)
                raise
        if bound is None:
            self.assumed.pop(key_of(pod), None)
            return
        meta = pod["metadata"]
        self.sim.recorder.record(bound, NORMAL, "Scheduled",
                                 f"Successfully assigned {meta.get('namespace', '')}/{meta['name']} to {node}",
                                 component=COMPONENT)

    async def _gated(self, pod: Obj) -> None:
        """kube's SchedulingGated condition on a pod whose scheduling gates are not all removed."""
        cond = get_condition(pod.get("status"), "PodScheduled")
        if cond and cond.get("reason") == "SchedulingGated":
            return

        def mark(current: dict[str, Any]) -> bool:
            if (current.get("spec") or {}).get("nodeName") or not is_gated(current):
                return False
            status = current.setdefault("status", {})
            status.setdefault("phase", "Pending")
            changed = set_condition(status, "PodScheduled", "False", "SchedulingGated",
                                    "Scheduling is blocked due to non-empty scheduling gates")
            _probe_time(status, "PodScheduled")
            return changed

        async with self._binds:
            await self.sim.write_status(self.pod_res, pod, mark)

    async def _unschedulable(self, pod: Obj, message: str) -> None:
        self.sim.recorder.record(pod, WARNING, "FailedScheduling", message, component=COMPONENT)
        cond = get_condition(pod.get("status"), "PodScheduled")
        if cond and cond.get("status") == "False" and cond.get("message") == message:
            return

        def mark(current: dict[str, Any]) -> bool:
            if (current.get("spec") or {}).get("nodeName"):
                return False
            status = current.setdefault("status", {})
            status.setdefault("phase", "Pending")
            changed = set_condition(status, "PodScheduled", "False", "Unschedulable", message)
            _probe_time(status, "PodScheduled")
            return changed

        async with self._binds:
            await self.sim.write_status(self.pod_res, pod, mark)


def _probe_time(status: dict[str, Any], type_: str) -> None:
    """kube writes lastProbeTime: null on the scheduler's conditions."""
    cond = get_condition(status, type_)
    if cond is not None:
        cond["lastProbeTime"] = None  # type: ignore[index]


