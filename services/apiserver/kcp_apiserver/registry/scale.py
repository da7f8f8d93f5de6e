"""The autoscaling/v1 Scale subresource, mapped onto a type's replica paths (a CRD's, or a built-in's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.selectors import LabelSelector
from kcp_apiserver.registry.resource import Obj, Resource


def _path_get(obj: Obj, path: str) -> Any:
    for part in path.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)  # type: ignore[assignment]
    return obj


def _path_set(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


@dataclass(frozen=True)
class BuiltinScale:
    """A built-in workload's Scale (Deployments, ReplicaSets, StatefulSets): replicas at kube's paths, and the
    status's selector written from the LabelSelector at `selector_path`, as kube's scale REST does."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str = ""
    selector_path: str = ".spec.selector"


def to_scale(res: Resource, obj: Obj) -> Obj:
    """autoscaling/v1 Scale of an object, from its type's scale paths."""
    meta = obj["metadata"]
    status: Obj = {"replicas": _path_get(obj, res.scale.status_replicas_path) or 0}
    if res.scale.label_selector_path:
        selector = _path_get(obj, res.scale.label_selector_path)
        if selector:
            status["selector"] = selector
    elif getattr(res.scale, "selector_path", ""):
        selector = _path_get(obj, res.scale.selector_path)
        if isinstance(selector, dict):
            status["selector"] = str(LabelSelector.from_dict(selector))
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": _path_get(obj, res.scale.spec_replicas_path) or 0}, "status": status}


def set_replicas(res: Resource, obj: Obj, scale: Obj, name: str) -> Obj:
    """Write a Scale's spec.replicas back into the object (422 unless a non-negative integer)."""
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise st.invalid("Scale", name, [st.Cause(
            "FieldValueInvalid", f"Invalid value: {replicas!r}: must be greater than or equal to 0",
            "spec.replicas")], "autoscaling")
    _path_set(obj, res.scale.spec_replicas_path, replicas)
    return obj
