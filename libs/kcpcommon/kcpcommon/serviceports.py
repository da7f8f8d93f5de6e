"""A Service's ports as one pod serves them, as kube's endpoint controllers resolve `targetPort`: a number as is, a
name looked up in the pod's containers (with the same protocol); a port the pod does not name is left out. One
definition for every controller that writes endpoints (the simulator's, kcp's remote endpoints)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Port = tuple[str, int, str]  # (the Service port's name, the pod's port number, protocol)


def target_port(pod: Mapping[str, Any], port: Mapping[str, Any]) -> int | None:
    """The pod's port for one Service port (None: the pod has no container port of that name)."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target and (cport.get("protocol") or "TCP") == (port.get("protocol") or "TCP"):
                return int(cport["containerPort"])
    return None


def endpoint_ports(service: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[Port, ...]:
    """Every Service port the pod serves, in the Service's order."""
    found: list[Port] = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = target_port(pod, port)
        if number is not None:
            found.append((port.get("name") or "", number, port.get("protocol") or "TCP"))
    return tuple(found)
