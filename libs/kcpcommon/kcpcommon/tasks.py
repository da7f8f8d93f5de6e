"""Background tasks: every one is named, and none fails silently.

asyncio only reports a failed task when it is garbage-collected, often never.
So every background task in kcpcommon is created through `spawn`, which names
it (names show up in logs and in `asyncio.all_tasks()` when hunting a leak)
and logs its failure the moment it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import structlog

from .backoff import Backoff

T = TypeVar("T")

log = structlog.get_logger("kcpcommon.tasks")


def spawn(coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
    """Start `coro` as a named task whose failure is logged.

    The event loop keeps only a weak reference to a task: the caller must hold
    the returned task (and cancel it when its owner stops).
    """
    task = asyncio.get_running_loop().create_task(coro, name=name)
    task.add_done_callback(_log_failure)
    return task


def _log_failure(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("background task failed", task=task.get_name(), exc_info=exc)


async def cancel_and_wait(*tasks: asyncio.Task[Any]) -> None:
    """Cancel tasks and wait until they have really ended (their finally blocks ran)."""
    for task in tasks:
        task.cancel()
    if tasks:
        # asyncio.wait, not `await task`: a cancellation of the caller itself must still propagate
        await asyncio.wait(tasks)


async def supervise(run: Callable[[], Coroutine[Any, Any, None]], *, name: str,
                    backoff: Backoff | None = None) -> None:
    """Run `run()` for ever: a failure or an early return is logged and it starts again after a backoff.

    For loops that must outlive any single bug (a follower feeding a cache that
    serving depends on): a dead loop would otherwise freeze that state silently.
    Returns only when cancelled.
    """
    delays = backoff or Backoff(initial=0.2, cap=10.0)
    while True:
        try:
            await run()
            log.error("supervised loop returned; restarting", task=name)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("supervised loop failed; restarting", task=name)
        await asyncio.sleep(delays.next())
