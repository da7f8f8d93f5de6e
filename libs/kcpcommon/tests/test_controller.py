"""The controller runner: outcomes become retries, timed requeues or nothing, and are counted."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import structlog
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from kcpcommon.clock import FakeClock
from kcpcommon.controller import SYNC_POLL_PERIOD, Controller, Result, TerminalError
from kcpcommon.errors import APIConflictError, APINotFoundError
from kcpcommon.keys import ObjectKey

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")

Reconcile = Callable[[Any], Awaitable[Result | None]]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@asynccontextmanager
async def running(controller: Controller[Any], **kwargs: Any) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(controller.start(**kwargs))
    await settle()
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.wait([task])


def total(registry: CollectorRegistry, result: str, controller: str = "test") -> float | None:
    return registry.get_sample_value("kcp_test_reconcile_total", {"controller": controller, "result": result})


async def advance(clock: FakeClock, seconds: float, step: float = 0.001) -> None:
    """Move fake time forward in small steps, letting woken workers run at each one."""
    for _ in range(round(seconds / step)):
        clock.advance(step)
        await settle()


async def test_a_failing_reconcile_is_retried_with_growing_backoff(
        clock: FakeClock, registry: CollectorRegistry) -> None:
    calls: list[float] = []

    async def reconcile(key: str) -> None:
        calls.append(clock.now())
        if len(calls) <= 4:
            raise RuntimeError("not yet")

    controller = Controller("test", reconcile, clock=clock, registry=registry, component="kcp-test")
    async with running(controller):
        with capture_logs() as logs:
            controller.enqueue("a")
            await settle()
            await advance(clock, 0.1)
    assert len(calls) == 5
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(calls)]
    assert gaps == [0.005, 0.01, 0.02, 0.04]
    assert total(registry, "error") == 4 and total(registry, "success") == 1
    assert controller.queue.num_requeues("a") == 0  # success forgets the failures
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["reconcile failed, retrying with backoff"] * 4


@pytest.mark.parametrize("error", [APIConflictError("the object has been modified", status=409, reason="Conflict"),
                                   APINotFoundError("not found", status=404, reason="NotFound")])
async def test_a_conflict_or_not_found_is_retried_and_logged_below_error(
        clock: FakeClock, registry: CollectorRegistry, error: Exception) -> None:
    calls = 0

    async def reconcile(key: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise error

    controller = Controller("test", reconcile, clock=clock, registry=registry, component="kcp-test")
    async with running(controller):
        with capture_logs() as logs:
            controller.enqueue("a")
            await settle()
            await advance(clock, 0.01)
    assert calls == 2 and total(registry, "error") == 1
    assert not [e for e in logs if e["log_level"] == "error"]
    assert [e["event"] for e in logs if e["log_level"] == "info"] == ["reconcile raced another writer, retrying "
                                                                      "with backoff"]


async def test_a_terminal_error_is_logged_and_counted_but_never_retried(
        clock: FakeClock, registry: CollectorRegistry) -> None:
    calls = 0

    async def reconcile(key: str) -> None:
        nonlocal calls
        calls += 1
        raise TerminalError("spec.replicas must not be negative")

    controller = Controller("test", reconcile, clock=clock, registry=registry, component="kcp-test")
    async with running(controller):
        with capture_logs() as logs:
            controller.enqueue("a")
            await settle()
            clock.advance(10_000)
            await settle()
    assert calls == 1
    assert total(registry, "terminal") == 1 and total(registry, "error") == 0
    assert controller.queue.num_requeues("a") == 0
    assert logs[0]["event"] == "reconcile failed terminally, not retrying"
    assert logs[0]["error"] == "spec.replicas must not be negative"


async def test_requeue_after_brings_the_key_back_after_that_long_and_not_sooner(
        clock: FakeClock, registry: CollectorRegistry) -> None:
    calls: list[float] = []

    async def reconcile(key: str) -> Result:
        calls.append(clock.now())
        return Result(requeue_after=30.0) if len(calls) == 1 else Result()

    controller = Controller("test", reconcile, clock=clock, registry=registry, component="kcp-test")
    async with running(controller):
        controller.enqueue("a")
        await settle()
        clock.advance(29.9)
        await settle()
        assert len(calls) == 1
        clock.advance(0.1)
        await settle()
        clock.advance(1000)
        await settle()
    assert calls == [0.0, 30.0]
    assert total(registry, "requeue_after") == 1 and total(registry, "success") == 1
    assert registry.get_sample_value("kcp_test_reconcile_time_seconds_count", {"controller": "test"}) == 2
    assert registry.get_sample_value("workqueue_retries_total", {"name": "test"}) == 1


async def test_an_exception_never_kills_a_worker(clock: FakeClock, registry: CollectorRegistry) -> None:
    done: list[str] = []

    async def reconcile(key: str) -> None:
        if key.startswith("bad"):
            raise KeyError(key)
        done.append(key)

    controller = Controller("test", reconcile, clock=clock, registry=registry, component="kcp-test")
    async with running(controller):
        with capture_logs():
            for key in ("bad1", "good1", "bad2", "good2"):
                controller.enqueue(key)
            await settle()
    assert done == ["good1", "good2"]
    assert total(registry, "error") == 2 and total(registry, "success") == 2


async def test_each_item_is_reconciled_with_its_log_fields_bound(clock: FakeClock) -> None:
    seen: list[dict[str, Any]] = []

    async def reconcile(key: Any) -> None:
        seen.append(structlog.contextvars.get_contextvars())

    controller = Controller("splitter", reconcile, clock=clock)
    async with running(controller):
        controller.enqueue(ObjectKey("tenant:a", "default", "web"))
        controller.enqueue("plain")
        await settle()
    assert seen == [
        {"controller": "splitter", "key": "tenant:a|default/web", "cluster": "tenant:a", "namespace": "default",
         "name": "web"},
        {"controller": "splitter", "key": "plain"},
    ]
    assert structlog.contextvars.get_contextvars() == {}


async def test_workers_start_only_after_every_cache_has_synced(clock: FakeClock) -> None:
    synced = asyncio.Event()
    polls = 0
    calls: list[str] = []

    def has_synced() -> bool:
        nonlocal polls
        polls += 1
        return synced.is_set()

    async def reconcile(key: str) -> None:
        calls.append(key)

    controller = Controller("test", reconcile, clock=clock)
    controller.enqueue("a")
    async with running(controller, wait_for=[has_synced, synced.wait]):
        assert polls == 1 and calls == [] and clock.next_deadline() == SYNC_POLL_PERIOD
        for _ in range(3):
            clock.advance(SYNC_POLL_PERIOD)
            await settle()
        assert polls == 4 and calls == []  # polled every period, no worker yet
        synced.set()
        clock.advance(SYNC_POLL_PERIOD)
        await settle()
        assert polls == 5 and calls == ["a"]


async def test_several_workers_run_different_keys_at_once_but_never_one_key_twice(clock: FakeClock) -> None:
    running_now: set[str] = set()
    peak = 0
    release = asyncio.Event()

    async def reconcile(key: str) -> None:
        nonlocal peak
        assert key not in running_now
        running_now.add(key)
        peak = max(peak, len(running_now))
        await release.wait()
        running_now.discard(key)

    controller = Controller("test", reconcile, workers=3, clock=clock)
    async with running(controller):
        for key in ("a", "b", "c", "d", "a", "a"):
            controller.enqueue(key)
        await settle()
        assert peak == 3 and running_now == {"a", "b", "c"}
        controller.enqueue("a")  # "a" is busy: it waits for its worker to finish
        release.set()
        await settle()
    assert peak == 3 and running_now == set()


async def test_cancelling_start_finishes_in_flight_work_then_stops(clock: FakeClock) -> None:
    finished: list[str] = []
    started = asyncio.Event()
    release = asyncio.Event()

    async def reconcile(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    controller = Controller("test", reconcile, clock=clock)
    controller.enqueue("a")
    controller.enqueue("b")
    task = asyncio.create_task(controller.start())
    await started.wait()
    task.cancel()
    await settle()
    assert not task.done()  # draining "a"
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == ["a"]  # "b" was never started


async def test_stop_makes_start_return_after_in_flight_work(clock: FakeClock) -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        await release.wait()
        finished.append(key)

    controller = Controller("test", reconcile, clock=clock)
    controller.enqueue("a")
    task = asyncio.create_task(controller.start())
    await settle()
    controller.stop()
    await settle()
    assert not task.done()
    release.set()
    await asyncio.wait_for(task, 10)  # answered at all: a bound, not a speed
    assert finished == ["a"]


async def test_with_real_time_a_failing_key_is_retried_within_milliseconds() -> None:
    attempts = 0
    succeeded = asyncio.Event()

    async def reconcile(key: str) -> None:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError("apiserver unavailable")
        succeeded.set()

    controller = Controller("test", reconcile)
    async with running(controller):
        with capture_logs():
            controller.enqueue("a")
            await asyncio.wait_for(succeeded.wait(), 1)
    assert attempts == 3


async def test_a_reconcile_returning_something_odd_is_treated_as_success(clock: FakeClock) -> None:
    calls = 0

    async def reconcile(key: str) -> Any:
        nonlocal calls
        calls += 1
        return True

    controller = Controller("test", reconcile, clock=clock)
    async with running(controller):
        controller.enqueue("a")
        await settle()
        controller.enqueue("b")
        await settle()
    assert calls == 2
