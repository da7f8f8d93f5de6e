"""Leader election on Leases in a real kcp-apiserver: in-process candidates, then two real processes."""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client import CoordinationV1Api, V1Lease
from structlog.testing import capture_logs

from kcp_process import KcpServer
from kcpcommon.clients import ClientFactory
from kcpcommon.clock import Clock, FakeClock, RealClock
from kcpcommon.leaderelection import (
    JITTER_FACTOR,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    owns,
    shard_for,
)
from kcpcommon.sharding import shard_lease_name
from kcpcommon.tasks import cancel_and_wait

# short timings, so failovers take seconds; in-process candidates go faster still
LEASE, RENEW, RETRY = 1.5, 1.0, 0.2
SLOWEST_POLL = RETRY * (1 + JITTER_FACTOR)  # a standby looks at the lease at least this often
P_LEASE, P_RENEW, P_RETRY = 3.0, 2.0, 0.5
P_SLOWEST_POLL = P_RETRY * (1 + JITTER_FACTOR)
TIMING_FLAGS = ["--leader-elect-lease-duration", str(P_LEASE), "--leader-elect-renew-deadline", str(P_RENEW),
                "--leader-elect-retry-period", str(P_RETRY)]


def config(lease: str, identity: str, *, lease_duration: float = LEASE, renew_deadline: float = RENEW,
           retry_period: float = RETRY) -> LeaderElectionConfig:
    return LeaderElectionConfig(lease_name=lease, identity=identity, lease_duration=lease_duration,
                                renew_deadline=renew_deadline, retry_period=retry_period)


class Candidate:
    """An in-process elector that records when it led."""

    def __init__(self, api: Any, cfg: LeaderElectionConfig, clock: Clock | None = None) -> None:
        self.clock = clock or RealClock()
        self.started: list[float] = []
        self.stopped: list[float] = []
        self.leaders: list[str] = []
        self.work_cancelled = asyncio.Event()
        self.elector = LeaderElector(api, cfg, on_started_leading=self._lead, on_stopped_leading=self._stopped,
                                     on_new_leader=self.leaders.append, clock=self.clock)
        self.task: asyncio.Task[None] | None = None

    async def _lead(self) -> None:
        self.started.append(self.clock.now())
        try:
            await asyncio.Event().wait()
        finally:
            self.work_cancelled.set()

    def _stopped(self) -> None:
        self.stopped.append(self.clock.now())

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run())
        return self

    async def wait_leading(self, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while not self.started:
            assert time.monotonic() < deadline, f"{self.elector.identity} did not lead within {timeout}s"
            assert self.task is None or not self.task.done(), self.task.exception() if self.task else None
            await asyncio.sleep(0.02)
        return self.started[0]


@pytest.fixture
async def api(clients: ClientFactory) -> Any:
    return clients.api_client("admin")


@pytest.fixture
async def candidates(api: Any) -> AsyncIterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(lease: str, identity: str, *, clock: Clock | None = None, **timings: float) -> Candidate:
        candidate = Candidate(api, config(lease, identity, **timings), clock)
        made.append(candidate)
        return candidate

    yield make
    await cancel_and_wait(*[c.task for c in made if c.task is not None])


async def read_lease(api: Any, name: str) -> V1Lease:
    return await CoordinationV1Api(api).read_namespaced_lease(name, "default")


async def asleep(clock: FakeClock, candidates: int, timeout: float = 5.0) -> None:
    """Wait until `candidates` electors sleep on the fake clock again: their lease requests are done."""
    async with asyncio.timeout(timeout):
        while clock.sleepers() < candidates:
            await asyncio.sleep(0.005)


async def run_for(clock: FakeClock, seconds: float, *, candidates: int) -> None:
    """Let `seconds` of fake time pass, waking each sleeper at its deadline and letting its request finish."""
    end = clock.now() + seconds
    while (deadline := clock.next_deadline()) is not None and deadline <= end:
        clock.advance(deadline - clock.now())
        await asleep(clock, candidates)
    clock.advance(end - clock.now())


async def until(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Wait for `condition` to hold; fail saying `what` did not happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout}s"
        await asyncio.sleep(0.02)


async def renewals(api: Any, lease: str, count: int, timeout: float = 10.0) -> None:
    """Wait until the lease's holder has renewed it `count` more times: standbys had that long to misbehave."""
    deadline = time.monotonic() + timeout
    last, renewed = (await read_lease(api, lease)).spec.renew_time, 0
    while renewed < count:
        assert time.monotonic() < deadline, f"{lease} renewed {renewed} of {count} times within {timeout}s"
        await asyncio.sleep(0.05)
        current = (await read_lease(api, lease)).spec.renew_time
        if current != last:
            renewed, last = renewed + 1, current


async def test_the_first_candidate_creates_the_lease_and_leads(candidates: Any, api: Any, unique: str) -> None:
    clock = FakeClock()
    a = candidates(f"first-{unique}", "a", clock=clock).start()
    await a.wait_leading(5)
    assert a.elector.is_leader() and a.leaders == ["a"]
    await asleep(clock, 1)
    spec = (await read_lease(api, f"first-{unique}")).spec
    assert (spec.holder_identity, spec.lease_duration_seconds, spec.lease_transitions) == ("a", 2, 0)
    assert spec.acquire_time is not None and spec.renew_time is not None
    assert clock.next_deadline() == RETRY  # the next renewal is one retry period away
    renewals = [spec.renew_time]
    for _ in range(2):
        await run_for(clock, RETRY, candidates=1)
        renewals.append((await read_lease(api, f"first-{unique}")).spec.renew_time)
    assert renewals == sorted(set(renewals))  # renewed every retry period


async def test_a_standby_waits_while_the_lease_is_held_and_takes_over_at_once_on_release(
        candidates: Any, api: Any, unique: str) -> None:
    lease = f"handover-{unique}"
    clock = FakeClock()
    a = candidates(lease, "a", clock=clock).start()
    await a.wait_leading(5)
    await asleep(clock, 1)
    b = candidates(lease, "b", clock=clock).start()
    await asleep(clock, 2)
    await run_for(clock, LEASE * 2, candidates=2)  # well past the lease duration: a keeps renewing, so b waits
    assert not b.started and b.leaders == ["a"] and b.elector.leader == "a"

    assert a.task is not None
    released_at = clock.now()
    await cancel_and_wait(a.task)  # graceful stop: work cancelled, then the lease released
    assert a.work_cancelled.is_set() and a.stopped and not a.elector.is_leader()
    await run_for(clock, SLOWEST_POLL, candidates=1)  # b's next look at the lease
    b_leads = await b.wait_leading(5)
    assert b_leads - released_at <= SLOWEST_POLL < LEASE  # no waiting for the lease to expire
    spec = (await read_lease(api, lease)).spec
    assert (spec.holder_identity, spec.lease_transitions) == ("b", 1)


@pytest.mark.parametrize("lease_state", ["missing", "released"])
async def test_concurrent_candidates_elect_exactly_one_leader(
        candidates: Any, api: Any, unique: str, lease_state: str) -> None:
    lease = f"race-{lease_state}-{unique}"
    if lease_state == "released":  # everyone reads the same resourceVersion; all but one write get a 409
        body: Any = {"metadata": {"name": lease}, "spec": {"holderIdentity": "", "leaseTransitions": 7}}
        await CoordinationV1Api(api).create_namespaced_lease("default", body)
    racers = [candidates(lease, f"r{i}").start() for i in range(4)]
    await until(lambda: any(r.started for r in racers), "nobody led")
    winner = next(r.elector.identity for r in racers if r.started)
    # once every racer has seen the winner hold a valid lease, none of them will try before it runs out
    await until(lambda: all(r.elector.leader == winner for r in racers), f"not every racer saw {winner} lead")
    leading = [r.elector.identity for r in racers if r.started]
    assert leading == [winner]
    spec = (await read_lease(api, lease)).spec
    assert spec.lease_transitions == (8 if lease_state == "released" else 0)


async def test_an_abandoned_lease_is_taken_only_after_the_lease_duration_from_when_it_was_seen(
        candidates: Any, api: Any, unique: str) -> None:
    lease = f"ghost-{unique}"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body: Any = {"metadata": {"name": lease},
                 "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 2, "acquireTime": now, "renewTime": now,
                          "leaseTransitions": 4}}
    await CoordinationV1Api(api).create_namespaced_lease("default", body)
    started = time.monotonic()
    a = candidates(lease, "a").start()
    leads = await a.wait_leading(5)
    # the holder's leaseDurationSeconds, not ours (1.5 s); the upper bound only says "not a second duration later"
    # (a loaded machine delays a look by far more than SLOWEST_POLL, so that is no bound)
    assert 2.0 <= leads - started < 2 * 2.0
    assert a.leaders == ["ghost", "a"]
    spec = (await read_lease(api, lease)).spec
    assert (spec.holder_identity, spec.lease_transitions) == ("a", 5)


async def test_a_leader_that_cannot_renew_gives_up_before_its_lease_expires(
        kcp: KcpServer, kubeconfig_text: Any, make_proxy: Any, candidates: Any, unique: str) -> None:
    lease = f"partition-{unique}"
    proxy = await make_proxy(kcp.port)
    async with await ClientFactory.load(kubeconfig_text(kcp, port=proxy.port), component="partitioned",
                                        version="0", qps=0, burst=0) as partitioned:
        a = Candidate(partitioned.api_client("admin"), config(lease, "a"))
        a.start()
        await a.wait_leading(5)
        b = candidates(lease, "b").start()
        await until(lambda: b.leaders == ["a"], "b did not see a lead")  # b stands by
        with capture_logs() as logs:
            cut_at = time.monotonic()
            proxy.cut()
            assert a.task is not None
            with pytest.raises(LeadershipLost):
                await asyncio.wait_for(a.task, RENEW + 2)
        gave_up = a.stopped[0]
        assert RENEW - RETRY <= gave_up - cut_at <= RENEW + RETRY + 0.3
        assert a.work_cancelled.is_set()
        assert "leadership lost" in [e["event"] for e in logs]
        b_leads = await b.wait_leading(LEASE + SLOWEST_POLL + 1)
        assert b_leads > gave_up  # never two leaders: a stopped before b started
        assert b_leads - cut_at >= LEASE - RETRY


def test_shards_are_stable_across_processes_and_cover_every_replica() -> None:
    assert shard_for("root:org:team", 1) == 0
    assert shard_for("admin", 7) == shard_for("admin", 7)
    assert shard_for("admin", 1000) == 253  # sha256, not Python's per-process salted hash()
    counts = [0] * 4
    for i in range(4000):
        counts[shard_for(f"tenant-{i}", 4)] += 1
    assert all(900 < c < 1100 for c in counts), counts
    assert [owns("admin", i, 1000) for i in (252, 253)] == [False, True]
    with pytest.raises(ValueError):
        shard_for("admin", 0)


async def test_each_shard_elects_its_own_leader_so_every_shard_leads_at_once(
        candidates: Any, api: Any, unique: str) -> None:
    component = f"sharded-{unique}"
    replicas = [candidates(shard_lease_name(component, shard, 2), f"s{shard}-r{r}").start()
                for shard in (0, 1) for r in (0, 1)]
    await until(lambda: sum(bool(r.started) for r in replicas) == 2, "a leader in each shard")
    # once every replica has seen its shard's leader, no standby tries again before that lease runs out
    await until(lambda: all(r.elector.leader for r in replicas), "every replica saw a leader")
    leading = sorted(r.elector.identity for r in replicas if r.started)
    assert [identity[:2] for identity in leading] == ["s0", "s1"]
    holders = [(await read_lease(api, f"{component}-shard-{shard}")).spec.holder_identity for shard in (0, 1)]
    assert holders == leading
    assert [r.elector.leader for r in replicas] == [holders[0], holders[0], holders[1], holders[1]]


# --- two real processes ---


def leading_intervals(candidate: Any, killed_at: float | None = None) -> list[tuple[float, float]]:
    ends = candidate.times("STOPPED") + ([killed_at] if killed_at else [])
    return list(zip(candidate.times("LEADING"), ends, strict=False))


async def test_two_replicas_fail_over_on_sigkill_and_hand_over_at_once_on_sigterm(
        start_candidate: Any, api: Any, unique: str) -> None:
    lease = f"replicas-{unique}"
    flags = ["--leader-elect-resource-name", lease, *TIMING_FLAGS, "--work-seconds", "0.2"]
    a = start_candidate(*flags)
    await a.wait_for("LEADING")
    b = start_candidate(*flags)
    await b.wait_for("NEW-LEADER")
    await renewals(api, lease, 2)  # a keeps the lease while b looks on
    assert not b.times("LEADING")

    # the leader dies without a word: the standby takes over once the lease runs out
    killed_at = a.send(signal.SIGKILL)
    b_leads = await b.wait_for("LEADING", P_LEASE + 2 * P_SLOWEST_POLL)
    assert P_LEASE - P_RETRY <= b_leads - killed_at <= P_LEASE + 2 * P_SLOWEST_POLL
    assert await a.exit_code() == -signal.SIGKILL

    # a new standby; the leader stops gracefully and hands the lease over at once
    c = start_candidate(*flags)
    await c.wait_for("NEW-LEADER")
    await renewals(api, lease, 1)
    assert not c.times("LEADING")
    terminated_at = b.send(signal.SIGTERM)
    c_leads = await c.wait_for("LEADING", P_LEASE)
    assert await b.exit_code() == 0
    # handed over: c leads well before b's lease could have run out (that takes P_LEASE from b's last renewal,
    # at least P_LEASE - P_RETRY after the signal); how soon after b stepped down is a loaded machine's business
    assert c_leads - terminated_at < 2.0 < P_LEASE - P_RETRY
    assert b.times("STEPPED-DOWN")[0] <= c_leads

    # never two leaders at once
    intervals = sorted(leading_intervals(a, killed_at) + leading_intervals(b) + leading_intervals(c, time.time()))
    assert len(intervals) == 3
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert end <= start, intervals

    # the lease tells the same story
    spec = (await read_lease(api, lease)).spec
    assert spec.lease_transitions == 2
    assert spec.holder_identity == c.details("NEW-LEADER")[-1] != b.details("NEW-LEADER")[-1]
    c.send(signal.SIGTERM)
    assert await c.exit_code() == 0
