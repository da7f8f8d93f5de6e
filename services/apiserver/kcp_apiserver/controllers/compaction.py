"""Periodic etcd compaction, as kube-apiserver does it: each interval, compact to the
revision seen one interval earlier, so watches always have one interval of history."""

from __future__ import annotations

import asyncio

import structlog

from kcp_apiserver.storage.etcd import Compacted, Storage, StorageError
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("compaction")


class Compactor:
    def __init__(self, storage: Storage, interval: float) -> None:
        self.storage = storage
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.interval > 0:
            self._task = spawn(self._run(), name="compactor")

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    async def _run(self) -> None:
        previous = 0
        while True:
            await asyncio.sleep(self.interval)
            try:
                current = await self.storage.current_revision()
                if previous:
                    await self.storage.compact(previous)
                    log.info("compacted etcd", revision=previous)
                previous = current
            except Compacted:
                previous = 0
            except StorageError as exc:
                log.warning("compaction failed", error=str(exc))
