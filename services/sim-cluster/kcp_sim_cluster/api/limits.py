"""core/v1 LimitRanges and kube's LimitRanger admission for pods: a container without requests or limits
gets its namespace's Container defaults (noted in the `kubernetes.io/limit-ranger` annotation), and one
outside a Container min/max is refused with kube's 403. LimitRanges are read through a PolicyLister, so one is
in force the moment its create answered."""

from __future__ import annotations

import functools

from kcp_apiserver.embedding import (
    CREATE,
    Attributes,
    Obj,
    Resource,
    kube_resource,
    qos_class,
    spec,
)
from kcp_sim_cluster.api.policylister import PolicyLister
from kcp_sim_cluster.api.priority import forbidden
from kcp_sim_cluster.api.strategy import kube_strategy
from kcpcommon.quantity import try_parse_quantity

ANNOTATION = "kubernetes.io/limit-ranger"
CONTAINER = "Container"


@functools.cache
def limit_ranges(release: str) -> Resource:
    return kube_resource("", "v1", "LimitRange", "limitranges", namespaced=True, release=release,
                         short_names=("limits",), strategy=kube_strategy("", "v1", "LimitRange", release))


def _container_items(ranges: list[Obj]) -> list[Obj]:
    return [item for r in ranges for item in spec(r).get("limits") or []
            if isinstance(item, dict) and item.get("type") == CONTAINER]


def apply_defaults(pod: Obj, ranges: list[Obj]) -> None:
    """kube's mergeContainerResources over every container, with the first Container item's defaults."""
    items = [i for i in _container_items(ranges) if i.get("default") or i.get("defaultRequest")]
    if not items:
        return
    limits, requests = items[0].get("default") or {}, items[0].get("defaultRequest") or {}
    notes: list[str] = []
    for key, label in (("initContainers", "init container"), ("containers", "container")):
        for container in spec(pod).get(key) or []:
            resources = container.setdefault("resources", {})
            for kind, defaults in (("request", requests), ("limit", limits)):
                have = resources.setdefault(f"{kind}s", {})
                added = sorted(r for r in defaults if r not in have)
                for r in added:
                    have[r] = defaults[r]
                if not have:
                    resources.pop(f"{kind}s")
                if added:
                    notes.append(f"{', '.join(added)} {kind} for {label} {container.get('name', '')}")
    if notes:
        pod["metadata"].setdefault("annotations", {})[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
        pod.setdefault("status", {})["qosClass"] = qos_class(spec(pod))


def violations(pod: Obj, ranges: list[Obj]) -> list[str]:
    """kube's minConstraint/maxConstraint for every Container item and container, in kube's words."""
    errors = []
    for item in _container_items(ranges):
        for key in ("initContainers", "containers"):
            for container in spec(pod).get(key) or []:
                resources = container.get("resources") or {}
                for name, least in sorted((item.get("min") or {}).items()):
                    request = (resources.get("requests") or {}).get(name)
                    if request is None:
                        errors.append(f"minimum {name} usage per Container is {least}.  No request is specified")
                    elif (try_parse_quantity(request) or 0) < (try_parse_quantity(least) or 0):
                        errors.append(f"minimum {name} usage per Container is {least}, but request is {request}")
                for name, most in sorted((item.get("max") or {}).items()):
                    limit = (resources.get("limits") or {}).get(name)
                    if limit is None:
                        errors.append(f"maximum {name} usage per Container is {most}.  No limit is specified")
                    elif (try_parse_quantity(limit) or 0) > (try_parse_quantity(most) or 0):
                        errors.append(f"maximum {name} usage per Container is {most}, but limit is {limit}")
    return errors


class LimitRanger:
    def __init__(self, ranges: PolicyLister) -> None:
        self.ranges = ranges

    async def admit(self, attrs: Attributes) -> None:
        self.ranges.saw(attrs)
        if attrs.subresource or attrs.obj is None or attrs.operation != CREATE or attrs.resource.group \
                or attrs.resource.plural != "pods":
            return
        ranges = await self.ranges.list(attrs.cluster, attrs.namespace)
        if not ranges:
            return
        apply_defaults(attrs.obj, ranges)
        errors = violations(attrs.obj, ranges)
        if errors:
            raise forbidden(attrs.resource, attrs.name, errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
