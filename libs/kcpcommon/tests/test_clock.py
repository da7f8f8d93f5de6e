"""The fake clock moves only when told, and wakes sleepers in deadline order."""

from __future__ import annotations

import asyncio

from kcpcommon.clock import FakeClock, RealClock


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_fake_time_stands_still_until_advanced() -> None:
    clock = FakeClock(100.0)
    sleeper = asyncio.create_task(clock.sleep(5))
    await settle()
    assert clock.now() == 100.0 and not sleeper.done() and clock.sleepers() == 1
    clock.advance(4.9)
    await settle()
    assert not sleeper.done()
    clock.advance(0.1)
    await settle()
    assert sleeper.done() and clock.now() == 105.0


async def test_sleepers_wake_in_deadline_order_whatever_order_they_slept_in() -> None:
    clock = FakeClock()
    woke: list[float] = []

    async def sleep(seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(seconds)

    tasks = [asyncio.create_task(sleep(s)) for s in (3, 1, 2, 10)]
    await settle()
    assert clock.next_deadline() == 1
    clock.advance(5)
    await settle()
    assert woke == [1, 2, 3]
    assert clock.sleepers() == 1
    tasks[3].cancel()
    await settle()
    assert clock.sleepers() == 0 and clock.next_deadline() is None


async def test_real_clock_sleeps_for_real() -> None:
    clock = RealClock()
    before = clock.now()
    await clock.sleep(0.01)
    assert clock.now() - before >= 0.009
