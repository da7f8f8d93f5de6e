"""The bytes of a watch response: HTTP chunks written straight to the transport, and Table events."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable

from aiohttp import web

from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.tables import to_table
from kcp_apiserver.registry.watch import Batch, WatchEvent, watchframing


def chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunk."""
    return b"%x\r\n%b\r\n" % (len(data), data)


class ChunkedStream:
    """Writes HTTP chunks straight to the connection's transport, synchronously, with flow control and a bound.

    The watch cache calls this from its dispatch loop, so nothing waits for the client. Whatever
    sits in a transport is that connection's own copy (encrypted, for TLS), so the transport is
    only written while its buffer is under HIGH_WATER (its protocol is not paused); past that,
    batches wait in a backlog as references to the cache's shared, immutable Batch bytes, and a
    drain task writes them as the client reads. As kube's cacher bounds each watcher's buffer and
    closes a watcher that cannot keep up, a stream whose backlog plus transport buffer passes
    MAX_UNSENT_BYTES, or whose backlog passes MAX_UNSENT_EVENTS, is cut: an ERROR event is queued
    and the transport is aborted, which frees its buffer and drops its backlog at once whether or
    not the client ever reads. (The ERROR reaches a client only if it was reading; one that never
    reads sees the connection reset.) The initial state, written before the watch starts, is not
    counted: it is bounded by the list itself, as kube's initial events are.
    """

    MAX_UNSENT_BYTES = 1024 * 1024
    MAX_UNSENT_EVENTS = 10_000
    HIGH_WATER = 8 * 1024  # the transport's buffer, past which writes wait as shared batches

    def __init__(self, request: web.Request, too_slow: bytes = b"") -> None:
        self.transport = request.transport
        self.protocol = request.protocol
        self.writer = request.writer
        self.too_slow = too_slow  # the ERROR event sent before the stream is cut for being too slow
        self.broken = False
        self.written = 0  # bytes handed to the transport
        self.initial = 0  # of which the initial state
        self.backlog: deque[Batch] = deque()  # batches not yet handed to the transport, in order
        self.backlog_bytes = 0
        self.backlog_events = 0
        self._drainer: asyncio.Task[None] | None = None
        if self.transport is not None:
            self.transport.set_write_buffer_limits(high=self.HIGH_WATER)

    def gone(self) -> bool:
        return self.broken or self.transport is None or self.transport.is_closing()

    def write_initial(self, data: bytes) -> None:
        self.write(data)
        self.initial = self.written

    def behind(self) -> bool:
        """More than the bound of events is waiting for the client."""
        assert self.transport is not None
        buffered = min(self.transport.get_write_buffer_size(), self.written - self.initial)
        return self.backlog_bytes + buffered > self.MAX_UNSENT_BYTES or self.backlog_events > self.MAX_UNSENT_EVENTS

    def write(self, data: bytes, events: int = 0) -> bool:
        """Write bytes of this stream's own (a bookmark, the initial state, an error), after any backlog."""
        return self.write_batch(Batch(data, events))

    def write_batch(self, batch: Batch) -> bool:
        """Hand a batch to the transport, or keep a reference to it while the client is behind."""
        wire = batch.wire
        if wire is None:
            wire = batch.wire = chunk(batch.data)
        if self.backlog or self.protocol.writing_paused:
            return self._hold(batch)
        transport = self.transport
        if self.broken or transport is None or transport.is_closing():
            self.broken = True
            return False
        transport.write(wire)
        self.written += len(wire)
        return True

    def _hold(self, batch: Batch) -> bool:
        if self.gone():
            self.broken = True
            return False
        self.backlog.append(batch)
        self.backlog_bytes += len(batch.wire)  # type: ignore[arg-type]
        self.backlog_events += batch.events
        if self.behind():
            self.cut()
            return False
        if self._drainer is None:
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return True

    async def _drain(self) -> None:
        """Write the backlog as the transport drains; ends when the backlog is empty or the stream broken."""
        try:
            while self.backlog and not self.gone():
                await self.writer.drain()  # until the transport's buffer is under its low-water mark
                transport = self.transport
                assert transport is not None
                backlog = self.backlog
                while backlog and not self.protocol.writing_paused and not transport.is_closing():
                    batch = backlog.popleft()
                    wire: bytes = batch.wire  # type: ignore[assignment]
                    self.backlog_bytes -= len(wire)
                    self.backlog_events -= batch.events
                    transport.write(wire)
                    self.written += len(wire)
        except (ConnectionError, RuntimeError):  # the connection went away while we waited
            self.broken = True
        except asyncio.CancelledError:  # the watch ended (see flushed)
            pass
        finally:
            self._drainer = None
            if self.gone():
                self._drop()

    async def flushed(self, patience: float) -> None:
        """Wait (at most `patience` seconds) until the backlog is in the transport; then drop what is still held."""
        drainer = self._drainer
        if drainer is not None:
            try:
                await asyncio.wait_for(asyncio.shield(drainer), patience)
            except TimeoutError:
                pass
        if self.backlog:  # kube's watch also ends without the events still buffered: the client resumes
            self._drop()
        if self._drainer is not None:
            self._drainer.cancel()

    def _drop(self) -> None:
        self.backlog.clear()
        self.backlog_bytes = self.backlog_events = 0

    def cut(self) -> None:
        """End a stream whose client is too slow: the ERROR event, then abort (drop what is unsent)."""
        self._drop()
        if self.broken or self.transport is None:
            return
        self.broken = True
        if self.too_slow:
            self.transport.write(chunk(self.too_slow))
        self.transport.abort()


class EventSink:
    """A watcher's sink (see watchcache.Sink): how its events are encoded, written to its stream.

    Sinks with equal `encoding`s produce the same bytes, so the cache encodes and joins once for all.
    """

    def __init__(self, stream: ChunkedStream, encode: Callable[[str, WatchEvent], bytes],
                 encoding: Hashable | None) -> None:
        self.stream = stream
        self.encode = encode
        self.encoding = encoding
        self.write = stream.write_batch  # called once per batch for every watcher: no frame of its own


class TableEncoder:
    """Watch events as one-row Tables (kubectl get -w); columns only in the first."""

    def __init__(self, res: Resource, include_object: str) -> None:
        self.res = res
        self.include_object = include_object
        self.first = True

    def event(self, type_: str, obj: Obj) -> bytes:
        table = to_table(self.res, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                         self.include_object)
        if not self.first:
            table["columnDefinitions"] = []
        self.first = False
        return watchframing.event(type_, table)
