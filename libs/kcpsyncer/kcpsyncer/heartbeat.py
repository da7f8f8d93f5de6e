"""The SyncTarget's heartbeat, written only while the physical cluster answers.

The heartbeat is what the cluster controller turns into Ready: a syncer that keeps beating
while its physical cluster is down would keep a dead cluster Ready (and scheduled on).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from structlog.typing import FilteringBoundLogger

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIClientError
from kcpcommon.kubetime import format_time

from .metrics import SyncerMetrics
from .names import HEARTBEAT_GROUP_VERSION


async def heartbeat_loop(*, up: DynamicClient, down: DynamicClient, sync_target: str, interval: float,
                         synced_resources: Callable[[], list[str]], metrics: SyncerMetrics,
                         log: FilteringBoundLogger) -> None:
    """Every `interval` seconds until cancelled: ask the physical cluster for /version, and if it answers,
    write the time and the types synced so far into the SyncTarget's status."""
    synctargets = up.resource(HEARTBEAT_GROUP_VERSION, "synctargets", namespaced=False)
    while True:
        try:
            await down.request("GET", "/version")
        except APIClientError as exc:
            metrics.error("PhysicalClusterUnreachable")
            log.warning("heartbeat skipped: the physical cluster does not answer", error=str(exc))
        else:
            try:
                await synctargets.patch(sync_target, {"status": {
                    "lastSyncerHeartbeatTime": format_time(), "syncedResources": synced_resources()}},
                    subresource="status")
                metrics.heartbeat(time.time())
            except APIClientError as exc:
                metrics.error(exc.reason or "HeartbeatFailed")
                log.warning("heartbeat failed", error=str(exc))
        await asyncio.sleep(interval)
