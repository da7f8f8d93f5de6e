"""The horizontal pod autoscaler: every `--horizontal-pod-autoscaler-sync-period` (kube's 15 s) each HPA
reads its target's scale (Deployments, ReplicaSets, StatefulSets, ReplicationControllers), the simulated
usage of the target's pods (podmetrics.py), decides as kube does (autoscaler.py), writes the new replica
count to the target and its status (currentReplicas, desiredReplicas, currentMetrics, lastScaleTime,
conditions), with kube's SuccessfulRescale and failure Events.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import LabelSelector, Resource
from kcp_sim_cluster.controlplane.autoscaler import Autoscaler, Decision
from kcp_sim_cluster.controlplane.base import SimController
from kcp_sim_cluster.controlplane.claims import selector_of
from kcp_sim_cluster.controlplane.informer import index_value
from kcp_sim_cluster.controlplane.objects import Obj, labels, set_condition
from kcp_sim_cluster.controlplane.runtime import Sim
from kcpcommon.clock import Clock, RealClock
from kcpcommon.controller import Result
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time

COMPONENT = "horizontal-pod-autoscaler"
# a scale target's (group, kind) -> the informer that holds it
TARGETS = {("apps", "Deployment"): "deployments", ("apps", "ReplicaSet"): "replicasets",
           ("apps", "StatefulSet"): "statefulsets", ("", "ReplicationController"): "replicationcontrollers"}


class ScaleError(Exception):
    """The target's scale cannot be read (kube's wording in str())."""


class HorizontalPodAutoscalerController(SimController):
    name = "sim-horizontal-pod-autoscaler"
    needs = ("horizontalpodautoscalers", "pods")
    optional = tuple(TARGETS.values())

    def __init__(self, sim: Sim, clock: Clock | None = None) -> None:
        super().__init__(sim)
        options = sim.options
        self.sync_period = options.hpa_sync_period
        self.autoscaler = Autoscaler(clock or RealClock(), downscale_stabilization=options.hpa_downscale_stabilization,
                                     tolerance=options.hpa_tolerance)
        self.hpa_res: Resource = sim.resource("horizontalpodautoscalers")  # type: ignore[assignment]

    def wire(self) -> None:
        self.sim.informer("horizontalpodautoscalers").add_handler(self._on_hpa)

    def _on_hpa(self, old: Obj | None, new: Obj | None) -> None:
        """A new or respecified HPA syncs now; its own status writes wait for the next period."""
        if new is None or old is None or old.get("spec") != new.get("spec"):
            self.enqueue(new if new is not None else old)

    async def reconcile(self, key: ObjectKey) -> Result | None:
        hpa = self.sim.informer("horizontalpodautoscalers").get(key)
        if hpa is None:
            self.autoscaler.forget(key)
            return None
        try:
            res, target = self._target(key, hpa)
        except ScaleError as exc:
            await self._failed_get_scale(hpa, str(exc))
            return Result(requeue_after=self.sync_period)
        current = int((target.get("spec") or {}).get("replicas", 1))
        decision = self.autoscaler.decide(key, hpa, current, self._pods(key, target))
        if decision.rescale:
            desired = decision.desired

            def scale(obj: dict[str, Any]) -> None:
                obj.setdefault("spec", {})["replicas"] = desired

            await self.sim.patch(res, target, scale)
            self._event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {decision.reason}")
        for type_, reason, message in decision.events:
            self._event(hpa, type_, reason, message)
        await self._write_status(hpa, decision)
        return Result(requeue_after=self.sync_period)

    def _target(self, key: ObjectKey, hpa: Obj) -> tuple[Resource, Obj]:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        name = TARGETS.get((group, kind))
        res = self.sim.resource(name) if name is not None and name in self.sim.informers else None
        if name is None or res is None:
            raise ScaleError(f"unable to determine resource for scale target reference: no matches for kind "
                             f"\"{kind}\" in group \"{group}\"")
        target = self.sim.informer(name).get(ObjectKey(key.cluster, key.namespace, str(ref.get("name", ""))))
        if target is None:
            raise ScaleError(f"{res.group_resource} \"{ref.get('name', '')}\" not found")
        return res, target

    def _pods(self, key: ObjectKey, target: Obj) -> list[Obj]:
        selector: LabelSelector | None = selector_of(target)
        if selector is None:
            return []
        return [p for p in self.sim.informer("pods").by_index("namespace", index_value(key.cluster, key.namespace))
                if selector.matches(labels(p))]

    def _event(self, hpa: Obj, type_: str, reason: str, message: str) -> None:
        self.sim.recorder.record(hpa, type_, reason, message, component=COMPONENT)

    async def _failed_get_scale(self, hpa: Obj, message: str) -> None:
        self._event(hpa, "Warning", "FailedGetScale", message)

        def fill(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            return set_condition(status, "AbleToScale", "False", "FailedGetScale",
                                 f"the HPA controller was unable to get the target's current scale: {message}")

        await self.sim.write_status(self.hpa_res, hpa, fill)

    async def _write_status(self, hpa: Obj, decision: Decision) -> None:
        def fill(current: dict[str, Any]) -> bool:
            status = current.setdefault("status", {})
            before = {k: v for k, v in status.items() if k != "conditions"}
            status["currentReplicas"] = decision.current
            status["desiredReplicas"] = decision.desired
            if decision.metrics:
                status["currentMetrics"] = decision.metrics
            else:
                status.pop("currentMetrics", None)
            if decision.rescale:
                status["lastScaleTime"] = format_time()
            changed = False
            for type_, value, reason, message in decision.conditions:
                changed = set_condition(status, type_, value, reason, message) or changed
            return changed or before != {k: v for k, v in status.items() if k != "conditions"}

        await self.sim.write_status(self.hpa_res, hpa, fill)
