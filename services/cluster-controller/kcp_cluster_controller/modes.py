"""The syncer modes as the reconciler sees them: ensure the syncer, say whether it is there, remove it."""

from __future__ import annotations

from typing import Any

from kcpcommon.clients import KubeClientFactory
from kcpcommon.keys import ObjectKey

from . import conditions as cond
from .push import PushSyncers


class PushMode:
    """The syncer runs in this process (see push.py)."""

    def __init__(self, syncers: PushSyncers) -> None:
        self.syncers = syncers

    async def ensure(self, key: ObjectKey, st: dict[str, Any], downstream: KubeClientFactory,
                     resources: tuple[str, ...]) -> cond.Condition:
        self.syncers.ensure(key, str(st["spec"]["kubeconfig"]), resources)
        healthy, why = self.syncers.status(key)
        if healthy:
            return cond.condition(cond.SYNCER_READY, cond.TRUE, "SyncerRunning", "the syncer runs in the cluster controller")
        return cond.condition(cond.SYNCER_READY, cond.FALSE, "SyncerFailing", why)

    async def remove(self, key: ObjectKey, st: dict[str, Any] | None, keep_downstream: bool) -> None:
        await self.syncers.stop(key)


class NoneMode:
    """Someone else runs the syncer: only its heartbeat tells whether it is there."""

    async def ensure(self, key: ObjectKey, st: dict[str, Any], downstream: KubeClientFactory,
                     resources: tuple[str, ...]) -> cond.Condition:
        return cond.condition(cond.SYNCER_READY, cond.UNKNOWN, "ExternalSyncer",
                              "syncer mode none: a syncer started by someone else is expected")

    async def remove(self, key: ObjectKey, st: dict[str, Any] | None, keep_downstream: bool) -> None:
        return None
