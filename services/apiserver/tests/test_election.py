"""Leader election among API server replicas on a real etcd: one leads at a time, a
leader that cannot renew stops, and a standby takes over as soon as the leader lets go."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.storage.election import LeaderElection
from kcp_apiserver.storage.etcd import Unavailable


class Leading:
    """Records who leads; fails the test if two lead at once."""

    def __init__(self) -> None:
        self.current: set[str] = set()
        self.history: list[str] = []
        self.changed = asyncio.Event()
        self.violations: list[str] = []

    def lead(self, who: str) -> Callable[[], object]:
        async def run() -> None:
            if self.current:
                self.violations.append(f"{who} leads beside {self.current}")
            self.current.add(who)
            self.history.append(who)
            self.changed.set()
            try:
                await asyncio.Event().wait()
            finally:
                self.current.discard(who)
                self.changed.set()
        return run

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(10):
            while not condition():
                self.changed.clear()
                await self.changed.wait()


def election(etcd: Etcd3Client, name: str, identity: str, **kw: float) -> LeaderElection:
    return LeaderElection(etcd, name, identity, lease_seconds=3, renew_deadline=2.0, retry_period=0.1, **kw)


async def test_one_replica_leads_and_a_standby_takes_over_when_it_stops(etcd: Etcd3Client) -> None:
    name, leading = f"t-{uuid.uuid4().hex[:6]}", Leading()
    first = asyncio.create_task(election(etcd, name, "a").run(leading.lead("a")))
    await leading.until(lambda: leading.current == {"a"})
    standby = election(etcd, name, "b")
    claims: list[bool] = []
    claim = standby._claim

    async def counted(lease: int) -> bool:
        claims.append(await claim(lease))
        leading.changed.set()
        return claims[-1]

    standby._claim = counted  # type: ignore[method-assign]
    second = asyncio.create_task(standby.run(leading.lead("b")))
    await leading.until(lambda: len(claims) >= 2)  # b tried twice while a held the key, and lost both times
    assert claims[:2] == [False, False] and leading.history == ["a"]
    first.cancel()
    await leading.until(lambda: leading.current == {"b"})  # released at once, not after the lease's 3 s
    assert leading.history[:2] == ["a", "b"] and not leading.violations
    second.cancel()
    await asyncio.gather(first, second, return_exceptions=True)


async def test_a_leader_that_cannot_renew_stops_leading(etcd: Etcd3Client, monkeypatch: pytest.MonkeyPatch) -> None:
    name, leading = f"t-{uuid.uuid4().hex[:6]}", Leading()
    elector = election(etcd, name, "a")

    async def unreachable(lease: int) -> bool:
        raise Unavailable("etcd is unreachable")

    task = asyncio.create_task(elector.run(leading.lead("a")))
    await leading.until(lambda: leading.current == {"a"})
    monkeypatch.setattr(elector, "_keep_alive", unreachable)
    await leading.until(lambda: not leading.current)  # within the renew deadline, before the lease expires
    assert set(leading.history) == {"a"} and not leading.violations
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_restarted_replica_takes_its_own_key_back(etcd: Etcd3Client,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    name, leading = f"t-{uuid.uuid4().hex[:6]}", Leading()
    crashed = election(etcd, name, "host:6443")

    async def no_release(lease: int) -> None:  # a kill -9 revokes nothing
        return None

    monkeypatch.setattr(crashed, "_release", no_release)
    task = asyncio.create_task(crashed.run(leading.lead("old")))
    await leading.until(lambda: leading.current == {"old"})
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    other = asyncio.create_task(election(etcd, name, "elsewhere:6443").run(leading.lead("other")))
    restarted = asyncio.create_task(election(etcd, name, "host:6443").run(leading.lead("restarted")))
    await leading.until(lambda: leading.current == {"restarted"})
    assert "other" not in leading.history and not leading.violations
    for t in (other, restarted):
        t.cancel()
    await asyncio.gather(other, restarted, return_exceptions=True)
