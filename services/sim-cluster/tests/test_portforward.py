"""port-forward's wires: SPDY/3.1 frames and header blocks as spdystream writes them, tunnelled in a WebSocket,
and the channel protocol; each connection answered with the canned response or refused."""

from __future__ import annotations

import struct
import zlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer

from kcp_sim_cluster.api import spdy
from kcp_sim_cluster.api.portforward import CHANNELS, TUNNEL, SpdySession, answer, binary_messages, channel_session

POD = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"containers": [{"ports": [{"containerPort": 80}]}]}}
Client = TestClient[web.Request, web.Application]


def test_the_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2  # the DICTID spdystream's zlib streams carry


def test_the_answer_names_pod_port_and_path() -> None:
    reply = answer(POD, 80, b"GET /hello?x=1 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    head, body = reply.split(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert body == b"pod ns/web port 80 path /hello?x=1\n"
    assert f"Content-Length: {len(body)}".encode() in head


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=(TUNNEL, *CHANNELS))
        await ws.prepare(request)
        if ws.ws_protocol == TUNNEL:
            await SpdySession(ws.send_bytes, POD).run(binary_messages(ws))
        else:
            await channel_session(ws, POD, [80, 81])
        return ws

    app = web.Application()
    app.router.add_get("/pf", handler)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def test_a_tunnelled_spdy_connection_is_answered_per_request(client: Client) -> None:
    spdy_client = spdy.Framer()  # kubectl's side
    async with client.ws_connect("/pf", protocols=(TUNNEL,)) as ws:
        for request_id, port, first in (("0", "80", 1), ("1", "81", 5)):
            await ws.send_bytes(spdy_client.syn_stream(first, {"streamtype": "error", "port": port,
                                                               "requestid": request_id}))
            await ws.send_bytes(spdy_client.syn_stream(first + 2, {"streamtype": "data", "port": port,
                                                                   "requestid": request_id}))
        await ws.send_bytes(spdy.ping(b"\x00\x00\x00\x07"))
        await ws.send_bytes(spdy.data(3, b"GET /path HTTP/1.1\r\n\r\n"))
        frames: list[spdy.Frame] = []
        while sum(1 for f in frames if not f.control and f.flags & spdy.FLAG_FIN) < 4:
            message = await ws.receive(timeout=5)
            assert message.type == WSMsgType.BINARY
            frames += spdy_client.feed(message.data)
    replies = [f.stream for f in frames if f.control and f.kind == spdy.SYN_REPLY]
    assert replies == [1, 3, 5, 7]
    assert any(f.control and f.kind == spdy.PING and f.payload == b"\x00\x00\x00\x07" for f in frames)
    data = {f.stream: f.payload for f in frames if not f.control}
    assert data[3].endswith(b"pod ns/web port 80 path /path\n")
    assert data[1] == b""  # no error for the declared port
    assert b"connect: connection refused" in data[5]  # port 81: no container declares it
    assert data[7] == b""


async def test_the_channel_protocol_opens_each_channel_with_its_port(client: Client) -> None:
    async with client.ws_connect("/pf", protocols=(CHANNELS[0],)) as ws:
        opened = [(await ws.receive_bytes(timeout=5)) for _ in range(4)]
        assert opened == [bytes([ch]) + struct.pack("<H", port) for ch, port in ((0, 80), (1, 80), (2, 81), (3, 81))]
        await ws.send_bytes(b"\x00GET /a HTTP/1.1\r\n\r\n")
        reply = await ws.receive_bytes(timeout=5)
        assert reply[0] == 0 and reply.endswith(b"path /a\n")
        await ws.send_bytes(b"\x02GET /b HTTP/1.1\r\n\r\n")
        refused = await ws.receive_bytes(timeout=5)
        assert refused[0] == 3 and b"connection refused" in refused
