"""The controller runner (controller-runtime's reconciler contract, in asyncio).

A controller is a work queue of keys, a `reconcile(key)` function and N
workers. Reconciliation is level-based: the key, never the event, is queued,
and `reconcile` looks at current state. One dispatcher turns each outcome into
queue calls and metrics:

| outcome                         | queue                      | `reconcile_total{result}` |
|---------------------------------|----------------------------|---------------------------|
| returns None / `Result()`       | forget                     | success                   |
| returns `Result(requeue_after=s)` | forget, add_after(s)     | requeue_after             |
| raises `TerminalError`          | forget (no retry), logged  | terminal                  |
| raises anything else            | add_rate_limited (backoff) | error                     |

A 409 (Conflict, AlreadyExists) or 404 is an expected race with another writer: it is retried the
same way but logged at info, without a traceback; anything else is logged as an error.

An exception never kills a worker. Each work item runs with structlog context
`controller`, `key`, `cluster`, `namespace`, `name` bound, so every line the
reconciler logs says what it was working on.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from .clock import Clock, RealClock
from .metrics import PrometheusQueueMetrics, get_or_create
from .tasks import cancel_and_wait, spawn
from .workqueue import ShutDown, WorkQueue

K = TypeVar("K", bound=Hashable)

# what a reconcile meets when another writer got there first: retried, but no error in the log
RACE_CODES = frozenset({404, 409})  # NotFound, Conflict, AlreadyExists: another writer got there first


def expected_race(exc: BaseException) -> bool:
    """An API error another writer's race explains: a client's `APIClientError` (`status`) or a server's own
    `APIError` (`code`). Read by attribute, so the in-process controllers of kcp-apiserver need not import
    kubernetes_asyncio (kcpcommon.errors does; it costs the server ~35 MiB)."""
    code = getattr(exc, "status", None) or getattr(exc, "code", None)
    return isinstance(code, int) and code in RACE_CODES

# log field names, the same in every controller
CONTROLLER = "controller"
KEY = "key"
CLUSTER = "cluster"
NAMESPACE = "namespace"
NAME = "name"

RESULTS = ("success", "error", "terminal", "requeue_after")
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SYNC_POLL_PERIOD = 0.1  # client-go's WaitForCacheSync polls this often

log = structlog.get_logger("kcpcommon.controller")


@dataclass(frozen=True, slots=True)
class Result:
    """What a successful reconcile asks for: `requeue_after` seconds until the key comes back, or nothing."""

    requeue_after: float | None = None


class TerminalError(Exception):
    """Retrying cannot help (e.g. an invalid spec): log it, count it, do not requeue."""


Reconciler = Callable[[K], Awaitable[Result | None]]
SyncCheck = Callable[[], Any] | Awaitable[Any]


class ReconcileMetrics:
    """`<component>_reconcile_total{controller,result}` and `<component>_reconcile_time_seconds{controller}`."""

    def __init__(self, registry: CollectorRegistry, *, component: str, controller: str) -> None:
        prefix = re.sub(r"[^a-zA-Z0-9_]", "_", component)
        total = get_or_create(Counter, registry, f"{prefix}_reconcile_total",
                              "Total number of reconciliations per controller and result", ("controller", "result"))
        self._results = {result: total.labels(controller, result) for result in RESULTS}  # all exported at 0
        self._time = get_or_create(Histogram, registry, f"{prefix}_reconcile_time_seconds",
                                   "How long in seconds a reconciliation takes, per controller", ("controller",),
                                   buckets=RECONCILE_BUCKETS).labels(controller)

    def observe(self, result: str, seconds: float) -> None:
        self._results[result].inc()
        self._time.observe(max(0.0, seconds))


class Controller(Generic[K]):
    """Runs `reconcile` over queued keys with `workers` workers, once the caches have synced."""

    def __init__(self, name: str, reconcile: Reconciler[K], *, workers: int = 1, queue: WorkQueue[K] | None = None,
                 registry: CollectorRegistry | None = None, component: str = "kcp",
                 clock: Clock | None = None) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.workers = workers
        self._reconcile = reconcile
        self._clock = clock or RealClock()
        self.queue: WorkQueue[K] = queue or WorkQueue(
            name, clock=self._clock,
            metrics=PrometheusQueueMetrics(registry, name) if registry is not None else None)
        self._metrics = (ReconcileMetrics(registry, component=component, controller=name)
                         if registry is not None else None)
        self._log = log.bind(**{CONTROLLER: name})
        self._stopping = asyncio.Event()

    def enqueue(self, key: K) -> None:
        """Queue `key` for reconciliation (what event handlers call)."""
        self.queue.add(key)

    async def start(self, wait_for: Sequence[SyncCheck] = ()) -> None:
        """Wait for the caches, run the workers; return after `stop()`, or drain and re-raise when cancelled.

        `wait_for` holds awaitables, or callables returning a bool or an
        awaitable (`informer.has_synced`, `informer.wait_for_sync`); workers
        start only once every one of them reports synced.
        """
        for check in wait_for:
            await _wait_synced(check, self._clock)
        self._log.info("caches synced, starting workers", workers=self.workers)
        workers = [spawn(self._work(), name=f"controller:{self.name}:worker:{i}") for i in range(self.workers)]
        stop = spawn(self._stopping.wait(), name=f"controller:{self.name}:stop")
        try:
            await asyncio.wait([stop, *workers], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._drain(workers)
            raise
        finally:
            stop.cancel()
        await self._drain(workers)

    def stop(self) -> None:
        """Stop taking work; `start()` returns once the keys in hand are reconciled."""
        self._stopping.set()

    async def _drain(self, workers: list[asyncio.Task[None]]) -> None:
        """Let the workers finish their keys; a second cancellation abandons them."""
        self._log.info("stopping: finishing in-flight work", in_flight=self.queue.in_flight)
        self.queue.shut_down()
        try:
            await asyncio.wait(workers)
        except asyncio.CancelledError:
            await cancel_and_wait(*workers)
            raise
        self._log.info("stopped")

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self._process(key)
            except Exception:  # a bug in the dispatcher itself must not take the worker down either
                self._log.exception("processing a work item failed", key=str(key))
            finally:
                self.queue.done(key)

    async def _process(self, key: K) -> None:
        with structlog.contextvars.bound_contextvars(**_log_fields(self.name, key)):
            started = self._clock.now()
            try:
                outcome = await self._reconcile(key)
            except TerminalError as exc:
                result = "terminal"
                self._log.error("reconcile failed terminally, not retrying", error=str(exc))
                self.queue.forget(key)
            except Exception as exc:
                result = "error"
                if expected_race(exc):
                    self._log.info("reconcile raced another writer, retrying with backoff", error=str(exc),
                                   requeues=self.queue.num_requeues(key))
                else:
                    self._log.exception("reconcile failed, retrying with backoff",
                                        requeues=self.queue.num_requeues(key))
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                result = "success"
                requeue_after = getattr(outcome, "requeue_after", None)
                if requeue_after is not None:
                    result = "requeue_after"
                    self.queue.add_after(key, requeue_after)
            if self._metrics is not None:  # a cancelled reconcile is not counted
                self._metrics.observe(result, self._clock.now() - started)


def _log_fields(controller: str, key: Hashable) -> dict[str, Any]:
    """The constant log fields for a key; an ObjectKey-like key also gives its cluster, namespace and name."""
    fields: dict[str, Any] = {CONTROLLER: controller, KEY: str(key)}
    for field in (CLUSTER, NAMESPACE, NAME):
        value = getattr(key, field, None)
        if value is not None:
            fields[field] = value
    return fields


async def _wait_synced(check: SyncCheck, clock: Clock) -> None:
    if not callable(check):
        if await check is False:
            raise RuntimeError("cache did not sync")
        return
    while True:
        synced = check()
        if inspect.isawaitable(synced):
            synced = await synced
        if synced is None or synced:
            return
        await clock.sleep(SYNC_POLL_PERIOD)
