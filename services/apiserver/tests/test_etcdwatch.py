"""The watch cache's etcd stream, read from etcd's JSON gateway: the same responses as the Watch RPC,
every arrived event taken in one wakeup, TLS, and the Watch RPC where etcd serves no gateway."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.server.pki import ensure_etcd_credentials
from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd, etcd_binary
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.etcd_client import etcd_client
from kcp_apiserver.storage.etcdwatch import _b64, _messages, _watch_rpc, gateway_for, watch_range
from kcp_apiserver.storage.watchcache import WatchCache
from kcp_process import free_port


def _shape(resp: Any) -> tuple[Any, ...]:
    """What the watch cache reads of a response, comparable between the gateway's and the RPC's."""
    return (resp.created, resp.canceled, resp.compact_revision, [
        (ev.type, bytes(ev.kv.key), bytes(ev.kv.value), ev.kv.create_revision, ev.kv.mod_revision,
         bytes(ev.prev_kv.key), bytes(ev.prev_kv.value), ev.prev_kv.mod_revision) for ev in resp.events])


async def _first(stream: AsyncIterator[Any], count: int) -> list[tuple[Any, ...]]:
    """The first `count` events' shapes (responses may batch them differently)."""
    seen: list[tuple[Any, ...]] = []
    async with asyncio.timeout(15):
        async for resp in stream:
            seen.extend(("event", *event) for event in _shape(resp)[3])
            if len(seen) >= count:
                return seen
    raise AssertionError(f"the stream ended after {len(seen)} events")


@contextlib.asynccontextmanager
async def _cache_that_saw_a_create(client: Etcd3Client, prefix: str) -> AsyncIterator[WatchCache]:
    """A started watch cache over `client`, once it has received a create made after its start."""
    storage = Storage(client)
    cache = WatchCache(client, storage, prefix, namespaced=True)
    await cache.start()
    try:
        created = await storage.create(f"{prefix}c/ns/x", {"metadata": {"name": "x"}})
        async with asyncio.timeout(15):
            while cache.revision < created.mod_revision:
                await asyncio.sleep(0.02)
        yield cache
    finally:
        await cache.stop()


async def test_the_gateway_gives_the_watch_rpcs_events_field_for_field(etcd: Etcd3Client, prefix: str) -> None:
    assert gateway_for(etcd) is not None
    storage = Storage(etcd)
    first = await storage.create(f"{prefix}a", {"v": 1})
    second = await storage.update(first.key, {"v": 2}, first.mod_revision)
    await storage.create(f"{prefix}b", {"v": "x" * 3000})
    await storage.delete(second.key, second.mod_revision)
    key, end = prefix.encode(), prefix[:-1].encode() + b"0"
    over_gateway = await _first(watch_range(etcd, key, end, start_revision=first.mod_revision), 4)
    over_rpc = await _first(_watch_rpc(etcd, key, end, start_revision=first.mod_revision), 4)
    assert over_gateway == over_rpc
    assert [e[1] for e in over_gateway] == [0, 0, 0, 1]  # three PUTs, then the DELETE
    assert over_gateway[1][7] == over_gateway[0][3]  # the update's prev_kv holds the create's value


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def test_messages_split_anywhere_across_reads_parse_the_same() -> None:
    value = b"\x00\n{}\xff" * 50  # bytes the gateway base64-encodes: a raw newline never appears in its JSON
    lines = [orjson.dumps({"result": {"header": {"revision": str(r)}, "events": [{"kv": {
        "key": _b64(b"/k/%d" % r), "value": _b64(value), "create_revision": "2", "mod_revision": str(r)}}]}})
        for r in (2, 3, 4)]
    stream = b"\n".join(lines) + b"\n"
    for cut in range(1, len(stream), 37):
        for step in (1, 7):  # one cut, or the rest in many small pieces
            chunks = [stream[:cut]] + [stream[i:i + step * 64] for i in range(cut, len(stream), step * 64)]
            parsed = [resp async for resp in _messages(_Chunks(chunks))]  # type: ignore[arg-type]
            assert [(r.header.revision, r.events[0].kv.key, r.events[0].kv.value) for r in parsed] == [
                (r, b"/k/%d" % r, value) for r in (2, 3, 4)], f"cut at {cut}"


async def test_an_error_message_ends_the_stream_with_unavailable() -> None:
    from kcp_apiserver.storage.etcd import Unavailable

    stream = b'{"error":{"grpc_code":14,"message":"etcdserver: no leader"}}\n'
    with pytest.raises(Unavailable, match="no leader"):
        async for _ in _messages(_Chunks([stream])):  # type: ignore[arg-type]
            pass


def _put_many_and_see_them_watched(endpoint: str, prefix: str, count: int) -> int:
    """`count` puts through the gateway from this thread, returning once a watch of its own has received the
    last one (etcd notifies every watch of a revision together); that last revision."""
    end = prefix[:-1] + "0"
    watch = urllib.request.urlopen(f"http://{endpoint}/v3/watch", orjson.dumps({"create_request": {
        "key": _b64(prefix.encode()), "range_end": _b64(end.encode())}}), timeout=10)
    try:
        assert orjson.loads(watch.readline())["result"].get("created")
        revision = 0
        for i in range(count):
            body = orjson.dumps({"key": _b64(f"{prefix}c/ns/o{i}".encode()),
                                 "value": _b64(orjson.dumps({"metadata": {"name": f"o{i}"}}))})
            with urllib.request.urlopen(f"http://{endpoint}/v3/kv/put", body, timeout=10) as resp:
                revision = int(orjson.loads(resp.read())["header"]["revision"])
        seen = 0
        while seen < revision:
            seen = int(orjson.loads(watch.readline())["result"]["header"]["revision"])
        return revision
    finally:
        watch.close()


async def test_events_that_arrived_while_the_loop_was_busy_are_dispatched_in_a_few_iterations(
        etcd: Etcd3Client, etcd_endpoint: str, prefix: str) -> None:
    """grpc.aio took one message per loop iteration: 200 arrived events needed 200 iterations."""
    storage = Storage(etcd)
    cache = WatchCache(etcd, storage, prefix, namespaced=True)
    await cache.start()
    try:
        first = await storage.create(f"{prefix}c/ns/first", {"metadata": {"name": "first"}})
        async with asyncio.timeout(15):  # the cache's stream is open and current
            while cache.revision < first.mod_revision:
                await asyncio.sleep(0.01)
        start = cache.revision
        result: list[int] = []
        writer = threading.Thread(target=lambda: result.append(_put_many_and_see_them_watched(
            etcd_endpoint, prefix, 200)))
        writer.start()
        writer.join()  # the loop is blocked all along, as a busy one is
        assert cache.revision == start and result  # nothing was read meanwhile
        iterations = 0
        while cache.revision < result[0] and iterations < 200:
            await asyncio.sleep(0)
            iterations += 1
        assert cache.revision == result[0]
        assert iterations <= 20, f"200 arrived events took {iterations} loop iterations"
    finally:
        await cache.stop()


@pytest.fixture
def etcd_without_gateway(tmp_path: Path) -> Iterator[str]:
    port, peer = free_port(), free_port()
    client, peer_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
    proc = subprocess.Popen(
        [etcd_binary(), "--data-dir", str(tmp_path / "d"), "--listen-client-urls", client,
         "--advertise-client-urls", client, "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls",
         peer_url, "--initial-cluster", f"default={peer_url}", "--log-level", "error",
         "--enable-grpc-gateway=false"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


async def test_an_etcd_without_its_gateway_is_watched_over_the_watch_rpc(etcd_without_gateway: str,
                                                                         prefix: str) -> None:
    client = etcd_client([etcd_without_gateway])
    await client.connect()
    storage = Storage(client)
    async with asyncio.timeout(20):
        while True:
            try:
                await storage.create(f"{prefix}c/ns/before", {"metadata": {"name": "before"}})
                break
            except Exception:  # still starting
                await asyncio.sleep(0.1)
    try:
        async with _cache_that_saw_a_create(client, prefix) as cache:
            assert gateway_for(client) is None  # it answered 404, and the Watch RPC took over
            assert [key for key, _ in cache.snapshot(prefix)[0]] == [f"{prefix}c/ns/before", f"{prefix}c/ns/x"]
    finally:
        await client.close()


async def test_a_mutual_tls_etcd_is_watched_over_its_gateway_with_the_clients_certificate(
        tmp_path: Path, prefix: str) -> None:
    creds = ensure_etcd_credentials(tmp_path)
    server = EmbeddedEtcd(tmp_path, tls=creds.server)
    await server.start()
    client = etcd_client([server.endpoint], creds.client)
    await client.connect()
    try:
        gateway = gateway_for(client)
        assert gateway is not None and gateway.ssl_context is not None
        async with _cache_that_saw_a_create(client, prefix) as cache:
            assert cache.restarts == 0 and gateway_for(client) is gateway
        # a client given the CA as bytes only (etcd3aio's own way) cannot hand them to ssl: it uses the RPC
        raw = Etcd3Client([server.endpoint], ca_cert=await asyncio.to_thread(Path(creds.client.ca_file or "").read_bytes))
        assert gateway_for(raw) is None
    finally:
        await client.close()
        await server.stop()


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


class GrpcOnlyListener:
    """In front of etcd, a listener that speaks only gRPC (as etcd's client port does when its HTTP is served
    elsewhere): HTTP/2 connections reach etcd, anything else gets a server's SETTINGS frame and is closed."""

    def __init__(self, target: str) -> None:
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)
        self.server: asyncio.Server | None = None
        self.refused = 0
        self.tasks: set[asyncio.Task[None]] = set()

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> GrpcOnlyListener:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in list(self.tasks):
            task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.read(len(HTTP2_PREFACE))
        if head != HTTP2_PREFACE:
            self.refused += 1
            writer.write(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # an empty SETTINGS frame
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        up_writer.write(head)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        for task in (asyncio.create_task(pump(reader, up_writer)), asyncio.create_task(pump(up_reader, writer))):
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)


async def test_a_listener_that_speaks_only_grpc_is_watched_over_the_watch_rpc(etcd_endpoint: str,
                                                                              prefix: str) -> None:
    async with GrpcOnlyListener(etcd_endpoint) as listener:
        client = etcd_client([listener.endpoint])
        await client.connect()
        try:
            async with _cache_that_saw_a_create(client, prefix):
                assert listener.refused == 1 and gateway_for(client) is None  # tried once, then gRPC for good
        finally:
            await client.close()


def test_a_gateway_that_has_answered_a_watch_is_never_given_up_for_a_later_odd_answer() -> None:
    from kcp_apiserver.storage.etcdwatch import Gateway

    answered, fresh = Gateway(["127.0.0.1:1"], verified=True), Gateway(["127.0.0.1:1"])
    for gateway in (answered, fresh):
        gateway._refused("127.0.0.1:1", "HTTP 503: etcd restarting")
    assert answered.serves and not fresh.serves
