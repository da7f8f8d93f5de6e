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
                         log: FilteringBoundLogger, served_workspaces: Callable[[], int] | None = None) -> None:
    """Every `interval` seconds until cancelled: ask the physical cluster for /version, and if it answers,
    write the time, the types synced so far and (for a syncer serving placed workspaces) how many other
    workspaces it serves into the SyncTarget's status: a decommissioned SyncTarget is empty at 0."""
    synctargets = up.resource(HEARTBEAT_GROUP_VERSION, "synctargets", namespaced=False)
    while True:
        try:
            await down.request("GET", "/version")
        except APIClientError as exc:
            metrics.error("PhysicalClusterUnreachable")
            log.warning("heartbeat skipped: the physical cluster does not answer", error=str(exc))
        else:
            try:
                status: dict[str, object] = {"lastSyncerHeartbeatTime": format_time(),
                                             "syncedResources": synced_resources()}
                if served_workspaces is not None:
                    status["servedWorkspaces"] = served_workspaces()
                await synctargets.patch(sync_target, {"status": status}, subresource="status")
                metrics.heartbeat(time.time())
            except APIClientError as exc:
                metrics.error(exc.reason or "HeartbeatFailed")
                log.warning("heartbeat failed", error=str(exc))
        await asyncio.sleep(interval)
