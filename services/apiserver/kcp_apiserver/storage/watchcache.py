"""One etcd watch per resource, fanned out to any number of API watchers.

The cache keeps the current state of every object (etcd's bytes, see cachestate) and a window of
recent events, across every logical cluster: lists and watches that accept any state are served
from it, and a watch can resume from a resourceVersion inside the window without touching etcd.
Each event is encoded once; every watcher gets the same bytes.

The etcd watch resumes after the last revision dispatched, never after a revision etcd merely
announced, so a restart can neither skip nor repeat an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Protocol

import grpc
import orjson
import structlog
from etcd3aio import Etcd3Client
from etcd3aio.kv import prefix_range_end

from kcp_apiserver.storage import watchframing
from kcp_apiserver.storage.cachestate import Cached, CacheState
from kcp_apiserver.storage.etcd import Storage, StorageError, decode
from kcp_apiserver.storage.etcdwatch import is_progress_notify, watch_range
from kcp_apiserver.storage.keys import ObjectKey, parse_key
from kcp_apiserver.storage.watchframing import ADDED, DELETED, MODIFIED
from kcpcommon.backoff import Backoff

log = structlog.get_logger("watchcache")

Filter = Callable[[dict[str, Any]], bool]
Scope = tuple[str | None, str | None, str | None]  # cluster, namespace, name; None = any
TOO_SLOW = "forcing watcher close due to unresponsiveness: the client did not keep up with the events"
# Events are written to each watcher in batches: one transport write (one TLS record, one send) per
# watcher for every event dispatched since the last flush, instead of one per event.
# A flush costs about the same per watcher however many events its batch holds (a transport write,
# a TLS record, a send), so the next flush is due FLUSH_DUTY times what the last one took (at least
# FLUSH_INTERVAL, at most FLUSH_INTERVAL_MAX) after it ended: flushing then takes at most about
# 1/(1 + FLUSH_DUTY) of the loop, and under load the batches grow instead of the backlog (what keeps
# 1,000 watchers at 200 writes/s cheap). An event dispatched once that is due goes out at once: at low
# rates (a lone change from kubectl or a controller, or 1,000 watchers at 20 writes/s) nothing waits
# for a batch to fill. (It used to wait a whole interval whenever a flush had happened in the last
# 100 ms: 1,000 watchers at 20 writes/s got p50 93 ms, p99 174 ms; see bench/fanout_watchers.py.)
# A flush to 1,000 TLS watchers costs 10-13 ms of CPU (a transport write each, mostly uvloop's TLS write
# and its send), so with a duty of 4 the next flush was due 40-52 ms later: at 20 writes/s (an event
# every 50 ms) about every other event waited for a batch that never filled. A duty of 2 (a third of the
# loop) sends those at once and still batches 200 writes/s (an event every 5 ms).
# A batch is flushed at once when it holds FLUSH_BYTES: a connection whose client is behind holds its
# own (encrypted) copy of at most about one batch beyond its transport's high-water mark.
FLUSH_INTERVAL = 0.01
FLUSH_INTERVAL_MAX = 0.1
FLUSH_DUTY = 2.0
FLUSH_BYTES = 32 * 1024
# The window also holds at most WINDOW_BYTES of etcd's values per resource: deleting a namespace of
# 5,000 ConfigMaps of 20 kB left 100 MB of DELETED events' last states in a window counted only in events
# (server RSS 30 s after: 229 MiB, 152 MiB with this bound, 95 MiB idle; bench/bench_nsdelete.py --payload
# 20000). A watch resuming from before the window is told 410 Gone and relists, as from before a
# count-bounded window.
WINDOW_BYTES = 32 * 1024 * 1024
LOAD_PAGE = 1000  # most keys per etcd read when (re)loading the state (fewer when objects are large)
RESTART_MIN, RESTART_MAX = 0.05, 2.0  # seconds before the etcd watch is restarted (doubling while it fails)
LOAD_RETRY_MIN, LOAD_RETRY_MAX = 0.5, 5.0  # seconds before loading the state from etcd is tried again

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "TOO_SLOW",
    "Batch",
    "Cached",
    "Filter",
    "Sink",
    "TooOld",
    "WatchCache",
    "WatchEvent",
    "Watcher",
    "flush_delay",
    "flush_interval",
]


class TooOld(Exception):
    """The requested resourceVersion is older than the cache's window."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class WatchEvent:
    """A stored change; its JSON is built once and shared by every watcher.

    It holds etcd's bytes (the same bytes object as the cache's state, while the key is unchanged)
    and decodes them only when a watcher looks (an event nobody watches costs no decoding). Once
    every watcher has seen it, `compact()` drops the decoded objects again: the window then holds
    bytes, a fraction of the memory of the dicts and nothing for the garbage collector to walk.
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
        self._encoded: dict[Any, bytes] = {}

    @property
    def size(self) -> int:
        """The bytes of etcd's values it holds (shared with the state or a neighbour or not: an upper bound)."""
        return len(self._raw) + (len(self._prev_raw) if self._prev_raw is not None else 0)

    @property
    def obj(self) -> dict[str, Any]:
        if self._obj is None:
            self._obj = decode(self._raw, self.revision)
        return self._obj

    @property
    def raw(self) -> bytes:
        """etcd's bytes of the object (an in-process informer keeps these rather than a decoded copy)."""
        return self._raw

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
        data = self._encoded.get(key)
        if data is None:
            data = watchframing.frame(type_, orjson.dumps(present(self.obj)))
            self._encoded[key] = data
        return data

    def encoded(self, type_: str | None = None) -> bytes:
        type_ = type_ or self.type
        data = self._encoded.get(type_)
        if data is None:
            if self._obj_bytes is None:
                self._obj_bytes = orjson.dumps(self.obj)
            data = watchframing.frame(type_, self._obj_bytes)
            self._encoded[type_] = data
        return data


class Batch:
    """The framed events of one dispatch batch for one encoding: one immutable bytes object that every
    watcher of a group is handed (a slow watcher keeps a reference, never a copy).

    `wire` is the sink's own transport form (an HTTP chunk), made by the first sink that writes
    the batch and then shared by the others.
    """

    __slots__ = ("data", "events", "wire")

    def __init__(self, data: bytes, events: int) -> None:
        self.data = data
        self.events = events
        self.wire: bytes | None = None


class Sink(Protocol):
    """Where a watcher's events go, as bytes (an HTTP response).

    Watchers of one scope without a filter whose sinks have equal `encoding`s get the same bytes
    for an event: the cache encodes it and joins a dispatch batch once for all of them (`None`:
    this sink's bytes are its own, e.g. Table rows).
    """

    encoding: Hashable | None

    def encode(self, type_: str, event: WatchEvent) -> bytes: ...

    def write(self, batch: Batch) -> bool:
        """Send a batch of framed events at once; False = the client is gone or too slow."""
        ...


class Watcher:
    """One API watch: a scope, a filter, and where its events go.

    With a sink, events are collected per dispatch batch and written once per batch, straight from
    the dispatch loop (no task switch per watcher); without one they go to a bounded queue
    (in-process consumers).
    """

    def __init__(self, cache: WatchCache, *, cluster: str | None, namespace: str | None,
                 name: str | None, matches: Filter | None, after_revision: int, maxsize: int,
                 sink: Sink | None = None) -> None:
        self.cache = cache
        self.cluster = cluster
        self.namespace = namespace or None
        self.name = name or None
        self.matches = matches
        self.after_revision = after_revision
        self.queue: asyncio.Queue[tuple[str, WatchEvent] | None] = asyncio.Queue(maxsize)
        self.sink = sink
        self.pending: list[bytes] = []  # this batch's events, when the watcher is not in a group
        self.group: _Group | None = None
        self.done = asyncio.Event()
        self.closed = False
        self.close_reason = ""

    @property
    def scope(self) -> Scope:
        return (self.cluster, self.namespace, self.name)

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
            if not self.pending:
                self.cache._dirty.append(self)
            data = self.sink.encode(type_, event)
            self.pending.append(data)
            self.cache._batch_bytes += len(data)
            return
        try:
            self.queue.put_nowait((type_, event))
        except asyncio.QueueFull:
            self.close(TOO_SLOW)

    def flush(self) -> None:
        """Write this batch's events at once."""
        pending, self.pending = self.pending, []
        if pending and not self.closed and self.sink is not None:
            self.send(Batch(pending[0] if len(pending) == 1 else b"".join(pending), len(pending)))

    def send(self, batch: Batch) -> None:
        assert self.sink is not None
        if not self.sink.write(batch):
            self.close(TOO_SLOW)

    def close(self, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self.pending = []
        self.done.set()
        if self.queue.full():  # make room for the end marker
            self.queue.get_nowait()
        self.queue.put_nowait(None)
        self.cache.unsubscribe(self)


class _Group:
    """Watchers of one scope, without filter, sharing one encoding: an event is matched and encoded once
    for all of them, and each dispatch batch is joined once and handed to each as the same bytes."""

    def __init__(self, cache: WatchCache, scope: Scope, encoding: Hashable) -> None:
        self.cache = cache
        self.scope = scope
        self.encoding = encoding
        self.members: dict[Watcher, None] = {}  # insertion-ordered, O(1) removal
        self.pending: list[bytes] = []

    def offer(self, event: WatchEvent) -> None:
        if not self.pending:
            self.cache._dirty.append(self)
        data = next(iter(self.members)).sink.encode(event.type, event)  # type: ignore[union-attr]
        self.pending.append(data)
        self.cache._batch_bytes += len(data)

    def flush(self) -> None:
        """One Batch for every member: per watcher this is one call, whatever the batch holds."""
        pending, self.pending = self.pending, []
        if not pending or not self.members:
            return
        batch = Batch(pending[0] if len(pending) == 1 else b"".join(pending), len(pending))
        slow = [w for w in self.members if not w.sink.write(batch)]  # type: ignore[union-attr]
        for watcher in slow:
            watcher.close(TOO_SLOW)


class WatchCache:
    """Watches one resource prefix in etcd, keeps its current state and fans events out."""

    def __init__(self, client: Etcd3Client, storage: Storage, prefix: str, namespaced: bool,
                 *, capacity: int = 10_000, window_bytes: int = WINDOW_BYTES, watcher_queue: int = 10_000) -> None:
        self.client = client
        self.storage = storage
        self.prefix = prefix
        self.namespaced = namespaced
        self.capacity = capacity  # most events in the window
        self.window_bytes = window_bytes  # most bytes of etcd's values in the window (beyond its newest event)
        self.watcher_queue = watcher_queue
        self.state = CacheState()  # every object as of `revision`
        self.events: deque[WatchEvent] = deque()
        self.window_start = 0  # every event with revision > window_start is in `events`
        self._events_bytes = 0  # the events' sizes, summed
        self.revision = 0  # everything up to here has been dispatched: the state is etcd's at this revision
        self.watchers: set[Watcher] = set()
        self.delivered_revision = 0  # every event up to here has been handed to its watchers' sinks
        self._groups: dict[tuple[Scope, Hashable], _Group] = {}
        self._by_scope: dict[Scope, list[_Group]] = {}
        self._singles: dict[Watcher, None] = {}  # watchers offered each event one by one (filters, own encoding)
        self._joining: dict[Watcher, Hashable] = {}  # singles that join a group once the cache passes their start
        self._dirty: list[_Group | Watcher] = []  # what has events of the current batch
        self._flush_handle: asyncio.Handle | None = None
        self._last_flush = 0.0
        self._flush_interval = FLUSH_INTERVAL  # stretched by what flushes cost (see FLUSH_DUTY)
        self._batch_bytes = 0  # encoded bytes in the current batch, over every group and watcher
        self.ready = asyncio.Event()
        self._reaching: list[tuple[int, int, asyncio.Future[None]]] = []  # heap: (revision awaited, order, waiter)
        self._order = itertools.count()
        self.restarts = 0  # etcd watches opened after the first (for tests and metrics)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"watchcache:{self.prefix}")
        await self.ready.wait()

    async def stop(self) -> None:
        for watcher in list(self.watchers):
            watcher.close()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def reached(self, revision: int, patience: float) -> bool:
        """Whether the cache reaches revision within patience (seconds): woken by its own progress, no polling."""
        if self.revision >= revision:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, next(self._order), waiter)
        heapq.heappush(self._reaching, entry)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, patience)
        finally:
            if entry in self._reaching:  # given up (timed out, cancelled): a revision never reached must not stay
                self._reaching.remove(entry)
                heapq.heapify(self._reaching)
        return self.revision >= revision

    def _wake(self) -> None:
        """Release the waiters whose revision the cache has reached."""
        reaching = self._reaching
        while reaching and reaching[0][0] <= self.revision:
            waiter = heapq.heappop(reaching)[2]
            if not waiter.done():
                waiter.set_result(None)

    def snapshot(self, prefix: str) -> tuple[list[tuple[str, Cached]], int]:
        """The objects under prefix and the revision they are the state at.

        Taken synchronously: a `subscribe(after_revision=<that revision>)` with no await in between
        continues exactly where the snapshot ends.
        """
        return self.state.scan(prefix), self.revision

    def subscribe(self, *, cluster: str | None, namespace: str | None, name: str | None,
                  matches: Filter | None, after_revision: int, sink: Sink | None = None) -> Watcher:
        """Register a watcher and replay buffered events newer than after_revision."""
        if after_revision < self.window_start:
            raise TooOld(after_revision, self.window_start)
        self._flush()  # the batch in progress is older than this watcher's start or in its replay
        watcher = Watcher(self, cluster=cluster, namespace=namespace, name=name, matches=matches,
                          after_revision=after_revision, maxsize=self.watcher_queue, sink=sink)
        self.watchers.add(watcher)
        for event in self.events:
            if event.revision > after_revision:
                watcher.offer(event)
                event.compact()
        self._dirty.clear()
        watcher.flush()
        encoding = sink.encoding if sink is not None else None
        if matches is None and encoding is not None and after_revision <= self.revision:
            self._join(watcher, encoding)
        else:
            self._singles[watcher] = None
            if matches is None and encoding is not None:
                # from a revision the cache has not reached (a list's, etcd's newest): it must skip the
                # events up to it, so it is offered events one by one until the cache has passed it
                self._joining[watcher] = encoding
        return watcher

    def _join(self, watcher: Watcher, encoding: Hashable) -> None:
        group = self._groups.get((watcher.scope, encoding))
        if group is None:
            group = self._groups[(watcher.scope, encoding)] = _Group(self, watcher.scope, encoding)
            self._by_scope.setdefault(watcher.scope, []).append(group)
        group.members[watcher] = None
        watcher.group = group

    def _join_groups(self) -> None:
        """Right after a flush (nothing pending): watchers whose start the cache has passed join their group."""
        for watcher, encoding in list(self._joining.items()):
            if watcher.after_revision <= self.revision:
                del self._joining[watcher]
                del self._singles[watcher]
                self._join(watcher, encoding)

    def unsubscribe(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        self._singles.pop(watcher, None)
        self._joining.pop(watcher, None)
        group = watcher.group
        if group is not None:
            group.members.pop(watcher, None)
            if not group.members:
                del self._groups[(group.scope, group.encoding)]
                self._by_scope[group.scope].remove(group)
                if not self._by_scope[group.scope]:
                    del self._by_scope[group.scope]

    async def _load(self) -> tuple[CacheState, int]:
        """The whole prefix from etcd, read in pages (bounded in keys and bytes) at one revision."""
        backoff = Backoff(initial=LOAD_RETRY_MIN, cap=LOAD_RETRY_MAX)
        while True:
            items: list[tuple[str, Cached]] = []
            revision = 0
            try:
                async for page in self.storage.scan_raw(self.prefix, page=LOAD_PAGE):
                    items.extend((key, Cached(value, mod)) for key, value, mod in page.items)
                    revision = page.revision
                return CacheState(items), revision
            except StorageError as exc:  # etcd down, or compacted between two pages: read again
                delay = backoff.next()
                log.warning("loading the watch cache failed, retrying", prefix=self.prefix, error=str(exc),
                            retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    async def _reset(self, reason: str) -> None:
        """Start over from etcd's current state; watchers that relied on the old window must relist."""
        state, revision = await self._load()
        for watcher in list(self.watchers):  # including any that subscribed while etcd was read
            watcher.close(reason)
        self.events.clear()
        self._events_bytes = 0
        self.state = state
        self.window_start = self.revision = revision
        self._wake()

    async def _run(self) -> None:
        await self._reset("")
        self.ready.set()
        key = self.prefix.encode()
        end = prefix_range_end(key)
        backoff = Backoff(initial=RESTART_MIN, cap=RESTART_MAX)
        while True:
            try:
                async for resp in watch_range(self.client, key, end, start_revision=self.revision + 1):
                    if resp.compact_revision:  # the revision to resume from is gone
                        log.warning("watch resume point compacted, resetting cache", prefix=self.prefix,
                                    resume=self.revision + 1, compact_revision=resp.compact_revision)
                        await self._reset("too old resource version: the watch cache was reset after etcd "
                                          "compaction")
                        break
                    if resp.canceled:
                        log.warning("etcd canceled the watch, restarting", prefix=self.prefix,
                                    reason=resp.cancel_reason)
                        break
                    self._dispatch(resp)
                    backoff.reset()
            except asyncio.CancelledError:
                raise
            except (grpc.aio.AioRpcError, StorageError) as exc:
                code = exc.code() if isinstance(exc, grpc.aio.AioRpcError) else type(exc).__name__
                log.warning("etcd watch failed, resuming", prefix=self.prefix, resume=self.revision + 1,
                            code=str(code))
            except Exception:
                log.exception("watch cache loop failed, resuming", prefix=self.prefix, resume=self.revision + 1)
            self.restarts += 1
            await asyncio.sleep(backoff.next())

    def _dispatch(self, resp: Any) -> None:
        if not resp.events:
            # only a genuine progress notification says etcd has nothing older left to send
            if is_progress_notify(resp) and resp.header.revision > self.revision:
                self.revision = int(resp.header.revision)
                if not self._dirty:
                    self.delivered_revision = self.revision
                if self._reaching:
                    self._wake()
            return
        for ev in resp.events:
            kv = ev.kv
            revision = int(kv.mod_revision)
            etcd_key = kv.key.decode()
            key = parse_key(self.prefix, etcd_key, self.namespaced)
            if ev.type == 1:  # DELETE: the last state, at the deletion's revision
                known = self.state.get(etcd_key)
                if known is not None and (not ev.prev_kv.key or known.revision == ev.prev_kv.mod_revision):
                    last: bytes | None = known.raw  # the state's bytes, not a second copy
                else:
                    last = ev.prev_kv.value if ev.prev_kv.key else None
                self.state.delete(etcd_key)
                event = WatchEvent(DELETED, revision, key, last) if last is not None else None
            else:
                value = kv.value  # read once: each read of a protobuf field is a new bytes object
                previous = self.state.get(etcd_key)
                if previous is not None and previous.revision == ev.prev_kv.mod_revision:
                    prev_raw: bytes | None = previous.raw  # the state's bytes, not a second copy
                else:
                    prev_raw = ev.prev_kv.value if ev.prev_kv.key else None
                type_ = ADDED if kv.create_revision == kv.mod_revision else MODIFIED
                self.state.put(etcd_key, Cached(value, revision))
                event = WatchEvent(type_, revision, key, value, prev_raw, ev.prev_kv.mod_revision)
            self.revision = revision
            if event is None:
                continue
            self._append(event)
            self._fan_out(event)
            event.compact()
        if self._reaching:
            self._wake()
        if self._dirty and self._batch_bytes > FLUSH_BYTES:  # big enough: what a slow client's connection holds
            if self._flush_handle is not None:
                self._flush_handle.cancel()
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)
        elif self._dirty and self._flush_handle is None:
            loop = asyncio.get_running_loop()
            wait = flush_delay(loop.time(), self._last_flush, self._flush_interval)
            if wait <= 0:
                self._flush_handle = loop.call_soon(self._flush)
            else:
                self._flush_handle = loop.call_later(wait, self._flush)
        elif not self._dirty:
            self.delivered_revision = self.revision

    def _fan_out(self, event: WatchEvent) -> None:
        """Offer an event to the groups whose scope holds its key, then to every other watcher."""
        if self._by_scope:
            key = event.key
            cluster, namespace, name = key.cluster, key.namespace or None, key.name
            by_scope = self._by_scope
            for c in (None, cluster):
                for ns in (None, namespace) if namespace else (None,):
                    for n in (None, name):
                        groups = by_scope.get((c, ns, n))
                        if groups:
                            for group in groups:
                                group.offer(event)
        if self._singles:
            for watcher in list(self._singles):
                watcher.offer(event)

    def _flush(self) -> None:
        """Write the batch: each group's and each watcher's events in one write."""
        if self._flush_handle is not None:  # called directly (a new watcher): the scheduled one has nothing left
            self._flush_handle.cancel()
            self._flush_handle = None
        dirty, self._dirty = self._dirty, []
        self._batch_bytes = 0
        started = time.thread_time()  # CPU, not wall: a preempted flush on a busy machine is not a costlier one
        for target in dirty:
            target.flush()
        self._flush_interval = flush_interval(time.thread_time() - started)
        self._last_flush = asyncio.get_running_loop().time()
        self.delivered_revision = self.revision
        if self._joining:
            self._join_groups()

    def _append(self, event: WatchEvent) -> None:
        events = self.events
        events.append(event)
        self._events_bytes += event.size
        while len(events) > self.capacity or (self._events_bytes > self.window_bytes and len(events) > 1):
            oldest = events.popleft()
            self._events_bytes -= oldest.size
            self.window_start = oldest.revision


def flush_interval(cost: float) -> float:
    """Seconds after a flush of `cost` CPU seconds ends before the next is due: its share of the loop."""
    return min(max(FLUSH_INTERVAL, FLUSH_DUTY * cost), FLUSH_INTERVAL_MAX)


def flush_delay(now: float, last_flush: float, interval: float) -> float:
    """Seconds before the batch that just got its first event is flushed: none once the last flush ended
    `interval` ago (flushing has kept to its share of the loop), else until then, gathering what comes."""
    return max(0.0, last_flush + interval - now)
