"""One etcd watch per resource, fanned out to any number of API watchers.

The cache keeps a window of recent events (across every logical cluster) so
a watch can resume from a resourceVersion without touching etcd. Each event
is encoded once; every watcher gets the same bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

import grpc
import orjson
import structlog
from etcd3aio import Etcd3Client
from etcd3aio.kv import prefix_range_end

from kcp_apiserver.storage.etcd import Storage, StorageError, decode
from kcp_apiserver.storage.keys import ObjectKey, parse_key

log = structlog.get_logger("watchcache")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
Filter = Callable[[dict[str, Any]], bool]
Sink = Callable[[str, "WatchEvent"], bool]  # delivers an event at once; False = the client cannot keep up


class TooOld(Exception):
    """The requested resourceVersion is older than the cache's window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class WatchEvent:
    """A stored change; its JSON is built once and shared by every watcher.

    It holds etcd's bytes and decodes them only when a watcher looks (an event nobody watches costs
    no decoding). Once every watcher has seen it, `compact()` drops the decoded objects again: the
    window then holds bytes, a fraction of the memory of the dicts and nothing for the garbage
    collector to walk.
    """

    __slots__ = (
        "_encoded",
        "_obj",
        "_obj_bytes",
        "_prev",
        "_prev_raw",
        "_prev_revision",
        "_raw",
        "key",
        "revision",
        "type",
    )

    def __init__(self, type_: str, revision: int, key: ObjectKey, raw: bytes, prev_raw: bytes | None = None,
                 prev_revision: int = 0) -> None:
        self.type = type_
        self.revision = revision
        self.key = key
        self._raw = raw  # etcd's value of the object, whose resourceVersion is `revision`
        self._prev_raw = prev_raw
        self._prev_revision = prev_revision
        self._obj: dict[str, Any] | None = None
        self._prev: dict[str, Any] | None = None
        self._obj_bytes: bytes | None = None
        self._encoded: dict[str, bytes] = {}

    @property
    def obj(self) -> dict[str, Any]:
        if self._obj is None:
            self._obj = decode(self._raw, self.revision)
        return self._obj

    @property
    def prev(self) -> dict[str, Any] | None:
        if self._prev is None and self._prev_raw is not None:
            self._prev = decode(self._prev_raw, self._prev_revision)
        return self._prev

    def compact(self) -> None:
        """Drop what can be rebuilt from etcd's bytes."""
        self._obj = self._prev = self._obj_bytes = None
        if self._encoded:
            self._encoded = {}

    def encoded_as(self, type_: str, variant: object, present: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes:
        """The event as another version of the resource sees it; encoded once per variant."""
        key = (type_, variant)
        data = self._encoded.get(key)  # type: ignore[call-overload]
        if data is None:
            data = b'{"type":"' + type_.encode() + b'","object":' + orjson.dumps(present(self.obj)) + b"}\n"
            self._encoded[key] = data  # type: ignore[index]
        return data

    def encoded(self, type_: str | None = None) -> bytes:
        type_ = type_ or self.type
        data = self._encoded.get(type_)
        if data is None:
            if self._obj_bytes is None:
                self._obj_bytes = orjson.dumps(self.obj)
            data = b'{"type":"' + type_.encode() + b'","object":' + self._obj_bytes + b"}\n"
            self._encoded[type_] = data
        return data


class Watcher:
    """One API watch: a scope, a filter, and where its events go.

    With a sink, events are written straight from the dispatch loop (no task
    switch per watcher: this is what keeps 1,000 watchers fast); without one
    they go to a bounded queue (in-process consumers).
    """

    def __init__(self, cache: WatchCache, *, cluster: str | None, namespace: str | None,
                 name: str | None, matches: Filter | None, after_revision: int, maxsize: int,
                 sink: Sink | None = None) -> None:
        self.cache = cache
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.matches = matches
        self.after_revision = after_revision
        self.queue: asyncio.Queue[tuple[str, WatchEvent] | None] = asyncio.Queue(maxsize)
        self.sink = sink
        self.done = asyncio.Event()
        self.closed = False
        self.close_reason = ""

    def in_scope(self, key: ObjectKey) -> bool:
        return ((self.cluster is None or key.cluster == self.cluster)
                and (not self.namespace or key.namespace == self.namespace)
                and (not self.name or key.name == self.name))

    def offer(self, event: WatchEvent) -> None:
        if self.closed or event.revision <= self.after_revision or not self.in_scope(event.key):
            return
        type_ = event.type
        if self.matches is not None:
            now = event.type != DELETED and self.matches(event.obj)
            before = event.prev is not None and self.matches(event.prev)
            if event.type == DELETED:
                now, before = False, self.matches(event.obj)
            if not now and not before:
                return
            if now and not before:
                type_ = ADDED
            elif before and not now:
                type_ = DELETED
        if self.sink is not None:
            if not self.sink(type_, event):
                self.close("watcher too slow; the client must watch again")
            return
        try:
            self.queue.put_nowait((type_, event))
        except asyncio.QueueFull:
            self.close("watcher too slow; the client must watch again")

    def close(self, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self.done.set()
        if self.queue.full():  # make room for the end marker
            self.queue.get_nowait()
        self.queue.put_nowait(None)
        self.cache.unsubscribe(self)


class WatchCache:
    """Watches one resource prefix in etcd and fans events out."""

    def __init__(self, client: Etcd3Client, storage: Storage, prefix: str, namespaced: bool,
                 *, capacity: int = 10_000, watcher_queue: int = 10_000) -> None:
        self.client = client
        self.storage = storage
        self.prefix = prefix
        self.namespaced = namespaced
        self.capacity = capacity
        self.watcher_queue = watcher_queue
        self.events: deque[WatchEvent] = deque()
        self.window_start = 0  # every event with revision > window_start is in `events`
        self.revision = 0  # everything up to here has been dispatched
        self.watchers: set[Watcher] = set()
        self.ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"watchcache:{self.prefix}")
        await self.ready.wait()

    async def stop(self) -> None:
        for watcher in list(self.watchers):
            watcher.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def subscribe(self, *, cluster: str | None, namespace: str | None, name: str | None,
                  matches: Filter | None, after_revision: int, sink: Sink | None = None) -> Watcher:
        """Register a watcher and replay buffered events newer than after_revision."""
        if after_revision < self.window_start:
            raise TooOld(after_revision, self.window_start)
        watcher = Watcher(self, cluster=cluster, namespace=namespace, name=name, matches=matches,
                          after_revision=after_revision, maxsize=self.watcher_queue, sink=sink)
        self.watchers.add(watcher)
        for event in self.events:
            if event.revision > after_revision:
                watcher.offer(event)
                event.compact()
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)

    async def _head_revision(self) -> int:
        while True:
            try:
                return await self.storage.current_revision()
            except StorageError as exc:
                log.warning("etcd unavailable, retrying", prefix=self.prefix, error=str(exc))
                await asyncio.sleep(1.0)

    async def _reset(self, reason: str) -> None:
        """Start over from etcd's head; watchers that relied on the old window must relist."""
        for watcher in list(self.watchers):
            watcher.close(reason)
        self.events.clear()
        head = await self._head_revision()
        self.window_start = self.revision = head

    async def _run(self) -> None:
        await self._reset("")
        self.ready.set()
        end = prefix_range_end(self.prefix.encode())
        while True:
            assert self.client.watch is not None
            try:
                async for resp in self.client.watch.watch(
                    self.prefix, end, start_revision=self.revision + 1, prev_kv=True, progress_notify=True,
                ):
                    if resp.compact_revision:
                        log.warning("watch compacted, resetting cache", prefix=self.prefix,
                                    compact_revision=resp.compact_revision)
                        await self._reset("the watch cache was reset after etcd compaction")
                        break
                    if resp.canceled:
                        break
                    self._dispatch(resp)
            except asyncio.CancelledError:
                raise
            except grpc.aio.AioRpcError as exc:
                log.warning("etcd watch failed, restarting", prefix=self.prefix, code=str(exc.code()))
                await asyncio.sleep(1.0)
            except Exception:
                log.exception("watch cache loop failed, restarting", prefix=self.prefix)
                await asyncio.sleep(1.0)

    def _dispatch(self, resp: Any) -> None:
        for ev in resp.events:
            kv = ev.kv
            key = parse_key(self.prefix, kv.key.decode(), self.namespaced)
            has_prev = bool(ev.prev_kv.key)
            if ev.type == 1:  # DELETE: the last state, at the deletion's revision
                if not has_prev:
                    continue
                event = WatchEvent(DELETED, kv.mod_revision, key, ev.prev_kv.value)
            else:
                type_ = ADDED if kv.create_revision == kv.mod_revision else MODIFIED
                event = WatchEvent(type_, kv.mod_revision, key, kv.value,
                                   ev.prev_kv.value if has_prev else None, ev.prev_kv.mod_revision)
            self._append(event)
            for watcher in list(self.watchers):
                watcher.offer(event)
            event.compact()
        # a progress notification (no events) says etcd has nothing older to send
        latest = resp.events[-1].kv.mod_revision if resp.events else resp.header.revision
        if latest > self.revision:
            self.revision = int(latest)

    def _append(self, event: WatchEvent) -> None:
        self.events.append(event)
        while len(self.events) > self.capacity:
            self.window_start = self.events.popleft().revision


class Follower:
    """In-process list-then-watch over every logical cluster: sees each object, then every change.

    After a cache reset (etcd compaction) it lists again and starts over, so
    the observer never misses a state.
    """

    def __init__(self, storage: Storage, cache: WatchCache, *, observe: Callable[[dict[str, Any], bool], None],
                 reset: Callable[[], None], name: str) -> None:
        self.storage = storage
        self.cache = cache
        self.observe = observe
        self.reset = reset
        self.name = name

    async def resync(self) -> Watcher:
        while True:
            try:
                items, revision, _ = await self.storage.list(self.cache.prefix)
                watcher = self.cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                                               after_revision=revision)
                break
            except (StorageError, TooOld) as exc:
                log.warning("resync failed, retrying", follower=self.name, error=str(exc))
                await asyncio.sleep(1.0)
        self.reset()
        for stored in items:
            self.observe(stored.obj, False)
        return watcher

    async def follow(self, watcher: Watcher) -> None:
        while True:
            item = await watcher.queue.get()
            if item is None:
                watcher = await self.resync()
                continue
            type_, event = item
            self.observe(event.obj, type_ == DELETED)
            event.compact()  # the window must not keep what this consumer decoded
