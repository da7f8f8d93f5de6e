"""The horizontal pod autoscaler's decisions, as kube's: the ratio of usage to target over ready pods,
the 0.1 tolerance, min/max replicas and the scale-up limit, the scale-down stabilization window (on an
injected clock), behavior policies, and what it says when there are no metrics."""

from __future__ import annotations

from typing import Any

from kcp_sim_cluster.controlplane import podmetrics
from kcp_sim_cluster.controlplane.autoscaler import Autoscaler, Decision
from kcp_sim_cluster.controlplane.replicacalc import resource_replicas
from kcpcommon.clock import FakeClock

KEY = "default/web"


def pod(name: str, usage: str | None = None, *, request: str | None = "200m", ready: bool = True,
        phase: str = "Running") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "web"}}
    if usage is not None:
        meta["annotations"] = {"sim.kcp.io/cpu-usage": usage}
    resources = {"requests": {"cpu": request}} if request else {}
    return {"metadata": meta, "spec": {"nodeName": "sim-node-1", "containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def hpa(*, low: int = 1, high: int = 10, target: int = 50, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default"},
            "spec": {"minReplicas": low, "maxReplicas": high, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                             "averageUtilization": target}}}],
                **spec}}


def conditions(decision: Decision) -> dict[str, tuple[str, str]]:
    return {type_: (status, reason) for type_, status, reason, _ in decision.conditions}


def test_usage_above_target_scales_up_by_the_ratio() -> None:
    decision = Autoscaler(FakeClock()).decide(KEY, hpa(), 2, [pod("a", "100%"), pod("b", "100%")])
    assert (decision.desired, decision.rescale) == (4, True)
    assert decision.reason == "cpu resource utilization (percentage of request) above target"
    assert decision.metrics == [{"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageValue": "200m", "averageUtilization": 100}}}]
    assert conditions(decision) == {"AbleToScale": ("True", "SucceededRescale"),
                                    "ScalingActive": ("True", "ValidMetricFound"),
                                    "ScalingLimited": ("False", "DesiredWithinRange")}


def test_a_ratio_within_the_tolerance_changes_nothing() -> None:
    decision = Autoscaler(FakeClock()).decide(KEY, hpa(), 2, [pod("a", "54%"), pod("b", "54%")])
    assert (decision.desired, decision.rescale) == (2, False)
    assert conditions(decision)["AbleToScale"] == ("True", "ReadyForNewScale")
    outside = Autoscaler(FakeClock()).decide(KEY, hpa(), 2, [pod("a", "56%"), pod("b", "56%")])
    assert outside.desired == 3


def test_a_scale_down_waits_for_the_stabilization_window() -> None:
    clock = FakeClock()
    autoscaler = Autoscaler(clock, downscale_stabilization=300)
    idle = [pod(n, "10%") for n in "abcd"]
    held = autoscaler.decide(KEY, hpa(), 4, idle)
    assert (held.desired, held.rescale) == (4, False)  # the first sync remembers 4 replicas
    assert conditions(held)["AbleToScale"] == ("True", "ScaleDownStabilized")
    clock.advance(299)
    assert autoscaler.decide(KEY, hpa(), 4, idle).desired == 4
    clock.advance(2)
    down = autoscaler.decide(KEY, hpa(), 4, idle)
    assert (down.desired, down.reason) == (1, "All metrics below target")


def test_min_and_max_bound_the_count_and_say_so() -> None:
    busy = [pod(n, "400%") for n in "abc"]
    capped = Autoscaler(FakeClock()).decide(KEY, hpa(high=5), 3, busy)
    assert capped.desired == 5
    assert conditions(capped)["ScalingLimited"] == ("True", "TooManyReplicas")
    clock = FakeClock()
    autoscaler = Autoscaler(clock, downscale_stabilization=10)
    autoscaler.decide(KEY, hpa(low=3), 3, [pod("a", "1%")] * 3)
    clock.advance(11)
    floored = autoscaler.decide(KEY, hpa(low=3), 3, [pod("a", "1%")] * 3)
    assert (floored.desired, conditions(floored)["ScalingLimited"]) == (3, ("True", "TooFewReplicas"))
    below = Autoscaler(FakeClock()).decide(KEY, hpa(low=2), 1, [pod("a", "10%")])
    assert (below.desired, below.reason) == (2, "Current number of replicas below Spec.MinReplicas")


def test_a_scale_up_goes_at_most_to_twice_the_replicas_or_four() -> None:
    limited = Autoscaler(FakeClock()).decide(KEY, hpa(high=50), 1, [pod("a", "1000%")])
    assert limited.desired == 4
    assert conditions(limited)["ScalingLimited"] == ("True", "ScaleUpLimit")
    assert Autoscaler(FakeClock()).decide(KEY, hpa(high=50), 5, [pod(n, "1000%") for n in "abcde"]).desired == 10


def test_behavior_policies_limit_the_rate() -> None:
    clock = FakeClock()
    autoscaler = Autoscaler(clock)
    slow = {"scaleDown": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                          "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]}}
    idle = [pod(n, "1%") for n in "abcde"]
    first = autoscaler.decide(KEY, hpa(behavior=slow), 5, idle)
    assert first.desired == 4
    assert conditions(first)["ScalingLimited"] == ("True", "ScaleDownLimit")
    clock.advance(30)
    assert autoscaler.decide(KEY, hpa(behavior=slow), 4, idle[:4]).desired == 4  # one pod per minute
    clock.advance(31)
    assert autoscaler.decide(KEY, hpa(behavior=slow), 4, idle[:4]).desired == 3


def test_without_metrics_nothing_scales_and_kube_says_why() -> None:
    pending = Autoscaler(FakeClock()).decide(KEY, hpa(), 2, [pod("a", phase="Pending"), pod("b", phase="Pending")])
    assert (pending.desired, pending.rescale) == (2, False)
    assert conditions(pending)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    assert [reason for _, reason, _ in pending.events] == ["FailedGetResourceMetric", "FailedComputeMetricsReplicas"]
    assert pending.events[0][2] == ("failed to get cpu utilization: unable to get metrics for resource cpu: no "
                                    "metrics returned from resource metrics API")
    assert pending.metrics == [{"type": ""}]
    unrequested = Autoscaler(FakeClock()).decide(KEY, hpa(), 1, [pod("a", request=None)])
    assert "missing request for cpu in container c of Pod a" in unrequested.events[0][2]


def test_a_target_scaled_to_zero_disables_scaling() -> None:
    decision = Autoscaler(FakeClock()).decide(KEY, hpa(), 0, [])
    assert (decision.desired, decision.rescale) == (0, False)
    assert conditions(decision)["ScalingActive"] == ("False", "ScalingDisabled")


def test_unready_pods_count_as_idle_when_scaling_up() -> None:
    pods = [pod("a", "100%"), pod("b", "100%", ready=False)]
    # ready pod alone: ratio 2 -> 4 over 2 counted pods; with b at 0%: ratio 1 -> no change
    assert resource_replicas(2, pods, "cpu", utilization=50).replicas == 2
    assert resource_replicas(2, [pod("a", "100%"), pod("b", "100%")], "cpu", utilization=50).replicas == 4


def test_usage_is_declared_by_annotation_or_defaults_to_idle() -> None:
    assert podmetrics.usage(pod("a", "750m"), "cpu") == 750
    assert podmetrics.usage(pod("a", "90%"), "cpu") == 180
    assert podmetrics.usage(pod("a"), "cpu") == 200 * podmetrics.DEFAULT_USAGE_PERCENT // 100
    assert podmetrics.usage(pod("a", phase="Pending"), "cpu") is None
