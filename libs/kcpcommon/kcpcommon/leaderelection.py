"""Leader election on a coordination.k8s.io/v1 Lease (client-go's `tools/leaderelection`).

Controllers run as several replicas; one leads, the others wait. The Lease
lives in the kcp API like any object, and writes to it are guarded by its
resourceVersion, so two candidates racing for it cannot both win.

Expiry follows client-go: a lease counts as held until `leaseDurationSeconds`
after this process last *saw it change*, on this process's own monotonic
clock. Comparing the holder's `renewTime` with our wall clock would trust two
machines' clocks to agree; observing changes locally does not.

The leader renews every `retry_period`, and gives up once `renew_deadline`
has passed without a successful renewal, which is before `lease_duration`
runs out for everyone else. On a graceful stop it releases the lease (empty
holder) after its work has finished, so a standby takes over at once instead
of waiting for the lease to expire.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import random
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog
from kubernetes_asyncio.client import ApiClient, CoordinationV1Api, V1Lease

from .clock import Clock, RealClock
from .errors import (
    APIAlreadyExistsError,
    APIClientError,
    APIConflictError,
    APINotFoundError,
    translate,
)
from .sharding import owns, shard_for
from .tasks import cancel_and_wait, spawn

__all__ = ["LeaderElectionConfig", "LeaderElector", "LeaderRecord", "LeadershipLost", "default_identity", "owns",
           "shard_for"]

JITTER_FACTOR = 1.2  # client-go's: candidates retry after retry_period * [1, 2.2)

log = structlog.get_logger("kcpcommon.leaderelection")

Callback = Callable[[], Any]


def default_identity() -> str:
    """`<hostname>_<pid>_<random>`: unique even for two processes that reuse a pid in two pods."""
    return f"{socket.gethostname()}_{os.getpid()}_{secrets.token_hex(3)}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period."""

    lease_name: str
    namespace: str = "default"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew_deadline must be greater than {JITTER_FACTOR} * retry_period")
        if not self.identity:
            raise ValueError("identity must not be empty")


class LeadershipLost(Exception):
    """The lease could not be renewed before the renew deadline (or another holder took it)."""


@dataclass(frozen=True)
class LeaderRecord:
    """The Lease spec fields leader election reads and writes."""

    holder: str
    lease_duration: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int

    @classmethod
    def from_lease(cls, lease: V1Lease) -> LeaderRecord:
        spec = lease.spec
        if spec is None:
            return cls("", 0, None, None, 0)
        return cls(spec.holder_identity or "", spec.lease_duration_seconds or 0, spec.acquire_time,
                   spec.renew_time, spec.lease_transitions or 0)

    def spec(self) -> dict[str, Any]:
        return {"holderIdentity": self.holder, "leaseDurationSeconds": self.lease_duration,
                "acquireTime": _micro_time(self.acquire_time), "renewTime": _micro_time(self.renew_time),
                "leaseTransitions": self.transitions}


def _micro_time(value: datetime | None) -> str | None:
    """Kubernetes' MicroTime: RFC 3339 in UTC with microseconds."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if value else None


class LeaderElector:
    """Campaigns for one Lease and runs `on_started_leading` while it holds it.

    `on_started_leading()` may return an awaitable: it runs as a task, and is
    cancelled (and awaited, so controllers drain) when leadership ends, before
    the lease is released. `on_stopped_leading()` and `on_new_leader(identity)`
    may be plain or async callables.
    """

    def __init__(self, api_client: ApiClient, config: LeaderElectionConfig, *,
                 on_started_leading: Callback | None = None, on_stopped_leading: Callback | None = None,
                 on_new_leader: Callable[[str], Any] | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        self.config = config
        self._api = CoordinationV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._observed: LeaderRecord | None = None
        self._observed_time = 0.0
        self._reported_leader = ""
        self._leading = False
        self._notifications: set[asyncio.Task[Any]] = set()
        self._log = log.bind(lease=f"{config.namespace}/{config.lease_name}", identity=config.identity)

    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def leader(self) -> str:
        """The holder as last observed ("" when free or unknown)."""
        return self._observed.holder if self._observed else ""

    def is_leader(self) -> bool:
        return self._leading and self.leader == self.identity

    async def run(self) -> None:
        """Campaign until elected, lead until leadership ends, then step down.

        Returns when the leading work returned by itself; raises `LeadershipLost`
        when the lease could not be kept, the leading work's exception when it
        failed, and `CancelledError` when cancelled (after releasing the lease).
        """
        try:
            try:
                await self._acquire()
            except asyncio.CancelledError:
                if self.config.release_on_cancel:
                    await self.release()  # cancelled just after winning: do not make the others wait
                raise
            self._leading = True
            self._log.info("became leader")
            leading = spawn(self._lead(), name=f"leaderelection:{self.config.lease_name}:leading")
            renewing = spawn(self._renew(), name=f"leaderelection:{self.config.lease_name}:renewing")
            try:
                await asyncio.wait([leading, renewing], return_when=asyncio.FIRST_COMPLETED)
            finally:
                # stop the work first, renewing all the while, and only then let go of the lease
                await cancel_and_wait(leading)
                await cancel_and_wait(renewing)
                await self._step_down(lost=renewing.done() and not renewing.cancelled())
            if not renewing.cancelled() and renewing.exception() is not None:
                raise renewing.exception()  # type: ignore[misc]
            if not leading.cancelled() and leading.exception() is not None:
                raise leading.exception()  # type: ignore[misc]
        finally:
            await cancel_and_wait(*self._notifications)

    async def release(self) -> bool:
        """Give the lease up now if we hold it (empty holder, 1 s duration); True unless the write failed."""
        if self._observed is None or self._observed.holder != self.identity:
            return True
        try:
            async with asyncio.timeout(self.config.renew_deadline), translate():
                lease = await self._api.read_namespaced_lease(self.config.lease_name, self.config.namespace)
                current = LeaderRecord.from_lease(lease)
                if current.holder != self.identity:
                    return True
                now = datetime.now(UTC)
                released = LeaderRecord("", 1, now, now, current.transitions)
                await self._replace(lease, released)
        except (APIClientError, TimeoutError) as exc:
            self._log.warning("failed to release the lease", error=str(exc))
            return False
        self._observe(released)
        self._log.info("released the lease")
        return True

    # --- campaigning ---

    async def _acquire(self) -> None:
        self._log.info("attempting to acquire the lease")
        while not await self._attempt(self.config.renew_deadline):
            await self._clock.sleep(self.config.retry_period * (1.0 + JITTER_FACTOR * self._rng.random()))

    async def _lead(self) -> None:
        if self._on_started_leading is None:
            await asyncio.get_running_loop().create_future()  # lead until cancelled
            return
        result = self._on_started_leading()
        if inspect.isawaitable(result):
            await result

    async def _renew(self) -> None:
        last_renewal = self._clock.now()
        while True:
            await self._clock.sleep(self.config.retry_period)
            remaining = self.config.renew_deadline - (self._clock.now() - last_renewal)
            if remaining > 0 and await self._attempt(remaining):
                last_renewal = self._clock.now()
                continue
            if self.leader not in ("", self.identity):
                raise LeadershipLost(f"lease taken over by {self.leader}")
            if self._clock.now() - last_renewal >= self.config.renew_deadline:
                raise LeadershipLost(f"lease not renewed within {self.config.renew_deadline}s")

    async def _step_down(self, *, lost: bool) -> None:
        self._leading = False
        if lost:
            self._log.error("leadership lost")
        if self.config.release_on_cancel:
            await self.release()
        self._log.info("stopped leading")
        if self._on_stopped_leading is not None:
            result = self._on_stopped_leading()
            if inspect.isawaitable(result):
                await result

    async def _attempt(self, timeout: float) -> bool:  # noqa: ASYNC109 - False on timeout
        try:
            async with asyncio.timeout(timeout):
                return await self._try_acquire_or_renew()
        except (APIClientError, TimeoutError) as exc:
            self._log.warning("lease request failed", error=str(exc) or type(exc).__name__)
            return False

    async def _try_acquire_or_renew(self) -> bool:
        """One round of client-go's tryAcquireOrRenew: True when we hold the lease afterwards."""
        now = datetime.now(UTC)
        duration = math.ceil(self.config.lease_duration)
        try:
            async with translate():
                lease = await self._api.read_namespaced_lease(self.config.lease_name, self.config.namespace)
        except APINotFoundError:
            return await self._create(LeaderRecord(self.identity, duration, now, now, 0))
        old = LeaderRecord.from_lease(lease)
        self._observe(old)
        if old.holder and old.holder != self.identity and self._observed_valid():
            return False
        if old.holder == self.identity:
            new = LeaderRecord(self.identity, duration, old.acquire_time or now, now, old.transitions)
        else:
            new = LeaderRecord(self.identity, duration, now, now, old.transitions + 1)
        try:
            async with translate():
                await self._replace(lease, new)
        except APIConflictError:
            return False  # someone else wrote it first; look again next round
        self._observe(new)
        return True

    async def _create(self, record: LeaderRecord) -> bool:
        body: Any = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.config.lease_name, "namespace": self.config.namespace},
                "spec": record.spec()}
        try:
            async with translate():
                await self._api.create_namespaced_lease(self.config.namespace, body)
        except (APIAlreadyExistsError, APIConflictError):
            return False
        self._observe(record)
        return True

    async def _replace(self, lease: V1Lease, record: LeaderRecord) -> None:
        """Write `record` into the lease, guarded by the resourceVersion we read it at."""
        body = self._serialize(lease)
        body["spec"] = {**(body.get("spec") or {}), **record.spec()}
        await self._api.replace_namespaced_lease(self.config.lease_name, self.config.namespace, body)

    # --- what we saw ---

    def _observe(self, record: LeaderRecord) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_time = self._clock.now()
        if record.holder and record.holder != self._reported_leader:
            self._reported_leader = record.holder
            self._log.info("new leader observed", leader=record.holder)
            self._notify_new_leader(record.holder)

    def _observed_valid(self) -> bool:
        """The observed holder's lease has not run out, by our clock since we saw it change."""
        if self._observed is None:
            return False
        duration = self._observed.lease_duration or self.config.lease_duration
        return self._observed_time + duration > self._clock.now()

    def _notify_new_leader(self, identity: str) -> None:
        if self._on_new_leader is None:
            return
        try:
            result = self._on_new_leader(identity)
        except Exception:
            self._log.exception("on_new_leader callback failed")
            return
        if inspect.isawaitable(result):
            task = spawn(_await(result), name=f"leaderelection:{self.config.lease_name}:on_new_leader")
            self._notifications.add(task)
            task.add_done_callback(self._notifications.discard)


async def _await(awaitable: Awaitable[Any]) -> None:
    await awaitable
