"""Work queue semantics, under a fake clock: dedupe, one worker per key, delays, backoff, shutdown."""

from __future__ import annotations

import asyncio
import random

import pytest
from prometheus_client import CollectorRegistry

from kcpcommon.clock import FakeClock
from kcpcommon.metrics import PrometheusQueueMetrics
from kcpcommon.workqueue import ShutDown, WorkQueue

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def queue(clock: FakeClock) -> WorkQueue[str]:
    return WorkQueue("test", clock=clock)


async def test_repeated_adds_of_a_waiting_key_merge_into_one(queue: WorkQueue[str]) -> None:
    for key in ("a", "b", "a", "a", "b", "c"):
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]
    assert len(queue) == 0


async def test_a_key_added_while_processing_comes_back_only_after_done(queue: WorkQueue[str]) -> None:
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # dirty, but held by a worker
    second = asyncio.create_task(queue.get())
    await settle()
    assert not second.done()
    queue.done(key)
    assert await second == "a"
    queue.done("a")
    assert len(queue) == 0 and queue.in_flight == 0


async def test_get_waits_for_an_add(queue: WorkQueue[str]) -> None:
    getter = asyncio.create_task(queue.get())
    await settle()
    assert not getter.done()
    queue.add("x")
    assert await getter == "x"
    queue.done("x")


async def test_no_two_workers_ever_hold_the_same_key(queue: WorkQueue[str]) -> None:
    rng = random.Random(7)
    held: set[str] = set()
    processed: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            assert key not in held, f"{key} handed to two workers"
            held.add(key)
            await asyncio.sleep(0)
            if rng.random() < 0.3:
                queue.add(key)  # an event arrives while the key is being processed
            await asyncio.sleep(0)
            held.discard(key)
            processed.append(key)
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for _ in range(300):
        queue.add(rng.choice("abcde"))
        await asyncio.sleep(0)
    while len(queue) or queue.in_flight:
        await asyncio.sleep(0)
    await queue.shut_down_with_drain()
    await asyncio.gather(*workers)
    assert set(processed) == set("abcde")


async def test_add_after_makes_a_key_available_only_once_its_delay_passed(
        queue: WorkQueue[str], clock: FakeClock) -> None:
    queue.add_after("a", 2.0)
    queue.add_after("b", 1.0)
    queue.add_after("now", 0)
    assert len(queue) == 1 and await queue.get() == "now"
    clock.advance(0.999)
    assert len(queue) == 0
    clock.advance(0.001)
    assert len(queue) == 1
    clock.advance(1.0)
    assert [await queue.get(), await queue.get()] == ["b", "a"]


async def test_a_waiting_get_wakes_when_a_delayed_key_comes_due(queue: WorkQueue[str], clock: FakeClock) -> None:
    getter = asyncio.create_task(queue.get())
    await settle()
    queue.add_after("later", 5.0)
    queue.add_after("sooner", 3.0)  # the getter must re-arm its timer for the sooner key
    await settle()
    assert clock.next_deadline() == 1003.0
    clock.advance(3.0)
    assert await asyncio.wait_for(getter, 10) == "sooner"  # answered at all: a bound, not a speed
    queue.done("sooner")


async def test_the_earlier_of_two_delays_for_one_key_wins(queue: WorkQueue[str], clock: FakeClock) -> None:
    queue.add_after("a", 10.0)
    queue.add_after("a", 1.0)
    queue.add_after("a", 5.0)
    clock.advance(1.0)
    assert await queue.get() == "a"
    queue.done("a")
    clock.advance(20.0)
    assert len(queue) == 0  # the later schedules were merged away


async def test_rate_limited_retries_back_off_from_5ms_doubling(queue: WorkQueue[str], clock: FakeClock) -> None:
    for expected in (0.005, 0.01, 0.02, 0.04, 0.08, 0.16):
        queue.add_rate_limited("a")
        clock.advance(expected - 1e-6)
        assert len(queue) == 0
        clock.advance(1e-6)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
    assert queue.num_requeues("a") == 6
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add_rate_limited("a")
    clock.advance(0.005)
    assert len(queue) == 1


async def test_shut_down_wakes_waiting_getters_and_stops_handing_out_keys(queue: WorkQueue[str]) -> None:
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await settle()
    queue.shut_down()
    for getter in getters:
        with pytest.raises(ShutDown):
            await getter
    queue.add("late")
    queue.add_after("later", 1)
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shut_down_with_drain_waits_for_keys_in_flight(queue: WorkQueue[str]) -> None:
    queue.add("a")
    queue.add("b")
    key = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    assert not drain.done()
    with pytest.raises(ShutDown):  # "b" is still queued, but no new work is taken
        await queue.get()
    queue.done(key)
    await asyncio.wait_for(drain, 10)  # answered at all: a bound, not a speed


async def test_prometheus_metrics_report_depth_adds_retries_and_latencies(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue("q1", clock=clock, metrics=PrometheusQueueMetrics(registry, "q1"))
    other: WorkQueue[str] = WorkQueue("q2", clock=clock, metrics=PrometheusQueueMetrics(registry, "q2"))

    def sample(name: str, queue_name: str = "q1") -> float | None:
        return registry.get_sample_value(name, {"name": queue_name})

    queue.add("a")
    queue.add("a")
    queue.add("b")
    other.add("x")
    assert sample("workqueue_depth") == 2 and sample("workqueue_adds_total") == 2
    assert sample("workqueue_adds_total", "q2") == 1
    clock.advance(0.5)
    key = await queue.get()
    clock.advance(0.25)
    queue.done(key)
    queue.add_rate_limited(key)
    assert sample("workqueue_depth") == 1 and sample("workqueue_retries_total") == 1
    assert sample("workqueue_queue_duration_seconds_sum") == 0.5
    assert sample("workqueue_work_duration_seconds_sum") == 0.25
    assert sample("workqueue_work_duration_seconds_count") == 1
