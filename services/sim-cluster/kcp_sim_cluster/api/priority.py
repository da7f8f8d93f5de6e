"""kube's Priority admission plugin: a pod's spec.priorityClassName (or the globalDefault class) becomes its
spec.priority and preemptionPolicy, at most one PriorityClass is the global default, and the system classes
cannot be deleted. Classes are read through a PolicyLister, so a class is usable the moment its create
answered."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import (
    CREATE,
    DELETE,
    SYSTEM_CLASSES,
    APIError,
    Attributes,
    Obj,
    Resource,
    spec,
)
from kcp_sim_cluster.api.policylister import PolicyLister

DEFAULT_PREEMPTION = "PreemptLowerPriority"
NO_DEFAULT_PRIORITY = 0  # kube's DefaultPriorityWhenNoDefaultClassExists


def forbidden(res: Resource, name: str, why: str) -> APIError:
    """kube's admission.NewForbidden: `<resource> "<name>" is forbidden: <why>`."""
    qualified = f"{res.plural}.{res.group}" if res.group else res.plural
    return APIError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}',
                    {"name": name, "group": res.group, "kind": res.plural} if res.group
                    else {"name": name, "kind": res.plural})


def global_default(classes: list[Obj]) -> Obj | None:
    """The globalDefault class; with several (written concurrently), the lowest value, as kube picks."""
    defaults = [c for c in classes if c.get("globalDefault")]
    return min(defaults, key=lambda c: int(c.get("value") or 0)) if defaults else None


def resolve(pod_spec: Obj, classes: list[Obj]) -> tuple[str, int, str | None] | None:
    """(class name, priority, preemption policy) of a pod; None when its named class does not exist."""
    name = pod_spec.get("priorityClassName") or ""
    if not name:
        chosen = global_default(classes)
        if chosen is None:
            return "", NO_DEFAULT_PRIORITY, None
    else:
        chosen = next((c for c in classes if c["metadata"]["name"] == name), None)
        if chosen is None:
            return None
    return chosen["metadata"]["name"], int(chosen.get("value") or 0), chosen.get("preemptionPolicy")


def admit_pod(res: Resource, name: str, pod: Obj, classes: list[Obj]) -> None:
    """Sets spec.priority/preemptionPolicy (and the default class's name) or raises kube's 403."""
    s = spec(pod)
    resolved = resolve(s, classes)
    if resolved is None:
        raise forbidden(res, name, f"no PriorityClass with name {s['priorityClassName']} was found")
    class_name, priority, policy = resolved
    given: Any = s.get("priority")
    if given is not None and given != priority:
        raise forbidden(res, name, f"the integer value of priority ({given}) must not be provided in pod spec; "
                                   f"priority admission controller computed {priority} from the given "
                                   "PriorityClass name")
    if s.get("preemptionPolicy") is not None and policy is not None and s["preemptionPolicy"] != policy:
        raise forbidden(res, name, f"the string value of PreemptionPolicy ({s['preemptionPolicy']}) must not be "
                                   f"provided in pod spec; priority admission controller computed {policy} from "
                                   "the given PriorityClass name")
    if class_name:
        s["priorityClassName"] = class_name
    s["priority"] = priority
    s["preemptionPolicy"] = policy or s.get("preemptionPolicy") or DEFAULT_PREEMPTION


class PriorityAdmission:
    def __init__(self, classes: PolicyLister) -> None:
        self.classes = classes

    async def _classes(self, cluster: str) -> list[Obj]:
        return await self.classes.list(cluster)

    async def admit(self, attrs: Attributes) -> None:
        self.classes.saw(attrs)
        if attrs.subresource or attrs.obj is None or attrs.operation != CREATE:
            return
        if attrs.resource.group == "" and attrs.resource.plural == "pods":
            admit_pod(attrs.resource, attrs.name, attrs.obj, await self._classes(attrs.cluster))

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource.prefix != self.classes.resource.prefix or attrs.subresource:
            return
        if attrs.operation == DELETE:
            if attrs.name in SYSTEM_CLASSES:
                raise forbidden(attrs.resource, attrs.name, "this is a system priority class and cannot be deleted")
            return
        if attrs.obj is None or not attrs.obj.get("globalDefault"):
            return
        current = global_default([c for c in await self._classes(attrs.cluster)
                                  if c["metadata"]["name"] != attrs.name or attrs.operation == CREATE])
        if current is not None:
            raise forbidden(attrs.resource, attrs.name, f"PriorityClass {current['metadata']['name']} is already "
                                                        "marked as default. Only one default can exist")
