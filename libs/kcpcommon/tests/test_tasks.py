"""Background tasks are named, and their failures are logged the moment they happen."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from kcpcommon.tasks import cancel_and_wait, spawn


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
