"""The simulated resource metrics API: what each pod "uses", for the horizontal pod autoscaler.

A simulated pod runs nothing, so its usage is declared: the annotation `sim.kcp.io/<resource>-usage` (on the
pod, or on its controller's pod template, which its pods copy) is either a quantity for the whole pod
(`sim.kcp.io/cpu-usage: 750m`, `sim.kcp.io/memory-usage: 300Mi`) or a percentage of the pod's request
(`sim.kcp.io/cpu-usage: "90%"`). Without it a pod uses `DEFAULT_USAGE_PERCENT` of its request: idle, so an
autoscaler left alone scales down to its minimum, as it would over idle pods. As metrics-server reports,
only running pods that a node has bound have metrics; a container's share of its pod's usage follows its
share of the request. Values are thousandths (kube's MilliValue), as kube's metrics client counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kcp_sim_cluster.controlplane.objects import annotations_of
from kcp_sim_cluster.controlplane.podutil import node_name, phase
from kcpcommon.quantity import try_parse_quantity

Obj = Mapping[str, Any]

USAGE_ANNOTATION = "sim.kcp.io/{resource}-usage"
DEFAULT_USAGE_PERCENT = 10


def container_requests(pod: Obj, resource: str) -> dict[str, int]:
    """Each container's request of `resource`, in thousandths (0: none; a limit alone is the request)."""
    out = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        value = (resources.get("requests") or {}).get(resource, (resources.get("limits") or {}).get(resource))
        amount = try_parse_quantity(value) if value is not None else None
        out[str(container.get("name", ""))] = math.ceil(amount * 1000) if amount is not None else 0
    return out


def usage(pod: Obj, resource: str, container: str = "") -> int | None:
    """What the pod (or one of its containers) uses now, in thousandths; None: no metrics for it."""
    if phase(pod) != "Running" or not node_name(pod):
        return None
    requests = container_requests(pod, resource)
    requested = sum(requests.values())
    declared = str(annotations_of(pod).get(USAGE_ANNOTATION.format(resource=resource), "")).strip()
    if declared.endswith("%") and declared[:-1].isdigit():
        total = requested * int(declared[:-1]) // 100
    elif declared and (amount := try_parse_quantity(declared)) is not None and amount >= 0:
        total = math.ceil(amount * 1000)
    else:
        total = requested * DEFAULT_USAGE_PERCENT // 100
    if not container:
        return total
    if container not in requests:
        return None
    share = requests[container] / requested if requested else 1 / len(requests)
    return math.ceil(total * share)
