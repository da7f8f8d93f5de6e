"""Push mode's supervision: a syncer that fails is reported on its SyncTarget and started again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kcp_cluster_controller import push
from prometheus_client import CollectorRegistry

import kcpsyncer
from kcpcommon.clients import KubeClientFactory
from kcpcommon.keys import ObjectKey

KEY = ObjectKey("org", "", "east")


async def test_a_failed_syncer_is_reported_then_restarted_with_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    running = asyncio.Event()

    async def run_syncer(options: Any, *, registry: CollectorRegistry) -> None:
        runs.append(options.sync_target)
        if len(runs) == 1:
            raise ConnectionError("the physical cluster hung up")
        running.set()
        await asyncio.Event().wait()  # the second one keeps running

    @contextlib.asynccontextmanager
    async def no_connection() -> AsyncIterator[object]:
        yield object()

    async def from_text(*_: Any, **__: Any) -> Any:
        return no_connection()

    budgets: list[dict[str, Any]] = []

    class Kcp:
        def with_budget(self, **budget: Any) -> Any:
            budgets.append(budget)
            return no_connection()

    monkeypatch.setattr(kcpsyncer, "run_syncer", run_syncer)
    monkeypatch.setattr(KubeClientFactory, "from_text", from_text)
    changes: list[ObjectKey] = []
    syncers = push.PushSyncers(Kcp(), heartbeat_interval=10.0, registry=CollectorRegistry(),  # type: ignore[arg-type]
                               on_change=changes.append)
    syncers.ensure(KEY, "kubeconfig text", ("configmaps",))
    try:
        async with asyncio.timeout(10):
            while not changes:  # the failure makes the controller write the SyncTarget's conditions again
                await asyncio.sleep(0.01)
        healthy, why = syncers.status(KEY)
        assert not healthy and why == "the syncer failed (1 restarts): the physical cluster hung up"
        async with asyncio.timeout(10):  # started again after the backoff's first second
            await running.wait()
        assert runs == ["east", "east"] and syncers.status(KEY) == (True, "")
        assert changes == [KEY, KEY]  # failed, then healthy again: both reported
        # each run reaches kcp with a budget of its own, as a kcp-syncer process does, not the controller's
        assert budgets == [{"component": "kcp-syncer", "qps": kcpsyncer.QPS, "burst": kcpsyncer.BURST}] * 2
        syncers.ensure(KEY, "kubeconfig text", ("configmaps",))  # the same configuration: left running
        assert len(runs) == 2
    finally:
        await syncers.stop_all()
