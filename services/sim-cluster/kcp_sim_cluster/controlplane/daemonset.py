"""The DaemonSet controller: one pod on every node the pod may run on, bound directly.

A node qualifies when the pod tolerates its taints and matches its nodeSelector (daemon pods also
get kube's daemon tolerations: not-ready, unreachable, pressure and unschedulable). Pods are
created already bound (spec.nodeName), as the DaemonSet controller did before it handed binding to
the scheduler. A template change replaces pods node by node within maxUnavailable.
"""

from __future__ import annotations

import time
from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane import fit
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.events import NORMAL
from kcp_sim_cluster.controlplane.expectations import Expectations
from kcp_sim_cluster.controlplane.hashing import pod_template_hash
from kcp_sim_cluster.controlplane.history import sync_history
from kcp_sim_cluster.controlplane.informer import cluster_of
from kcp_sim_cluster.controlplane.objects import Obj, copy_obj, is_deleting, labels
from kcp_sim_cluster.controlplane.podutil import is_available, is_ready, is_terminal, node_name
from kcp_sim_cluster.controlplane.replicaset import pod_from_template
from kcp_sim_cluster.controlplane.rollout import scaled_value
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey

COMPONENT = "daemonset-controller"
REVISION_LABEL = "controller-revision-hash"
DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def daemon_pod(ds: Obj, revision: str, node: str) -> dict[str, Any]:
    name = ds["metadata"]["name"]
    pod = pod_from_template(ds, (ds.get("spec") or {}).get("template") or {}, generate_name=f"{name}-")
    pod["metadata"]["labels"][REVISION_LABEL] = revision
    spec = pod["spec"]
    tolerations = list(spec.get("tolerations") or [])
    for tol in DAEMON_TOLERATIONS:
        if not any(t.get("key") == tol["key"] and t.get("effect") == tol["effect"] for t in tolerations):
            tolerations.append(dict(tol))
    spec["tolerations"] = tolerations
    spec["nodeName"] = node
    return pod


class DaemonSetController(SimController):
    name = "sim-daemonset"
    needs = ("daemonsets", "pods", "nodes")
    optional = ("controllerrevisions",)
    workers = 2

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.ds_res: Resource = sim.resource("daemonsets")  # type: ignore[assignment]
        self.pod_res: Resource = sim.resource("pods")  # type: ignore[assignment]
        self.revision_res = sim.resource("controllerrevisions") if "controllerrevisions" in sim.informers else None
        self.expectations = Expectations()

    def wire(self) -> None:
        self.watch_owned("daemonsets", "pods", self.expectations)
        self.sim.informer("nodes").add_handler(self._on_node)

    def _on_node(self, old: Obj | None, new: Obj | None) -> None:
        node = new if new is not None else old
        assert node is not None
        if old is not None and new is not None and old.get("spec") == new.get("spec") and \
                (old["metadata"].get("labels") == new["metadata"].get("labels")):
            return
        for ds in self.sim.informer("daemonsets").in_cluster(cluster_of(node)):
            self.enqueue(ds)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        ds = self.sim.informer("daemonsets").get(key)
        if ds is None:
            self.expectations.forget(key)
            return None
        revision = pod_template_hash((ds.get("spec") or {}).get("template") or {})
        probe = daemon_pod(ds, revision, "")
        eligible = []
        for node in self.sim.informer("nodes").in_cluster(key.cluster):
            state = fit.NodeState.from_node(node)
            state.max_pods = 1 << 30  # daemon pods are placed whatever else runs there
            if not fit.check(probe, fit.Requests(), state).reasons:
                eligible.append(state.name)
        pods_by_node: dict[str, list[Obj]] = {}
        for pod in self.sim.informer("pods").by_index("owner", ds["metadata"]["uid"]):
            if not is_terminal(pod):
                pods_by_node.setdefault(node_name(pod), []).append(pod)
        if not is_deleting(ds) and self.revision_res is not None:
            in_use = {labels(p).get(REVISION_LABEL, "") for ps in pods_by_node.values() for p in ps}
            await sync_history(self.sim, self.revision_res, ds, (ds.get("spec") or {}).get("template") or {},
                               revision, in_use)
        if not is_deleting(ds) and self.expectations.satisfied(key):
            await self._manage(ds, key, revision, eligible, pods_by_node)
        return await self._status(ds, revision, eligible, pods_by_node)

    async def _manage(self, ds: Obj, key: ObjectKey, revision: str, eligible: list[str],
                      pods_by_node: dict[str, list[Obj]]) -> None:
        missing = [n for n in eligible if not pods_by_node.get(n)]
        self.expectations.expect(key, adds=len(missing))
        for node in missing:
            created = await self.sim.create(self.pod_res, key.cluster, key.namespace, daemon_pod(ds, revision, node))
            if created is None:
                self.expectations.created(key)
                continue
            self.sim.recorder.record(ds, NORMAL, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                                     component=COMPONENT)
        for node, pods in pods_by_node.items():
            surplus = pods if node not in eligible else sorted(
                pods, key=lambda p: p["metadata"].get("creationTimestamp", ""))[1:]
            for pod in surplus:
                if not is_deleting(pod) and await self.sim.delete(self.pod_res, pod):
                    self.sim.recorder.record(ds, NORMAL, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}",
                                             component=COMPONENT)
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        allowed = max(scaled_value((strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1), len(eligible),
                                   round_up=True), 1)
        unavailable = sum(1 for n in eligible if not any(is_ready(p) and not is_deleting(p)
                                                         for p in pods_by_node.get(n, [])))
        for node in eligible:
            if unavailable >= allowed:
                return
            for pod in pods_by_node.get(node, []):
                if labels(pod).get(REVISION_LABEL) != revision and not is_deleting(pod):
                    await self.sim.delete(self.pod_res, pod)
                    unavailable += 1

    async def _status(self, ds: Obj, revision: str, eligible: list[str],
                      pods_by_node: dict[str, list[Obj]]) -> Result | None:
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now_ts = time.time()
        scheduled = [pods_by_node[n][0] for n in eligible if pods_by_node.get(n)]
        available = sum(1 for p in scheduled if is_available(p, min_ready, now_ts))
        status: dict[str, Any] = {
            "observedGeneration": ds["metadata"].get("generation", 1),
            "desiredNumberScheduled": len(eligible), "currentNumberScheduled": len(scheduled),
            "numberMisscheduled": sum(1 for n in pods_by_node if n not in eligible),
            "numberReady": sum(1 for p in scheduled if is_ready(p)), "numberAvailable": available,
            "numberUnavailable": max(len(eligible) - available, 0),
            "updatedNumberScheduled": sum(1 for p in scheduled if labels(p).get(REVISION_LABEL) == revision),
        }
        status = {k: v for k, v in status.items() if v or k in ("desiredNumberScheduled", "currentNumberScheduled",
                                                                "numberMisscheduled", "numberReady",
                                                                "observedGeneration")}

        def update(current: dict[str, Any]) -> bool:
            if current.get("status") == status:
                return False
            current["status"] = copy_obj(status)
            return True

        await self.sim.write_status(self.ds_res, ds, update)
        return None
