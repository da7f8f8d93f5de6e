"""kube's replica calculator for resource metrics: how many replicas one metric asks for.

The usage ratio is measured over the ready pods that have metrics (usage / request against a Utilization
target, average usage against an AverageValue one); within the tolerance (0.1) nothing changes. Pods being
deleted, failed or pending are ignored; pods without metrics count, when scaling down, as using their whole
request (at least the target) and, when scaling up, nothing; unready pods count as using nothing when
scaling up; and if counting them would turn the direction around or make the change too small, the
current count stays. Pure functions of the pods, for table tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcp_sim_cluster.controlplane.objects import is_deleting
from kcp_sim_cluster.controlplane.podmetrics import container_requests, usage
from kcp_sim_cluster.controlplane.podutil import is_ready, phase

Obj = Mapping[str, Any]
DEFAULT_TOLERANCE = 0.1


class MetricError(Exception):
    """The metric cannot be computed (kube's wording in str())."""


@dataclass(frozen=True)
class Proposal:
    replicas: int
    average: int  # the ready pods' average usage, in thousandths
    utilization: int | None = None  # percent of the request, for Utilization targets


def _requests(pods: Sequence[Obj], resource: str, container: str) -> dict[str, int]:
    """Each pod's request of `resource` (of one container), refusing pods with a container without one."""
    out = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        total = 0
        for cname, amount in container_requests(pod, resource).items():
            if container and cname != container:
                continue
            if amount == 0:
                raise MetricError(f"missing request for {resource} in container {cname} of Pod {name}")
            total += amount
        out[name] = total
    return out


def _group(pods: Sequence[Obj], metrics: dict[str, int],
           resource: str) -> tuple[int, set[str], set[str]]:
    """(ready pods with metrics, unready pods, pods without metrics); ignored pods are dropped from `metrics`."""
    ready, unready, missing = 0, set(), set()
    for pod in pods:
        name = pod["metadata"]["name"]
        if is_deleting(pod) or phase(pod) in ("Failed", "Succeeded", "Pending"):
            metrics.pop(name, None)
            continue
        if name not in metrics:
            missing.add(name)
        elif resource == "cpu" and not is_ready(pod):
            unready.add(name)
            del metrics[name]
        else:
            ready += 1
    return ready, unready, missing


def resource_replicas(current: int, pods: Sequence[Obj], resource: str, *, utilization: int | None = None,
                      average_value: int | None = None, container: str = "",
                      tolerance: float = DEFAULT_TOLERANCE) -> Proposal:
    """Replicas for one Resource (or ContainerResource) metric with a Utilization or AverageValue target."""
    metrics = {p["metadata"]["name"]: value for p in pods if (value := usage(p, resource, container)) is not None}
    if not metrics:
        raise MetricError(f"unable to get metrics for resource {resource}: no metrics returned from resource "
                          "metrics API")
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    ready, unready, missing = _group(pods, metrics, resource)
    if not metrics:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    if utilization is not None:
        requests = _requests(pods, resource, container)
        target = utilization

        def ratio_of(values: dict[str, int]) -> tuple[float, int, int]:
            known = [(v, requests[n]) for n, v in values.items() if n in requests]
            total_requests = sum(r for _, r in known)
            if not known or total_requests == 0:
                raise MetricError("no metrics returned matched known pods")
            used = sum(v for v, _ in known)
            percent = used * 100 // total_requests
            return percent / target, percent, used // len(known)
        fallback = {n: requests.get(n, 0) * max(100, target) // 100 for n in missing}
    else:
        target_value = average_value or 1

        def ratio_of(values: dict[str, int]) -> tuple[float, int, int]:
            average = sum(values.values()) / len(values)
            return average / target_value, 0, int(average)
        fallback = dict.fromkeys(missing, target_value)
    return _propose(current, metrics, ratio_of, ready, unready, fallback, tolerance, utilization is not None)


def _propose(current: int, metrics: dict[str, int], ratio_of: Callable[[dict[str, int]], tuple[float, int, int]],
             ready: int, unready: set[str], fallback: dict[str, int], tolerance: float,
             with_utilization: bool) -> Proposal:
    ratio, percent, average = ratio_of(metrics)
    measured = Proposal(current, average, percent if with_utilization else None)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not fallback:
        if abs(1.0 - ratio) <= tolerance:
            return measured
        return Proposal(math.ceil(ratio * ready), average, measured.utilization)
    if fallback:
        if ratio < 1.0:  # scaling down: pods without metrics use their request (or the target)
            metrics.update(fallback)
        elif ratio > 1.0:  # scaling up: they use nothing
            metrics.update(dict.fromkeys(fallback, 0))
    if scale_up_with_unready:
        metrics.update(dict.fromkeys(unready, 0))
    new_ratio, _, _ = ratio_of(metrics)
    if abs(1.0 - new_ratio) <= tolerance or (ratio < 1.0 < new_ratio) or (new_ratio < 1.0 < ratio):
        return measured
    replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return measured
    return Proposal(replicas, average, measured.utilization)
