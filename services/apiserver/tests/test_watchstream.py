"""A watch stream's flow control: past the transport's high-water mark, batches wait as references to the cache's
shared bytes (never per-connection copies), in order, within kube's per-watcher bound."""

from __future__ import annotations

import asyncio
from typing import Any

from kcp_apiserver.endpoints.watchstream import ChunkedStream, chunk
from kcp_apiserver.storage.watchcache import Batch


class Transport:
    """What a connection's transport does, with a write buffer the test drains by hand."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.buffer: list[bytes] = []
        self.sent: list[bytes] = []
        self.high = 0
        self.aborted = False

    def set_write_buffer_limits(self, high: int) -> None:
        self.high = high

    def get_write_buffer_size(self) -> int:
        return sum(map(len, self.buffer))

    def is_closing(self) -> bool:
        return self.aborted

    def write(self, data: bytes) -> None:
        assert not self.aborted
        self.buffer.append(data)
        if self.get_write_buffer_size() > self.high:
            self.protocol.writing_paused = True

    def abort(self) -> None:
        self.aborted = True
        self.buffer = []

    def client_reads(self) -> None:
        self.sent += self.buffer
        self.buffer = []
        self.protocol.resume()


class Protocol:
    def __init__(self) -> None:
        self.writing_paused = False
        self.resumed = asyncio.Event()

    def resume(self) -> None:
        self.writing_paused = False
        self.resumed.set()


class Writer:
    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol

    async def drain(self) -> None:
        while self.protocol.writing_paused:
            self.protocol.resumed.clear()
            await self.protocol.resumed.wait()


class Request:
    def __init__(self) -> None:
        self.protocol = Protocol()
        self.transport = Transport(self.protocol)
        self.writer = Writer(self.protocol)


def stream() -> tuple[ChunkedStream, Transport]:
    request: Any = Request()
    return ChunkedStream(request, too_slow=b"gone"), request.transport


async def test_a_paused_stream_keeps_references_to_shared_batches_and_writes_them_in_order() -> None:
    first, first_transport = stream()
    second, _ = stream()
    assert first_transport.high == ChunkedStream.HIGH_WATER
    big = Batch(b"a" * (ChunkedStream.HIGH_WATER + 1), 1)
    assert first.write_batch(big) and second.write_batch(big)
    assert first_transport.protocol.writing_paused  # its buffer is past the mark: the next batches wait
    later = [Batch(b"b", 1), Batch(b"c", 2)]
    for batch in later:
        assert first.write_batch(batch) and second.write_batch(batch)
    assert first.write(b"bookmark")  # its own bytes wait behind the events before them
    assert all(a is b for a, b in zip(first.backlog, second.backlog, strict=False))  # the same objects, no copies
    assert list(first.backlog)[:2] == later and first.backlog_events == 3
    assert later[0].wire is not None and first.backlog[0].wire is later[0].wire  # chunked once, for both

    first_transport.client_reads()
    async with asyncio.timeout(5):
        while first.backlog:
            await asyncio.sleep(0)
    first_transport.client_reads()
    assert first_transport.sent == [chunk(big.data), chunk(b"b"), chunk(b"c"), chunk(b"bookmark")]
    assert first.backlog_bytes == 0 and first.backlog_events == 0
    await first.flushed(1.0)
    await second.flushed(0.01)  # its client never read: the watch ends without what it still held
    assert not second.backlog


async def test_a_stream_past_its_bound_is_cut_and_frees_its_backlog_at_once() -> None:
    slow, transport = stream()
    assert slow.write_batch(Batch(b"x" * (ChunkedStream.HIGH_WATER + 1), 1))
    batch = Batch(b"y" * 64 * 1024, 1)
    held = 0
    while slow.write_batch(batch):
        held += 1
        assert held * 64 * 1024 <= ChunkedStream.MAX_UNSENT_BYTES
    assert held >= ChunkedStream.MAX_UNSENT_BYTES // (64 * 1024) - 2
    assert transport.aborted and slow.broken
    assert not slow.backlog and slow.backlog_bytes == 0  # nothing of it left in the server
    assert not slow.write_batch(batch)


async def test_the_event_bound_counts_what_waits() -> None:
    slow, transport = stream()
    assert slow.write_batch(Batch(b"x" * (ChunkedStream.HIGH_WATER + 1), 1))
    assert slow.write_batch(Batch(b"e", ChunkedStream.MAX_UNSENT_EVENTS))
    assert not slow.write_batch(Batch(b"e", 1))
    assert transport.aborted and not slow.backlog
