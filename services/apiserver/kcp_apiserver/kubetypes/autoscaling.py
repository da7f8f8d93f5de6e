"""autoscaling/v2 HorizontalPodAutoscaler defaults and validation, as kube's v2 defaulter and its
validation (run on the internal type, whose shape and field paths are v2's) apply them. An HPA is stored in
the v2 shape whatever version it was written in, so these serve every served version."""

from __future__ import annotations

import copy
from typing import Any

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required, validate_path_segment_name
from kcp_apiserver.kubetypes import validation as v
from kcp_apiserver.kubetypes.fields import dicts, member, spec
from kcp_apiserver.registry.resource import Obj
from kcpcommon.quantity import try_parse_quantity

DEFAULT_CPU_UTILIZATION = 80
SCALE_UP_DEFAULTS: Obj = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
    {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]}
SCALE_DOWN_DEFAULTS: Obj = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
METRIC_SOURCES = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}
SELECT_POLICIES = ("Disabled", "Max", "Min")
POLICY_TYPES = ("Percent", "Pods")
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600


def default_cpu_metric(utilization: int = DEFAULT_CPU_UTILIZATION) -> Obj:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                        "averageUtilization": utilization}}}


def _rules(given: Any, defaults: Obj) -> Obj:
    """kube's GenerateHPAScale{Up,Down}Rules: the defaults, with whatever the user set kept."""
    out = copy.deepcopy(defaults)
    if isinstance(given, dict):
        out.update({k: val for k, val in given.items() if val is not None})
    return out


def horizontal_pod_autoscaler(obj: Obj) -> None:
    """minReplicas 1; no metrics: 80% cpu; a given behavior has both directions filled in."""
    s = obj.setdefault("spec", {})
    if s.get("minReplicas") is None:
        s["minReplicas"] = 1
    if not s.get("metrics"):
        s["metrics"] = [default_cpu_metric()]
    behavior = s.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), SCALE_UP_DEFAULTS)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), SCALE_DOWN_DEFAULTS)


# -- validation ---------------------------------------------------------------------------------

def validate_horizontal_pod_autoscaler(obj: Obj) -> list[Cause]:
    """minReplicas may not be 0: kube's HPAScaleToZero gate is off by default."""
    return _spec(spec(obj), lower_bound=1)


def _spec(s: Obj, *, lower_bound: int) -> list[Cause]:
    causes: list[Cause] = []
    low, high = s.get("minReplicas"), s.get("maxReplicas")
    if isinstance(low, int) and low < lower_bound:
        causes.append(invalid("spec.minReplicas", low, f"must be greater than or equal to {lower_bound}"))
    if not isinstance(high, int) or high < 1:
        causes.append(invalid("spec.maxReplicas", high or 0, "must be greater than 0"))
    if isinstance(low, int) and (high if isinstance(high, int) else 0) < low:
        causes.append(invalid("spec.maxReplicas", high or 0, "must be greater than or equal to `minReplicas`"))
    causes += cross_version_reference(member(s, "scaleTargetRef"), "spec.scaleTargetRef")
    for i, metric in enumerate(dicts(s.get("metrics"))):
        causes += _metric(metric, f"spec.metrics[{i}]")
    if low == 0 and not any(m.get("type") in ("Object", "External") for m in dicts(s.get("metrics"))):
        causes.append(forbidden("spec.metrics", "must specify at least one Object or External metric to support "
                                                "scaling to zero replicas"))
    behavior = member(s, "behavior")
    for direction in ("scaleUp", "scaleDown"):
        if isinstance(behavior.get(direction), dict):
            causes += _scaling_rules(behavior[direction], f"spec.behavior.{direction}")
    return causes


def cross_version_reference(ref: Obj, field: str) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("kind", "name"):
        value = ref.get(key) or ""
        if not value:
            causes.append(required(f"{field}.{key}", ""))
        else:
            causes += [invalid(f"{field}.{key}", value, msg) for msg in validate_path_segment_name(str(value))]
    return causes


def _scaling_rules(rules: Obj, field: str) -> list[Cause]:
    causes: list[Cause] = []
    window = rules.get("stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        causes.append(invalid(f"{field}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        causes.append(invalid(f"{field}.stabilizationWindowSeconds", window,
                              f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    if rules.get("selectPolicy") is not None and rules["selectPolicy"] not in SELECT_POLICIES:
        causes.append(v.unsupported(f"{field}.selectPolicy", rules["selectPolicy"], SELECT_POLICIES))
    policies = dicts(rules.get("policies"))
    if not policies:
        causes.append(required(f"{field}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        at = f"{field}.policies[{i}]"
        if policy.get("type") not in POLICY_TYPES:
            causes.append(v.unsupported(f"{at}.type", policy.get("type", ""), POLICY_TYPES))
        value, period = policy.get("value") or 0, policy.get("periodSeconds") or 0
        if value <= 0:
            causes.append(invalid(f"{at}.value", value, "must be greater than zero"))
        if period <= 0:
            causes.append(invalid(f"{at}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            causes.append(invalid(f"{at}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return causes


def _metric(metric: Obj, field: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = metric.get("type") or ""
    if not kind:
        causes.append(required(f"{field}.type", "must specify a metric source type"))
    if kind not in METRIC_SOURCES:
        causes.append(v.unsupported(f"{field}.type", kind, tuple(sorted(METRIC_SOURCES))))
    present = [key for key in ("object", "external", "pods", "resource", "containerResource")
               if isinstance(metric.get(key), dict)]
    if present:
        causes += SOURCE_CHECKS[present[0]](metric[present[0]], f"{field}.{present[0]}")
    expected = METRIC_SOURCES.get(kind)
    if expected is not None and expected not in present:
        causes.append(required(f"{field}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        causes += [forbidden(f"{field}.{p}", "must populate the given metric source only")
                   for p in present if p != expected]
    return causes


def _target(target: Obj, field: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = target.get("type") or ""
    if not kind:
        causes.append(required(f"{field}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        causes.append(invalid(f"{field}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None:
            amount = try_parse_quantity(target[key])
            if amount is None or amount <= 0:
                causes.append(invalid(f"{field}.{key}", target[key], "must be positive"))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        causes.append(invalid(f"{field}.averageUtilization", utilization, "must be greater than 0"))
    return causes


def _metric_name(metric: Obj, field: str) -> list[Cause]:
    name = metric.get("name") or ""
    if not name:
        return [required(f"{field}.name", "must specify a metric name")]
    return [invalid(f"{field}.name", name, msg) for msg in validate_path_segment_name(str(name))]


def _resource(src: Obj, field: str, *, container: bool = False) -> list[Cause]:
    causes: list[Cause] = []
    if not src.get("name"):
        causes.append(required(f"{field}.name", "must specify a resource name"))
    if container and not src.get("container"):
        causes.append(required(f"{field}.container", "must specify a container"))
    target = member(src, "target")
    causes += _target(target, f"{field}.target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        causes.append(required(f"{field}.target.averageUtilization",
                               "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        causes.append(forbidden(f"{field}.target.averageValue",
                                "may not set both a target raw value and a target utilization"))
    return causes


def _container_resource(src: Obj, field: str) -> list[Cause]:
    return _resource(src, field, container=True)


def _pods(src: Obj, field: str) -> list[Cause]:
    target = member(src, "target")
    causes = _metric_name(member(src, "metric"), f"{field}.metric") + _target(target, f"{field}.target")
    if target.get("averageValue") is None:
        causes.append(required(f"{field}.target.averageValue", "must specify a positive target averageValue"))
    return causes


def _object(src: Obj, field: str) -> list[Cause]:
    target = member(src, "target")
    causes = (cross_version_reference(member(src, "describedObject"), f"{field}.describedObject")
              + _metric_name(member(src, "metric"), f"{field}.metric") + _target(target, f"{field}.target"))
    if target.get("value") is None and target.get("averageValue") is None:
        causes.append(required(f"{field}.target.averageValue", "must set either a target value or averageValue"))
    return causes


def _external(src: Obj, field: str) -> list[Cause]:
    target = member(src, "target")
    causes = _metric_name(member(src, "metric"), f"{field}.metric") + _target(target, f"{field}.target")
    if target.get("value") is None and target.get("averageValue") is None:
        causes.append(required(f"{field}.target.averageValue",
                               "must set either a target value for metric or a per-pod target"))
    if target.get("value") is not None and target.get("averageValue") is not None:
        causes.append(forbidden(f"{field}.target.value",
                                "may not set both a target value for metric and a per-pod target"))
    return causes


SOURCE_CHECKS = {"object": _object, "external": _external, "pods": _pods, "resource": _resource,
                 "containerResource": _container_resource}
