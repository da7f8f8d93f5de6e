"""The bytes of a watch response: HTTP chunks written straight to the transport, and Table events."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable

from aiohttp import web

from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.tables import to_table
from kcp_apiserver.registry.watch import WatchEvent, watchframing


class ChunkedStream:
    """Writes HTTP chunks straight to the connection's transport, synchronously, with a bound.

    The watch cache calls this from its dispatch loop, so nothing waits for the client: what it has
    not read stays in the transport's buffer. As kube's cacher bounds each watcher's buffer and
    closes a watcher that cannot keep up, a write that finds more than MAX_UNSENT_BYTES or
    MAX_UNSENT_EVENTS of earlier events still unsent ends the stream: an ERROR event is queued and
    the transport is aborted, which frees the buffer at once whether or not the client ever reads.
    (The ERROR reaches a client only if it was reading; one that never reads sees the connection
    reset.) The initial state, written before the watch starts, is not counted: it is bounded by
    the list itself, as kube's initial events are.
    """

    MAX_UNSENT_BYTES = 1024 * 1024
    MAX_UNSENT_EVENTS = 10_000

    def __init__(self, request: web.Request, too_slow: bytes = b"") -> None:
        self.transport = request.transport
        self.too_slow = too_slow  # the ERROR event sent before the stream is cut for being too slow
        self.broken = False
        self.written = 0  # bytes handed to the transport
        self.initial = 0  # of which the initial state
        self.batches: deque[tuple[int, int]] = deque()  # (offset of its end, events): batches maybe unsent
        self.unsent_events = 0

    def gone(self) -> bool:
        return self.broken or self.transport is None or self.transport.is_closing()

    def write_initial(self, data: bytes) -> None:
        self.write(data)
        self.initial = self.written

    def behind(self) -> bool:
        """More than the bound of earlier events is still waiting for the client."""
        assert self.transport is not None
        buffered = self.transport.get_write_buffer_size()
        sent = self.written - buffered
        batches = self.batches
        while batches and batches[0][0] <= sent:
            self.unsent_events -= batches.popleft()[1]
        return min(buffered, self.written - self.initial) > self.MAX_UNSENT_BYTES or \
            self.unsent_events > self.MAX_UNSENT_EVENTS

    def write(self, data: bytes, events: int = 0) -> bool:
        transport = self.transport
        if self.broken or transport is None or transport.is_closing():
            self.broken = True
            return False
        if self.behind():
            self.cut()
            return False
        framed = b"%x\r\n%b\r\n" % (len(data), data)
        transport.write(framed)
        self.written += len(framed)
        if events:
            self.batches.append((self.written, events))
            self.unsent_events += events
        return True

    def cut(self) -> None:
        """End a stream whose client is too slow: the ERROR event, then abort (drop what is unsent)."""
        if self.broken or self.transport is None:
            return
        self.broken = True
        if self.too_slow:
            self.transport.write(b"%x\r\n%b\r\n" % (len(self.too_slow), self.too_slow))
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

    def write(self, data: bytes, events: int) -> bool:
        return self.stream.write(data, events)


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
