"""scheduling.k8s.io/v1 PriorityClass: kube's defaults and validation, and its two system classes."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.resource import Obj

SYSTEM_PREFIX = "system-"
HIGHEST_USER_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
SYSTEM_CLASSES: dict[str, tuple[int, str]] = {  # name -> (value, description), as kube's scheduling package
    "system-node-critical": (2_000_001_000, "Used for system critical pods that must not be moved from their "
                                            "current node."),
    "system-cluster-critical": (2_000_000_000, "Used for system critical pods that must run in the cluster, but "
                                               "can be moved to another node if necessary."),
}


def system_class(name: str) -> Obj:
    """A system PriorityClass as kube-apiserver's bootstrap hook creates it."""
    value, description = SYSTEM_CLASSES[name]
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description, "preemptionPolicy": "PreemptLowerPriority"}


def default_priority_class(pc: Obj) -> None:
    pc.setdefault("preemptionPolicy", "PreemptLowerPriority")


def _system_class_error(name: str, value: Any, global_default: bool) -> str:
    if name not in SYSTEM_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_CLASSES[name][0]:
        return f"value of {name} PriorityClass must be {SYSTEM_CLASSES[name][0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class(pc: Obj) -> list[Cause]:
    name = (pc.get("metadata") or {}).get("name") or ""
    value = pc.get("value")
    causes = []
    if not isinstance(value, int) or isinstance(value, bool):
        causes.append(Cause("FieldValueRequired", "Required value", "value"))
    elif name.startswith(SYSTEM_PREFIX):
        error = _system_class_error(name, value, bool(pc.get("globalDefault")))
        if error:
            causes.append(Cause("FieldValueForbidden", f"Forbidden: priority class names with '{SYSTEM_PREFIX}' "
                                                       f"prefix are reserved for system use only. error: {error}",
                                "metadata.name"))
    elif value > HIGHEST_USER_PRIORITY:
        causes.append(Cause("FieldValueForbidden", "Forbidden: maximum allowed value of a user defined priority "
                                                   f"is {HIGHEST_USER_PRIORITY}", "value"))
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{policy}": supported values: '
                                                      + ", ".join(f'"{p}"' for p in PREEMPTION_POLICIES),
                            "preemptionPolicy"))
    return causes


def validate_priority_class_update(pc: Obj, old: Obj) -> list[Cause]:
    causes = []
    if pc.get("value") != old.get("value"):
        causes.append(Cause("FieldValueForbidden", "Forbidden: may not be changed in an update.", "value"))
    if pc.get("preemptionPolicy") != old.get("preemptionPolicy"):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{pc.get("preemptionPolicy")}": field is '
                                                 "immutable", "preemptionPolicy"))
    return causes
