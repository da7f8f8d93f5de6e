"""A watch client that stops reading costs the server a bounded buffer, then its watch: kube's cacher
closes a watcher that cannot keep up, and the memory it held is freed at once."""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from kcp_apiserver.apimachinery.request import UserInfo
from kcp_apiserver.endpoints.watchstream import ChunkedStream, EventSink
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.config import ServerConfig
from kcp_apiserver.storage.watchcache import Watcher

EVENTS = 160
PAYLOAD = 64 * 1024  # 160 events of 64 KiB: 10 MiB per watch, well past the kernel's socket buffers


class Anyone:
    async def authenticate(self, request: Any) -> UserInfo:
        return UserInfo("tester", groups=("system:masters",))


@pytest.fixture
async def served(etcd_endpoint: str, serve: Any) -> tuple[APIServer, TestClient[Any, Any]]:
    return await serve(ServerConfig(etcd_endpoints=[etcd_endpoint], resources=BUILTINS, authenticators=[Anyone()],
                                    identity=f"slow-{uuid.uuid4().hex[:6]}"))


def watchers_of(server: APIServer, cluster: str) -> list[Watcher]:
    return [w for cache in server.caches.caches.values() for w in cache.watchers if w.cluster == cluster]


async def never_reading_watch(client: TestClient[Any, Any], path: str) -> socket.socket:
    """A watch whose client reads the response headers, then nothing (a small receive buffer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 * 1024)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (client.host, client.port))
    await loop.sock_sendall(sock, f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += await loop.sock_recv(sock, 1)
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


async def test_a_watcher_that_never_reads_is_closed_within_its_buffer_bound(served: Any) -> None:
    server, client = served
    cluster = f"c-{uuid.uuid4().hex[:6]}"
    path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    rv = (await (await client.get(path)).json())["metadata"]["resourceVersion"]
    idle = await never_reading_watch(client, f"{path}?watch=1&resourceVersion={rv}")
    reader = await client.get(path, params={"watch": "1", "resourceVersion": rv})
    assert reader.status == 200
    async with asyncio.timeout(10):
        while len(watchers_of(server, cluster)) < 2:
            await asyncio.sleep(0.01)
    streams = {}
    for watcher in watchers_of(server, cluster):
        assert isinstance(watcher.sink, EventSink)
        streams[watcher.sink.stream.transport.get_extra_info("peername")[1]] = watcher  # type: ignore[union-attr]
    slow = streams.pop(idle.getsockname()[1])  # the server's side of the never-reading connection
    [fast] = streams.values()
    assert isinstance(slow.sink, EventSink)
    transport = slow.sink.stream.transport
    assert transport is not None

    received: list[str] = []

    async def read_all() -> None:
        async for line in reader.content:
            event = orjson.loads(line)
            received.append(event["object"]["metadata"]["name"])
            if len(received) == EVENTS:
                return

    reading = asyncio.create_task(read_all())
    most_buffered = 0
    payload = "x" * PAYLOAD
    for i in range(EVENTS):
        resp = await client.post(path, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
                                             "data": {"payload": payload}})
        assert resp.status == 201, await resp.text()
        if not transport.is_closing():
            most_buffered = max(most_buffered, transport.get_write_buffer_size())
    await asyncio.wait_for(reading, 30)

    assert received == [f"cm-{i}" for i in range(EVENTS)]  # the reader beside it got every event
    assert slow.closed and slow.close_reason.startswith("forcing watcher close due to unresponsiveness")
    assert watchers_of(server, cluster) == [fast]  # unsubscribed: the cache holds nothing for it
    assert transport.is_closing() and transport.get_write_buffer_size() == 0  # aborted: its buffer is freed
    # what it held never passed the bound and one dispatch batch (a few events of 64 KiB)
    assert most_buffered <= ChunkedStream.MAX_UNSENT_BYTES + 8 * (PAYLOAD + 1024)
    # the client that finally reads finds the stream cut short, not 10 MiB of events
    loop = asyncio.get_running_loop()
    got = 0
    try:
        while chunk := await asyncio.wait_for(loop.sock_recv(idle, 65536), 10):
            got += len(chunk)
    except ConnectionResetError:
        pass
    idle.close()
    assert got < EVENTS * PAYLOAD // 2
