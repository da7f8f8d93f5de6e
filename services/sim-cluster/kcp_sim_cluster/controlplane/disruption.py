"""The disruption controller: each PodDisruptionBudget's status counts the pods it selects.

As kube's: an integer minAvailable expects the selected pods and wants that many healthy; maxUnavailable or a
percentage expects the replicas of the pods' controllers (a Deployment through its ReplicaSet, a
ReplicaSet, a StatefulSet), each counted once, and scales the percentage up. A pod is healthy when Ready
and not being deleted; disruptionsAllowed = currentHealthy - desiredHealthy (never below 0, and 0 when
nothing is expected), and the DisruptionAllowed condition says SufficientPods or InsufficientPods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kcp_apiserver.embedding import LabelSelector, Resource
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.informer import cluster_of, index_value
from kcp_sim_cluster.controlplane.objects import Obj, is_deleting, labels, set_condition
from kcp_sim_cluster.controlplane.podutil import is_ready
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.controller import Result
from kcpcommon.intorstring import scaled_value
from kcpcommon.keys import ObjectKey

CONTROLLERS = {("apps", "ReplicaSet"): "replicasets", ("apps", "StatefulSet"): "statefulsets"}


def _controller_ref(obj: Obj) -> dict[str, Any] | None:
    return next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def selected(budget: Obj, pods: Sequence[Obj]) -> list[Obj]:
    """policy/v1: an empty selector selects every pod of the namespace."""
    selector = LabelSelector.from_dict((budget.get("spec") or {}).get("selector") or {})
    return [p for p in pods if selector.matches(labels(p))]


class DisruptionController(SimController):
    name = "sim-disruption"
    needs = ("poddisruptionbudgets", "pods")
    optional = ("replicasets", "deployments", "statefulsets")

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim)
        self.budget_res: Resource = sim.resource("poddisruptionbudgets")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("poddisruptionbudgets").add_handler(self._on_budget)
        self.sim.informer("pods").add_handler(self._on_pod)

    def _on_budget(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and (old is None or old.get("spec") != new.get("spec")):
            self.enqueue(new)

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        pod = new if new is not None else old
        assert pod is not None
        where = index_value(cluster_of(pod), pod["metadata"].get("namespace", ""))
        for key in self.sim.informer("poddisruptionbudgets").keys_by_index("namespace", where):
            self.enqueue_soon(key)

    def _replicas(self, cluster: str, namespace: str, ref: dict[str, Any]) -> tuple[str, int] | None:
        """The pod's top controller and its replicas (a ReplicaSet's Deployment when it has one)."""
        group = ref.get("apiVersion", "").partition("/")[0] if "/" in ref.get("apiVersion", "") else ""
        name = CONTROLLERS.get((group, ref.get("kind", "")))
        if name is None or name not in self.sim.informers:
            return None
        owner = self.sim.informer(name).get(ObjectKey(cluster, namespace, ref.get("name", "")))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        top = _controller_ref(owner)
        if name == "replicasets" and top is not None and top.get("kind") == "Deployment" \
                and "deployments" in self.sim.informers:
            deployment = self.sim.informer("deployments").get(ObjectKey(cluster, namespace, top.get("name", "")))
            if deployment is not None and deployment["metadata"].get("uid") == top.get("uid"):
                owner = deployment
        return owner["metadata"]["uid"], int((owner.get("spec") or {}).get("replicas", 1))

    def _expected_scale(self, key: ObjectKey, pods: list[Obj]) -> int:
        scales: dict[str, int] = {}
        for pod in pods:
            ref = _controller_ref(pod)
            found = self._replicas(key.cluster, key.namespace, ref) if ref else None
            if found is not None:
                scales[found[0]] = found[1]
        return sum(scales.values())

    async def reconcile(self, key: ObjectKey) -> Result | None:
        budget = self.sim.informer("poddisruptionbudgets").get(key)
        if budget is None:
            return None
        pods = selected(budget, self.sim.informer("pods").by_index("namespace", index_value(key.cluster,
                                                                                              key.namespace)))
        spec = budget.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected = self._expected_scale(key, pods)
            desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected, round_up=True))
        elif isinstance(spec.get("minAvailable"), int):
            expected, desired = len(pods), spec["minAvailable"]
        elif spec.get("minAvailable") is not None:
            expected = self._expected_scale(key, pods)
            desired = scaled_value(spec["minAvailable"], expected, round_up=True)
        else:
            expected, desired = len(pods), 0
        healthy = sum(1 for p in pods if is_ready(p) and not is_deleting(p))
        allowed = max(0, healthy - desired) if expected > 0 else 0
        generation = budget["metadata"].get("generation")

        def fill(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            before = dict(status)
            status.update(currentHealthy=healthy, desiredHealthy=desired, expectedPods=expected,
                          disruptionsAllowed=allowed)
            if generation is not None:
                status["observedGeneration"] = generation
            changed = set_condition(status, "DisruptionAllowed", "True" if allowed > 0 else "False",
                                    "SufficientPods" if allowed > 0 else "InsufficientPods")
            return changed or status != before

        await self.sim.write_status(self.budget_res, budget, fill)
        return None
