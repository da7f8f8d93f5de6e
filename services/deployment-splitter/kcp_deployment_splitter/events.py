"""Events on the root Deployment, one per decision, named as client-go's recorder names them."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.errors import APIClientError
from kcpcommon.kubetime import format_time as now_rfc3339

from .names import COMPONENT

log = structlog.get_logger(COMPONENT)




class EventRecorder:
    """Writes core/v1 Events about a root; the same message twice in a row for one root is written once."""

    def __init__(self, kcp: ClientFactory) -> None:
        self._kcp = kcp
        self._last: dict[tuple[str, str, str], str] = {}

    async def record(self, cluster: str, root: Mapping[str, Any], reason: str, message: str,
                     type_: str = "Normal") -> None:
        meta = root.get("metadata") or {}
        slot = (cluster, meta.get("namespace") or "default", meta.get("name") or "")
        if self._last.get(slot) == f"{reason}:{message}":
            return
        self._last[slot] = f"{reason}:{message}"
        now = now_rfc3339()
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{slot[2]}.{time.time_ns():x}", "namespace": slot[1]},
            "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": slot[2],
                               "namespace": slot[1], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "type": type_, "message": message[:1024], "count": 1,
            "firstTimestamp": now, "lastTimestamp": now,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
        }
        try:
            await self._kcp.dynamic(cluster).resource("v1", "events", namespaced=True).create(event)
        except APIClientError as exc:
            log.warning("could not record an event", reason=reason, error=str(exc))

    def forget(self, cluster: str, namespace: str, name: str) -> None:
        self._last.pop((cluster, namespace, name), None)
