"""The syncer's reconcile loop (filled in by the next commit)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

if TYPE_CHECKING:
    from . import SyncerOptions


class Syncer:
    """One syncer's informers, queue and workers."""

    def __init__(self, options: SyncerOptions, *, registry: CollectorRegistry | None = None) -> None:
        self.options = options
        self.registry = registry

    async def run(self, *, ready: asyncio.Event | None = None) -> None:
        raise NotImplementedError
