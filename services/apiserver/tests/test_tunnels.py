"""The syncer tunnel: its wire (requests and heads), a stream handed to the syncer that dials back with its
id, and what a missing or dropped tunnel answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints import podstreams
from kcp_apiserver.endpoints.podstreams import sync_target_of
from kcp_apiserver.endpoints.tunnels import PodRoute, Tunnels
from kcpcommon.keys import sync_target_key
from kcpcommon.tunnel import StreamHead, StreamRequest, TunnelProtocolError, relay

TARGET = ("tenant", "east")
ROUTE = PodRoute(TARGET, "tenant")


def test_a_stream_request_keeps_repeated_query_parameters() -> None:
    request = StreamRequest("id1", "exec", "default", "web", (("command", "sh"), ("command", "-c")),
                            ("v5.channel.k8s.io", "v4.channel.k8s.io"), "websocket")
    assert StreamRequest.decode(request.encode()) == request
    placed = StreamRequest("id2", "log", "default", "web", cluster="team-a")  # a pod of a placed workspace
    assert StreamRequest.decode(placed.encode()) == placed
    head = StreamHead(101, protocol="v5.channel.k8s.io")
    assert StreamHead.decode(head.encode()) == head


@pytest.mark.parametrize("text", ["nope", "[]", '{"id": "x", "subresource": "proxy", "namespace": "n", "name": "p"}',
                                  '{"id": "", "subresource": "log", "namespace": "n", "name": "p"}',
                                  '{"id": "x", "subresource": "log", "namespace": "n", "name": "p", "query": [["a"]]}',
                                  '{"id": "x", "subresource": "exec", "namespace": "n", "name": "p", "upgrade": "h2c"}'])
def test_what_is_not_a_stream_request_is_refused(text: str) -> None:
    with pytest.raises(TunnelProtocolError):
        StreamRequest.decode(text)


def test_the_sync_target_is_the_upsync_label() -> None:
    assert sync_target_of({"metadata": {"labels": {"state.workload.kcp.io/west": "Upsync", "app": "x"}}}) == "west"
    assert sync_target_of({"metadata": {"labels": {"state.workload.kcp.io/west": "Sync"}}}) is None
    assert sync_target_of({"metadata": {}}) is None


class _AsServed(TestServer):
    """A test server that, as kcp's, lets a handler run on when its client leaves (aiohttp's default)."""

    async def _make_runner(self, **kwargs: Any) -> web.BaseRunner:
        kwargs["handler_cancellation"] = False
        return await super()._make_runner(**kwargs)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Tunnels, TestClient[web.Request, web.Application]]]:
    tunnels = Tunnels(dial_back_timeout=2.0)

    async def control(request: web.Request) -> web.StreamResponse:
        return await tunnels.serve_control(request, (request.match_info["cluster"], request.match_info["target"]))

    async def data(request: web.Request) -> web.StreamResponse:
        try:
            return await tunnels.serve_data(request, (request.match_info["cluster"], request.match_info["target"]),
                                            request.query["stream"])
        except APIError as exc:  # the server's error filter, in short
            return web.json_response(exc.to_status(), status=exc.code)

    app = web.Application()
    app[FAR_CLOSED] = asyncio.Event()
    app.router.add_get("/control/{cluster}/{target}", control)
    app.router.add_get("/data/{cluster}/{target}", data)
    app.router.add_get("/far", _far_end)
    app.router.add_get("/near", _near_end)
    app.router.add_get("/far-closed", _far_closed)
    app.router.add_get("/log", lambda request: podstreams._log(tunnels, request, ROUTE, "default", "web"))
    client = TestClient(_AsServed(app))
    await client.start_server()
    try:
        yield tunnels, client
    finally:
        await client.close()


async def _connected(tunnels: Tunnels, client: TestClient[web.Request, web.Application],
                     target: tuple[str, str] = TARGET) -> aiohttp.ClientWebSocketResponse:
    control = await client.ws_connect(f"/control/{target[0]}/{target[1]}")
    async with asyncio.timeout(5):
        while not tunnels.connected(target):
            await asyncio.sleep(0.01)
    return control


async def test_a_stream_is_the_connection_the_syncer_dials_back_with_its_id(
        served: tuple[Tunnels, TestClient[web.Request, web.Application]]) -> None:
    tunnels, client = served
    control = await _connected(tunnels, client)

    async def syncer() -> None:
        request = StreamRequest.decode((await control.receive()).data)
        assert (request.subresource, request.namespace, request.name) == ("log", "default", "web")
        assert request.query == (("follow", "true"),)
        async with client.ws_connect(f"/data/tenant/east?stream={request.id}") as data:
            await data.send_str(StreamHead(200, "text/plain").encode())
            await data.send_bytes(b"line 1\n")
            await data.close()

    dialing = asyncio.create_task(syncer())
    async with tunnels.stream(ROUTE, "log", "default", "web", (("follow", "true"),)) as data:
        assert StreamHead.decode((await data.receive()).data).status == 200
        assert (await data.receive()).data == b"line 1\n"
    await dialing
    await control.close()


async def test_a_dial_back_for_another_sync_target_or_an_unknown_id_is_not_found(
        served: tuple[Tunnels, TestClient[web.Request, web.Application]]) -> None:
    tunnels, client = served
    control = await _connected(tunnels, client)
    other = await _connected(tunnels, client, ("tenant", "west"))

    async def impostor_then_syncer() -> None:
        request = StreamRequest.decode((await control.receive()).data)
        for path in (f"/data/tenant/west?stream={request.id}", "/data/tenant/east?stream=guessed"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await client.ws_connect(path)
            assert refused.value.status == 404
        async with client.ws_connect(f"/data/tenant/east?stream={request.id}") as data:  # still the syncer's
            await data.send_str(StreamHead(101, protocol="v5.channel.k8s.io").encode())
            await data.receive()

    dialing = asyncio.create_task(impostor_then_syncer())
    async with tunnels.stream(ROUTE, "exec", "default", "web", ()) as data:
        assert StreamHead.decode((await data.receive()).data).protocol == "v5.channel.k8s.io"
    await dialing
    await control.close()
    await other.close()


async def test_without_a_tunnel_or_once_it_dropped_streams_are_unavailable(
        served: tuple[Tunnels, TestClient[web.Request, web.Application]]) -> None:
    tunnels, client = served
    with pytest.raises(APIError) as none:
        async with tunnels.stream(ROUTE, "log", "default", "web", ()):
            pass
    assert none.value.code == 503 and 'SyncTarget "east" has no tunnel' in none.value.message
    control = await _connected(tunnels, client)

    async def drop() -> None:
        await control.receive()  # the request arrives; the syncer goes away instead of dialing back
        await control.close()

    dropping = asyncio.create_task(drop())
    with pytest.raises(APIError) as dropped:
        async with tunnels.stream(ROUTE, "log", "default", "web", ()):
            pass
    await dropping
    assert dropped.value.code == 503 and "tunnel closed" in dropped.value.message
    assert not tunnels.connected(TARGET)


async def test_relay_carries_messages_both_ways_and_closes_both_sides(
        served: tuple[Tunnels, TestClient[web.Request, web.Application]]) -> None:
    _, client = served
    async with client.ws_connect("/near") as near:
        await near.send_bytes(b"\x00hello")
        assert (await near.receive()).data == b"echo \x00hello"
        await near.send_str("text too")
        assert (await near.receive()).data == b"echo text too"
        await near.close()
    assert (await client.get("/far-closed")).status == 200


async def _far_end(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for message in ws:
        await ws.send_bytes(b"echo " + (message.data.encode() if isinstance(message.data, str) else message.data))
    request.app[FAR_CLOSED].set()
    return ws


async def _near_end(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async with aiohttp.ClientSession() as session, session.ws_connect(request.url.with_path("/far")) as far:
        await relay(ws, far)
    return ws


async def _far_closed(request: web.Request) -> web.Response:
    async with asyncio.timeout(5):
        await request.app[FAR_CLOSED].wait()
    return web.Response()


FAR_CLOSED = web.AppKey("far_closed", asyncio.Event)


async def test_a_quiet_followed_log_ends_at_the_syncer_once_its_client_left(
        served: tuple[Tunnels, TestClient[web.Request, web.Application]], monkeypatch: pytest.MonkeyPatch) -> None:
    tunnels, client = served
    monkeypatch.setattr(podstreams, "CLIENT_CHECK", 0.05)
    control = await _connected(tunnels, client)
    reading = asyncio.create_task(client.get("/log", params={"follow": "true"}))
    request = StreamRequest.decode((await control.receive()).data)
    async with client.ws_connect(f"/data/tenant/east?stream={request.id}") as data:
        await data.send_str(StreamHead(200, "text/plain").encode())
        await data.send_bytes(b"line 1\n")
        reader = await reading
        assert await reader.content.readline() == b"line 1\n"
        reader.close()  # kubectl is stopped; the container prints nothing more
        async with asyncio.timeout(5):
            assert (await data.receive()).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    await control.close()


def test_a_placed_namespace_s_pods_go_to_the_connected_sync_target_its_labels_name() -> None:
    """Shared compute: the pod's namespace is placed on compute's `east`; its tunnel is registered there."""
    tunnels = Tunnels()
    tunnels._control[("compute", "east")] = object()  # type: ignore[assignment]  # a connected control socket
    assert tunnels.placed("east", {sync_target_key("compute", "east")}) == ("compute", "east")
    assert tunnels.placed("east", {sync_target_key("other", "east")}) is None
    assert tunnels.placed("west", {sync_target_key("compute", "east")}) is None
