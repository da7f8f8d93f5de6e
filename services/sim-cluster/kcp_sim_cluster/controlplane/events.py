"""The control plane's Events: kcpcommon's recorder, writing through the server's own registry (in-process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcp_apiserver.embedding import Registry, Resource
from kcpcommon.events import NORMAL, WARNING, EventRecorder

__all__ = ["NORMAL", "WARNING", "EventRecorder", "RegistryEventSink", "recorder"]

COMPONENT = "kcp-sim-cluster"


class RegistryEventSink:
    """Writes Events as the registry's own writes: no HTTP, no client, same validation and watch."""

    def __init__(self, registry: Registry, res: Resource) -> None:
        self.registry = registry
        self.res = res

    async def create(self, cluster: str, namespace: str, event: Mapping[str, Any]) -> None:
        await self.registry.create(self.res, cluster, namespace, dict(event))

    async def update_count(self, cluster: str, namespace: str, name: str, count: int, last: str) -> None:
        def bump(current: dict[str, Any]) -> dict[str, Any]:
            current["count"] = count
            current["lastTimestamp"] = last
            return current

        await self.registry.patch(self.res, cluster, namespace, name, bump)


def recorder(registry: Registry, res: Resource) -> EventRecorder:
    """The recorder every simulated controller shares (each names itself per Event: `component=`)."""
    return EventRecorder(RegistryEventSink(registry, res), component=COMPONENT, workers=8)
