"""An HorizontalPodAutoscaler between autoscaling/v2, the shape it is stored in, and autoscaling/v1.

As kube converts it: v1 has one metric of its own, `targetCPUUtilizationPercentage` (the first cpu
Utilization metric of v2) and `status.currentCPUUtilizationPercentage`; whatever else v2 holds (other
metrics, current metrics, conditions, behavior) rides in v1 as JSON in `autoscaling.alpha.kubernetes.io/*`
annotations, metrics in v1's own flat MetricSpec shape, so a v1 client that writes back what it read loses
nothing. autoscaling/v2beta2 (served until 1.25) has v2's shape; only its apiVersion differs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

V2 = "autoscaling/v2"
V1 = "autoscaling/v1"
METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"

# per metric source: (v2 path, v1 field) pairs; a path is dotted below the source's own object
SPEC_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "resource": (("name", "name"), ("target.averageUtilization", "targetAverageUtilization"),
                 ("target.averageValue", "targetAverageValue")),
    "containerResource": (("name", "name"), ("container", "container"),
                          ("target.averageUtilization", "targetAverageUtilization"),
                          ("target.averageValue", "targetAverageValue")),
    "pods": (("metric.name", "metricName"), ("metric.selector", "selector"),
             ("target.averageValue", "targetAverageValue")),
    "object": (("describedObject", "target"), ("metric.name", "metricName"), ("metric.selector", "selector"),
               ("target.value", "targetValue"), ("target.averageValue", "averageValue")),
    "external": (("metric.name", "metricName"), ("metric.selector", "metricSelector"),
                 ("target.value", "targetValue"), ("target.averageValue", "targetAverageValue")),
}
STATUS_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "resource": (("name", "name"), ("current.averageUtilization", "currentAverageUtilization"),
                 ("current.averageValue", "currentAverageValue")),
    "containerResource": (("name", "name"), ("container", "container"),
                          ("current.averageUtilization", "currentAverageUtilization"),
                          ("current.averageValue", "currentAverageValue")),
    "pods": (("metric.name", "metricName"), ("metric.selector", "selector"),
             ("current.averageValue", "currentAverageValue")),
    "object": (("describedObject", "target"), ("metric.name", "metricName"), ("metric.selector", "selector"),
               ("current.value", "currentValue"), ("current.averageValue", "averageValue")),
    "external": (("metric.name", "metricName"), ("metric.selector", "metricSelector"),
                 ("current.value", "currentValue"), ("current.averageValue", "currentAverageValue")),
}
SOURCES = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods", "Object": "object",
           "External": "external"}


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _set(obj: Obj, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = obj.setdefault(part, {})
    obj[last] = value


def _moved(metric: Any, table: dict[str, tuple[tuple[str, str], ...]], *, to_v1: bool) -> Obj:
    """One metric (spec or status) in the other version's shape: the same type, its source's fields moved."""
    if not isinstance(metric, dict):
        return {}
    out: Obj = {"type": metric.get("type", "")}
    key = SOURCES.get(str(metric.get("type", "")))
    source = metric.get(key) if key else None
    if key is None or not isinstance(source, dict):
        return out
    moved: Obj = {}
    for v2_path, v1_field in table[key]:
        value = _get(source, v2_path) if to_v1 else source.get(v1_field)
        if value is not None:
            if to_v1:
                moved[v1_field] = value
            else:
                _set(moved, v2_path, value)
    out[key] = moved
    return out


def _target_type(source: Obj) -> str:
    """A v1 metric's target says what it is by which field it sets (kube's conversion order)."""
    target = source.get("target")
    if not isinstance(target, dict):
        return "AverageValue"
    if target.get("averageUtilization") is not None:
        return "Utilization"
    if target.get("value") is not None:
        return "Value"
    return "AverageValue"


def _spec_to_v2(metric: Any) -> Obj:
    out = _moved(metric, SPEC_FIELDS, to_v1=False)
    key = SOURCES.get(str(out.get("type", "")))
    if key is not None and key in out:
        out[key].setdefault("target", {})["type"] = _target_type(out[key])
        if key in ("pods", "object", "external"):
            out[key].setdefault("metric", {}).setdefault("name", "")
    return out


def _is_cpu_utilization(metric: Any) -> bool:
    resource = metric.get("resource") if isinstance(metric, dict) else None
    return (isinstance(metric, dict) and metric.get("type") == "Resource" and isinstance(resource, dict)
            and resource.get("name") == "cpu" and _get(resource, "target.averageUtilization") is not None)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _load(annotations: Obj, name: str) -> Any:
    text = annotations.pop(name, None)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def to_v1(stored: Obj) -> Obj:
    """A stored (v2) HPA as autoscaling/v1 shows it."""
    spec, status = stored.get("spec") or {}, stored.get("status")
    meta = copy.deepcopy(stored.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    others = [_moved(m, SPEC_FIELDS, to_v1=True) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS_ANNOTATION] = _dump(others)
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR_ANNOTATION] = _dump(spec["behavior"])
    v1_spec: Obj = {"scaleTargetRef": copy.deepcopy(spec.get("scaleTargetRef") or {})}
    for field in ("minReplicas", "maxReplicas"):
        if spec.get(field) is not None:
            v1_spec[field] = spec[field]
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    out: Obj = {"apiVersion": V1, "kind": stored.get("kind", "HorizontalPodAutoscaler"), "metadata": meta,
                "spec": v1_spec}
    if isinstance(status, dict):
        out["status"] = _status_to_v1(status, annotations)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


def _status_to_v1(status: Obj, annotations: Obj) -> Obj:
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    if current:
        annotations[CURRENT_METRICS_ANNOTATION] = _dump([_moved(m, STATUS_FIELDS, to_v1=True) for m in current])
    if status.get("conditions"):
        annotations[CONDITIONS_ANNOTATION] = _dump(status["conditions"])
    out: Obj = {k: status[k] for k in ("observedGeneration", "lastScaleTime") if status.get(k) is not None}
    out["currentReplicas"] = status.get("currentReplicas", 0)
    out["desiredReplicas"] = status.get("desiredReplicas", 0)
    for metric in current:
        resource = metric.get("resource") or {}
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" \
                and _get(resource, "current.averageUtilization") is not None:
            out["currentCPUUtilizationPercentage"] = resource["current"]["averageUtilization"]
    return out


def to_v2(v1: Obj) -> Obj:
    """An autoscaling/v1 HPA in the v2 shape it is stored in (its annotations taken back into fields)."""
    meta = copy.deepcopy(v1.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    others = _load(annotations, METRICS_ANNOTATION)
    current = _load(annotations, CURRENT_METRICS_ANNOTATION)
    conditions = _load(annotations, CONDITIONS_ANNOTATION)
    behavior = _load(annotations, BEHAVIOR_ANNOTATION)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    spec: Obj = v1["spec"] if isinstance(v1.get("spec"), dict) else {}
    v2_spec: Obj = {k: copy.deepcopy(spec[k]) for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    metrics = [_spec_to_v2(m) for m in others] if isinstance(others, list) else []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    if metrics:
        v2_spec["metrics"] = metrics
    if isinstance(behavior, dict):
        v2_spec["behavior"] = behavior
    out: Obj = {"apiVersion": V2, "kind": v1.get("kind", "HorizontalPodAutoscaler"), "metadata": meta,
                "spec": v2_spec}
    status = v1.get("status")
    if isinstance(status, dict):
        out["status"] = _status_to_v2(status, current, conditions)
    return out


def _status_to_v2(status: Obj, current: Any, conditions: Any) -> Obj:
    out: Obj = {k: status[k] for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
                if status.get(k) is not None}
    if isinstance(current, list):
        out["currentMetrics"] = [_moved(m, STATUS_FIELDS, to_v1=False) for m in current]
    elif status.get("currentCPUUtilizationPercentage") is not None:
        out["currentMetrics"] = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    if isinstance(conditions, list):
        out["conditions"] = conditions
    return out


def renamed(api_version: str) -> Callable[[Obj], Obj]:
    """A version with v2's shape (v2beta2): the object as it is, under another apiVersion."""
    def convert(obj: Obj) -> Obj:
        out = dict(obj)
        out["apiVersion"] = api_version
        return out

    return convert


def as_v2(obj: Obj) -> Obj:
    """Any served version's object in the v2 shape (for columns and describers)."""
    return to_v2(obj) if obj.get("apiVersion") == V1 else obj
