"""core/v1 Events, recorded as client-go's record.EventRecorder records them (one implementation).

- `record()` returns at once: a few workers write in the background, so a controller never waits on
  an Event. When the backlog is full, new Events are dropped (and counted), as client-go's
  broadcaster drops them: an Event is never worth stalling a reconcile.
- An identical Event (same object uid, type, reason and message) is counted into the first one
  (`count`, `lastTimestamp`) instead of becoming a new object, as client-go's correlator does. The
  count is written at most every `aggregate_seconds`; the last count of a burst is written when the
  window closes, so nothing is lost.
- Names follow client-go: `<object name>.<unique hex>`.
- Where an Event is written is a sink: kcp's API through a client (the daemons), or the server's own
  registry (kcp-sim-cluster's control plane, in-process).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from kcpcommon.keys import cluster_of
from kcpcommon.kubetime import format_time
from kcpcommon.tasks import cancel_and_wait, spawn

if TYPE_CHECKING:  # the clients load kubernetes_asyncio (~35 MiB): servers that record in-process never need it
    from kcpcommon.clients import BaseClientFactory

log = structlog.get_logger("events")

NORMAL, WARNING = "Normal", "Warning"
MAX_MESSAGE = 1024  # kube's limit on an Event's message
IGNORED_CODES = frozenset({403, 404, 409})  # a namespace going away takes its Events with it


class EventSink(Protocol):
    """Where Events are written; an error is raised as the sink's own exception and logged by the recorder."""

    async def create(self, cluster: str, namespace: str, event: Mapping[str, Any]) -> None: ...

    async def update_count(self, cluster: str, namespace: str, name: str, count: int, last: str) -> None: ...


class ClientEventSink:
    """Events written through kcp's (or any cluster's) API with a daemon's client factory."""

    def __init__(self, clients: BaseClientFactory) -> None:
        self._clients = clients

    def _events(self, cluster: str) -> Any:
        return self._clients.dynamic(cluster).resource("v1", "events", namespaced=True)

    async def create(self, cluster: str, namespace: str, event: Mapping[str, Any]) -> None:
        await self._events(cluster).create(event, namespace=namespace)

    async def update_count(self, cluster: str, namespace: str, name: str, count: int, last: str) -> None:
        await self._events(cluster).patch(name, {"count": count, "lastTimestamp": last}, namespace=namespace)


def event_for(obj: Mapping[str, Any], type_: str, reason: str, message: str, *, component: str, host: str = "",
              stamp: str | None = None) -> dict[str, Any]:
    """The core/v1 Event about `obj` that client-go would write (namespace "default" for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    stamp = stamp or format_time()
    source = {"component": component, **({"host": host} if host else {})}
    involved = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""), "name": meta.get("name", ""),
                "uid": meta.get("uid", ""), "resourceVersion": meta.get("resourceVersion", "")}
    if meta.get("namespace"):
        involved["namespace"] = meta["namespace"]
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta.get('name', '')}.{time.time_ns() + int.from_bytes(os.urandom(2)):x}",
                     "namespace": meta.get("namespace") or "default"},
        "involvedObject": involved, "reason": reason, "message": message[:MAX_MESSAGE], "source": source,
        "type": type_, "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
        "reportingComponent": component, "reportingInstance": host or component,
    }


class _Repeat:
    """An Event already written, and how its count has moved since."""

    __slots__ = ("cluster", "event", "flush", "written_at", "written_count")

    def __init__(self, cluster: str, event: dict[str, Any]) -> None:
        self.cluster = cluster
        self.event = event
        self.written_at = time.monotonic()
        self.written_count = 1
        self.flush: asyncio.TimerHandle | None = None


class EventRecorder:
    """Records Events about objects through a sink; `start()` before recording, `stop()` at the end."""

    def __init__(self, sink: EventSink, *, component: str, host: str = "", workers: int = 4,
                 backlog: int = 20_000, aggregate_seconds: float = 10.0, remembered: int = 10_000) -> None:
        self.sink = sink
        self.component = component
        self.host = host
        self.aggregate_seconds = aggregate_seconds
        self.remembered = remembered
        self.dropped = 0
        self._workers = workers
        self._queue: asyncio.Queue[tuple[str, dict[str, Any], bool]] = asyncio.Queue(backlog)
        self._repeats: OrderedDict[tuple[str, str, str, str, str], _Repeat] = OrderedDict()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [spawn(self._work(), name=f"events:{self.component}:{i}") for i in range(self._workers)]

    async def stop(self, *, drain_seconds: float = 1.0) -> None:
        """Write what is queued (for at most `drain_seconds`), then stop the workers."""
        if self._tasks and not self._queue.empty():
            try:
                await asyncio.wait_for(self._queue.join(), drain_seconds)
            except TimeoutError:
                pass
        for repeat in self._repeats.values():
            if repeat.flush is not None:
                repeat.flush.cancel()
        await cancel_and_wait(*self._tasks)
        self._tasks = []

    def record(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, *, cluster: str | None = None,
               component: str | None = None, host: str | None = None) -> None:
        """Queue an Event about `obj` (its logical cluster from its kcp.io/cluster annotation unless given)."""
        meta = obj.get("metadata") or {}
        where = cluster if cluster is not None else (cluster_of(obj) or "")
        key = (where, meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}", type_, reason,
               message[:MAX_MESSAGE])
        stamp = format_time()
        seen = self._repeats.get(key)
        if seen is not None:
            self._repeats.move_to_end(key)
            seen.event["count"] += 1
            seen.event["lastTimestamp"] = stamp
            self._write_count(key, seen)
            return
        event = event_for(obj, type_, reason, message, component=component or self.component,
                          host=self.host if host is None else host, stamp=stamp)
        self._repeats[key] = _Repeat(where, event)
        while len(self._repeats) > self.remembered:
            _, evicted = self._repeats.popitem(last=False)
            if evicted.flush is not None:
                evicted.flush.cancel()
        self._put(where, event, update=False)

    def forget(self, cluster: str, uid: str) -> None:
        """The object is gone: its repeated Events need no counting any more."""
        for key in [k for k in self._repeats if k[0] == cluster and k[1] == uid]:
            repeat = self._repeats.pop(key)
            if repeat.flush is not None:
                repeat.flush.cancel()

    def _write_count(self, key: tuple[str, str, str, str, str], repeat: _Repeat) -> None:
        """The new count now if the window has passed, else once when it does (one timer per Event)."""
        if repeat.flush is not None:
            return
        wait = repeat.written_at + self.aggregate_seconds - time.monotonic()
        if wait <= 0:
            self._flush(key)
        else:
            repeat.flush = asyncio.get_running_loop().call_later(wait, self._flush, key)

    def _flush(self, key: tuple[str, str, str, str, str]) -> None:
        repeat = self._repeats.get(key)
        if repeat is None:
            return
        repeat.flush = None
        if repeat.event["count"] != repeat.written_count:
            repeat.written_at, repeat.written_count = time.monotonic(), repeat.event["count"]
            self._put(repeat.cluster, dict(repeat.event), update=True)

    def _put(self, cluster: str, event: dict[str, Any], *, update: bool) -> None:
        try:
            self._queue.put_nowait((cluster, event, update))
        except asyncio.QueueFull:
            self.dropped += 1

    async def _work(self) -> None:
        while True:
            cluster, event, update = await self._queue.get()
            meta = event["metadata"]
            try:
                if update:
                    await self.sink.update_count(cluster, meta["namespace"], meta["name"], event["count"],
                                                 event["lastTimestamp"])
                else:
                    await self.sink.create(cluster, meta["namespace"], event)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a sink's failure costs one Event, never the recorder
                code = getattr(exc, "status", None) or getattr(exc, "code", None)  # APIClientError's, or a Status
                if code not in IGNORED_CODES:
                    log.warning("event not recorded", reason=event["reason"], cluster=cluster,
                                namespace=meta["namespace"], name=event["involvedObject"]["name"], code=code,
                                error=str(exc)[:200])
            finally:
                self._queue.task_done()
