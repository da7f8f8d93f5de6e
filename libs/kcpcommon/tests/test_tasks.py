"""Background tasks are named, and their failures are logged the moment they happen."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from kcpcommon.backoff import Backoff
from kcpcommon.tasks import cancel_and_wait, spawn, supervise


async def test_a_failing_task_is_logged_with_its_name() -> None:
    async def fail() -> None:
        raise RuntimeError("boom")

    with capture_logs() as logs:
        task = spawn(fail(), name="worker:1")
        await asyncio.wait([task])
        await asyncio.sleep(0)  # done callbacks run on the next loop iteration
    assert [(e["event"], e["task"]) for e in logs] == [("background task failed", "worker:1")]
    assert isinstance(logs[0]["exc_info"], RuntimeError)


async def test_a_cancelled_task_is_not_a_failure() -> None:
    with capture_logs() as logs:
        task = spawn(asyncio.sleep(10), name="sleeper")
        await cancel_and_wait(task)
    assert task.cancelled() and logs == []


async def test_supervise_restarts_a_loop_that_fails_or_returns() -> None:
    runs: list[int] = []
    blocked = asyncio.Event()

    async def run() -> None:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("first run fails")
        if len(runs) == 2:
            return  # an unexpected return is a failure too
        blocked.set()
        await asyncio.Event().wait()

    with capture_logs() as logs:
        task = asyncio.create_task(supervise(run, name="test", backoff=Backoff(initial=0.01, cap=0.01, jitter=0)))
        await asyncio.wait_for(blocked.wait(), 10.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(runs) == 3
    assert [(e["event"], e["task"]) for e in logs] == [("supervised loop failed; restarting", "test"),
                                                       ("supervised loop returned; restarting", "test")]
