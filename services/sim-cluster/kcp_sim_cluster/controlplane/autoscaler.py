"""What kube's horizontal pod autoscaler decides for one HPA on one sync, and what it remembers between syncs.

Given the target's current replicas and its pods: the replicas each metric asks for (the largest wins), then
normalization. Without `spec.behavior`, kube's rules: a scale-down is held to the highest recommendation of
the last `downscale_stabilization` seconds (kube's 300 s flag), a scale-up goes at most to max(2 x current,
4), and min/max replicas bound it. With a behavior, its scale-up and scale-down stabilization windows and
rate policies (Pods / Percent per period, Max, Min or Disabled) do. The conditions AbleToScale,
ScalingActive and ScalingLimited carry kube's reasons and messages. Time is the injected clock's, so table
tests drive the stabilization windows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kcp_sim_cluster.controlplane.replicacalc import DEFAULT_TOLERANCE, MetricError, resource_replicas
from kcpcommon.clock import Clock
from kcpcommon.quantity import format_quantity, try_parse_quantity

Obj = Mapping[str, Any]
SCALE_UP_LIMIT_FACTOR = 2
SCALE_UP_LIMIT_MINIMUM = 4
DEFAULT_DOWNSCALE_STABILIZATION = 300.0
NO_CUSTOM_METRICS = "the simulated cluster serves no custom or external metrics API"
FAILED_REASONS = {"Resource": "FailedGetResourceMetric", "ContainerResource": "FailedGetContainerResourceMetric",
                  "Pods": "FailedGetPodsMetric", "Object": "FailedGetObjectMetric",
                  "External": "FailedGetExternalMetric"}


@dataclass
class Decision:
    """One sync's outcome: the replicas to set, and what the HPA's status and events should say."""

    current: int
    desired: int
    rescale: bool = False
    reason: str = ""  # why it rescales (SuccessfulRescale's `reason:`)
    conditions: list[tuple[str, str, str, str]] = field(default_factory=list)  # (type, status, reason, message)
    metrics: list[dict[str, Any]] | None = None  # status.currentMetrics
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        """Set one condition, in the place it was first set (kube's order: AbleToScale, ScalingActive, ...)."""
        entry = (type_, status, reason, message)
        at = next((i for i, c in enumerate(self.conditions) if c[0] == type_), None)
        if at is None:
            self.conditions.append(entry)
        else:
            self.conditions[at] = entry


@dataclass
class _Memory:
    recommendations: list[tuple[float, int]] = field(default_factory=list)  # (when, replicas)
    scale_ups: list[tuple[float, int]] = field(default_factory=list)  # (when, replicas added)
    scale_downs: list[tuple[float, int]] = field(default_factory=list)


class Autoscaler:
    """kube's HorizontalController's arithmetic and memory (recommendations and scale events per HPA)."""

    def __init__(self, clock: Clock, *, downscale_stabilization: float = DEFAULT_DOWNSCALE_STABILIZATION,
                 tolerance: float = DEFAULT_TOLERANCE) -> None:
        self.clock = clock
        self.downscale_stabilization = downscale_stabilization
        self.tolerance = tolerance
        self._memory: dict[Any, _Memory] = {}

    def forget(self, key: Any) -> None:
        self._memory.pop(key, None)

    def decide(self, key: Any, hpa: Obj, current: int, pods: Sequence[Obj]) -> Decision:
        spec = hpa.get("spec") or {}
        low, high = int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 0)
        memory = self._memory.setdefault(key, _Memory())
        if not memory.recommendations:
            memory.recommendations.append((self.clock.now(), current))
        decision = Decision(current, current)
        decision.condition("AbleToScale", "True", "SucceededGetScale",
                           "the HPA controller was able to get the target's current scale")
        if current == 0 and low != 0:
            decision.desired = 0
            decision.condition("ScalingActive", "False", "ScalingDisabled",
                               "scaling is disabled since the replica count of the target is zero")
            return decision
        if current > high:
            decision.desired, decision.reason = high, "Current number of replicas above Spec.MaxReplicas"
        elif current < low:
            decision.desired, decision.reason = low, "Current number of replicas below Spec.MinReplicas"
        else:
            proposal = self._metrics(decision, spec, current, pods)
            if proposal is None:
                return decision
            replicas, name = proposal
            desired = max(0, replicas)
            if desired > current:
                decision.reason = f"{name} above target"
            elif desired < current:
                decision.reason = "All metrics below target"
            if spec.get("behavior") is None:
                desired = self._normalize(decision, memory, current, desired, low, high)
            else:
                desired = self._normalize_with_behavior(decision, memory, spec["behavior"], current, desired, low,
                                                        high)
            decision.desired = desired
        decision.rescale = decision.desired != current
        if decision.rescale:
            decision.condition("AbleToScale", "True", "SucceededRescale",
                               f"the HPA controller was able to update the target scale to {decision.desired}")
            self._store_scale_event(memory, spec.get("behavior"), current, decision.desired)
        return decision

    # -- metrics -----------------------------------------------------------------------------

    def _metrics(self, decision: Decision, spec: Obj, current: int, pods: Sequence[Obj]) -> tuple[int, str] | None:
        """The largest proposal of the metrics that work (and their statuses); None when none does."""
        statuses: list[dict[str, Any]] = []
        best: tuple[int, str] | None = None
        failures: list[tuple[str, str]] = []  # (reason, message)
        metrics = list(spec.get("metrics") or [])
        for metric in metrics:
            try:
                replicas, name, status = self._metric(metric, current, pods)
            except MetricError as exc:
                reason = FAILED_REASONS.get(str(metric.get("type")), "FailedGetResourceMetric")
                decision.events.append(("Warning", reason, _inner(exc)))
                failures.append((reason, str(exc)))
                statuses.append({"type": ""})
                continue
            statuses.append(status)
            if best is None or replicas > best[0]:
                best = (replicas, name)
        decision.metrics = statuses
        if best is None:
            reason, message = failures[0] if failures else ("FailedGetResourceMetric", "no metrics")
            decision.condition("ScalingActive", "False", reason,
                               f"the HPA was unable to compute the replica count: {message}")
            decision.events.append(("Warning", "FailedComputeMetricsReplicas",
                                    f"invalid metrics ({len(failures)} invalid out of {len(metrics)}), first error "
                                    f"is: {message}"))
            return None
        decision.condition("ScalingActive", "True", "ValidMetricFound",
                           f"the HPA was able to successfully calculate a replica count from {best[1]}")
        return best

    def _metric(self, metric: Obj, current: int, pods: Sequence[Obj]) -> tuple[int, str, dict[str, Any]]:
        kind = str(metric.get("type", ""))
        key = {"Resource": "resource", "ContainerResource": "containerResource"}.get(kind)
        if key is None:
            name = ((metric.get(kind[:1].lower() + kind[1:]) or {}).get("metric") or {}).get("name", "")
            raise MetricError(f"failed to get {kind.lower()} metric value: unable to get metric {name}: "
                              f"{NO_CUSTOM_METRICS}")
        source = metric.get(key) or {}
        resource, container = str(source.get("name", "")), str(source.get("container", ""))
        target = source.get("target") or {}
        noun = f"{resource} container resource" if container else f"{resource} resource"
        try:
            if target.get("averageUtilization") is not None:
                proposal = resource_replicas(current, pods, resource, utilization=int(target["averageUtilization"]),
                                             container=container, tolerance=self.tolerance)
                current_value: dict[str, Any] = {"averageValue": _quantity(proposal.average),
                                                 "averageUtilization": proposal.utilization}
                name = f"{noun} utilization (percentage of request)"
            else:
                wanted = try_parse_quantity(target.get("averageValue"))
                proposal = resource_replicas(current, pods, resource, container=container, tolerance=self.tolerance,
                                             average_value=math.ceil(wanted * 1000) if wanted is not None else 0)
                current_value, name = {"averageValue": _quantity(proposal.average)}, noun
        except MetricError as exc:
            what = "utilization" if target.get("averageUtilization") is not None else "usage"
            raise MetricError(f"failed to get {resource} {'container ' if container else ''}resource metric value: "
                              f"failed to get {resource} {what}: {exc}") from exc
        status: dict[str, Any] = {"name": resource, "current": current_value}
        if container:
            status["container"] = container
        return proposal.replicas, name, {"type": kind, key: status}

    # -- normalization -----------------------------------------------------------------------

    def _normalize(self, decision: Decision, memory: _Memory, current: int, proposed: int, low: int,
                   high: int) -> int:
        stabilized = self._stabilize(memory, proposed)
        if stabilized != proposed:
            decision.condition("AbleToScale", "True", "ScaleDownStabilized",
                               "recent recommendations were higher than current one, applying the highest recent "
                               "recommendation")
        else:
            decision.condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        up_limit = max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM)
        if high > up_limit:
            ceiling, reason, message = (up_limit, "ScaleUpLimit",
                                        "the desired replica count is increasing faster than the maximum scale rate")
        else:
            ceiling, reason, message = (high, "TooManyReplicas",
                                        "the desired replica count is more than the maximum replica count")
        if stabilized < low:
            desired, reason, message = low, "TooFewReplicas", "the desired replica count is less than the minimum " \
                                                              "replica count"
        elif stabilized > ceiling:
            desired = ceiling
        else:
            desired, reason, message = stabilized, "DesiredWithinRange", "the desired count is within the " \
                                                                         "acceptable range"
        decision.condition("ScalingLimited", "False" if desired == stabilized else "True", reason, message)
        return desired

    def _stabilize(self, memory: _Memory, proposed: int) -> int:
        """The highest recommendation within the downscale window; this one is recorded (reusing an expired slot)."""
        now = self.clock.now()
        cutoff = now - self.downscale_stabilization
        highest, expired = proposed, None
        for i, (when, replicas) in enumerate(memory.recommendations):
            if when < cutoff:
                expired = i
            elif replicas > highest:
                highest = replicas
        self._record(memory, expired, now, proposed)
        return highest

    @staticmethod
    def _record(memory: _Memory, slot: int | None, now: float, proposed: int) -> None:
        if slot is None:
            memory.recommendations.append((now, proposed))
        else:
            memory.recommendations[slot] = (now, proposed)

    def _normalize_with_behavior(self, decision: Decision, memory: _Memory, behavior: Obj, current: int,
                                 proposed: int, low: int, high: int) -> int:
        up, down = behavior.get("scaleUp") or {}, behavior.get("scaleDown") or {}
        up_window = float(up.get("stabilizationWindowSeconds") or 0)
        down_window = down.get("stabilizationWindowSeconds")
        down_window = self.downscale_stabilization if down_window is None else float(down_window)
        now = self.clock.now()
        up_cutoff, down_cutoff = now - up_window, now - down_window
        up_rec, down_rec, expired = proposed, proposed, None
        for i, (when, replicas) in enumerate(memory.recommendations):
            if when > up_cutoff:
                up_rec = min(up_rec, replicas)
            if when > down_cutoff:
                down_rec = max(down_rec, replicas)
            if when < up_cutoff and when < down_cutoff:
                expired = i
        stabilized = min(max(current, up_rec), down_rec)
        self._record(memory, expired, now, proposed)
        if stabilized != proposed:
            if proposed >= current:
                decision.condition("AbleToScale", "True", "ScaleUpStabilized", "recent recommendations were lower "
                                   "than current one, applying the lowest recent recommendation")
            else:
                decision.condition("AbleToScale", "True", "ScaleDownStabilized", "recent recommendations were "
                                   "higher than current one, applying the highest recent recommendation")
        else:
            decision.condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size")
        desired, reason, message = stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
        if stabilized > current:
            limit = max(self._rate_limit(memory, up, current, up=True), current)
            if high > limit:
                ceiling, why, text = (limit, "ScaleUpLimit",
                                      "the desired replica count is increasing faster than the maximum scale rate")
            else:
                ceiling, why, text = (high, "TooManyReplicas",
                                      "the desired replica count is more than the maximum replica count")
            if stabilized > ceiling:
                desired, reason, message = ceiling, why, text
        elif stabilized < current:
            limit = min(self._rate_limit(memory, down, current, up=False), current)
            if low < limit:
                floor, why, text = (limit, "ScaleDownLimit",
                                    "the desired replica count is decreasing faster than the maximum scale rate")
            else:
                floor, why, text = (low, "TooFewReplicas",
                                    "the desired replica count is less than the minimum replica count")
            if stabilized < floor:
                desired, reason, message = floor, why, text
        decision.condition("ScalingLimited", "False" if desired == stabilized else "True", reason, message)
        return desired

    def _rate_limit(self, memory: _Memory, rules: Obj, current: int, *, up: bool) -> int:
        """The furthest the policies let the count move from where each policy's period began."""
        select = rules.get("selectPolicy") or "Max"
        if select == "Disabled":
            return current
        proposals = []
        for policy in rules.get("policies") or []:
            period = float(policy.get("periodSeconds") or 0)
            added = self._changed(memory.scale_ups, period)
            removed = self._changed(memory.scale_downs, period)
            start = current - added + removed
            value = int(policy.get("value") or 0)
            if policy.get("type") == "Pods":
                proposals.append(start + value if up else start - value)
            elif up:
                proposals.append(math.ceil(start * (1 + value / 100)))
            else:
                proposals.append(int(start * (1 - value / 100)))
        if not proposals:
            return current
        # Max picks the largest change: the highest count up, the lowest down; Min the opposite
        largest_change = select != "Min"
        return (max if up == largest_change else min)(proposals)

    def _changed(self, events: list[tuple[float, int]], period: float) -> int:
        cutoff = self.clock.now() - period
        return sum(change for when, change in events if when > cutoff)

    def _store_scale_event(self, memory: _Memory, behavior: Any, before: int, after: int) -> None:
        """Behavior-driven HPAs remember their changes for the rate policies' periods."""
        if not isinstance(behavior, Mapping):
            return
        longest = max([float(p.get("periodSeconds") or 0)
                       for rules in (behavior.get("scaleUp") or {}, behavior.get("scaleDown") or {})
                       for p in rules.get("policies") or []] or [0.0])
        now = self.clock.now()
        events = memory.scale_ups if after > before else memory.scale_downs
        events[:] = [(when, change) for when, change in events if when > now - longest]
        events.append((now, abs(after - before)))


def _quantity(thousandths: int) -> str:
    """A metric value as kube prints a MilliQuantity (`250m`, `2`)."""
    return format_quantity(Fraction(thousandths, 1000))


def _inner(exc: MetricError) -> str:
    """kube's per-metric event names the failure without the `failed to get <x> resource metric value:` prefix."""
    cause = exc.__cause__
    text = str(exc)
    if cause is not None:
        _, _, rest = text.partition("resource metric value: ")
        return rest or text
    return text
