"""exec's wire: kube's channel framing over a WebSocket, v5's close signal, SPDY streams, and the exit status."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient, TestServer

from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api import spdy
from kcp_sim_cluster.api.channels import ERROR, WEBSOCKET_PROTOCOLS, SpdyChannels, StreamOptions, WebSocketChannels
from kcp_sim_cluster.api.podexec import execute, exit_status, stream_options
from kcp_sim_cluster.api.shell import Box

BOX = Box("web-0", {"A": "1"})
POD = {"metadata": {"name": "web-0"}, "spec": {"nodeName": "n", "containers": [{"name": "app"}]},
       "status": {"phase": "Running", "containerStatuses": [{"name": "app", "state": {"running": {}}}]}}


def options(*command: str, stdin: bool = False, tty: bool = False) -> StreamOptions:
    return StreamOptions("app", command, stdin, True, not tty, tty)


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(protocols=WEBSOCKET_PROTOCOLS)
        await ws.prepare(request)
        wanted = json.loads(request.query["options"])
        channels = WebSocketChannels(ws, options(*wanted["command"], stdin=wanted["stdin"], tty=wanted["tty"]))
        reader = asyncio.create_task(channels.read())
        code = await execute(channels, BOX)
        await channels.send(ERROR, json.dumps(exit_status(code, channels.options.command)).encode())
        await ws.close()
        reader.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/exec", handler)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def session(client: TestClient[web.Request, web.Application], command: list[str], *, stdin: bytes = b"",
                  tty: bool = False, protocol: str = WEBSOCKET_PROTOCOLS[0]) -> dict[int, bytes]:
    """Runs a command the way kubectl does; the bytes received per channel."""
    query = {"options": json.dumps({"command": command, "stdin": bool(stdin), "tty": tty})}
    got: dict[int, bytes] = {}
    async with client.ws_connect("/exec", params=query, protocols=(protocol,)) as ws:
        assert ws.protocol == protocol
        if stdin:
            await ws.send_bytes(b"\x00" + stdin)
            if protocol == WEBSOCKET_PROTOCOLS[0]:
                await ws.send_bytes(b"\xff\x00")  # v5: stdin closed
        async for message in ws:
            if message.type == WSMsgType.BINARY:
                got[message.data[0]] = got.get(message.data[0], b"") + message.data[1:]
    return got


async def test_output_and_status_come_on_their_channels(client: TestClient[web.Request, web.Application]) -> None:
    got = await session(client, ["sh", "-c", "echo $A; nope; exit 3"])
    assert got[1] == b"1\n"
    assert got[2] == b"sh: nope: not found\n"
    status = json.loads(got[ERROR])
    assert (status["status"], status["reason"]) == ("Failure", "NonZeroExitCode")
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]


async def test_a_zero_exit_is_success(client: TestClient[web.Request, web.Application]) -> None:
    got = await session(client, ["hostname"], protocol=WEBSOCKET_PROTOCOLS[1])
    assert got[1] == b"web-0\n"
    assert json.loads(got[ERROR]) == {"metadata": {}, "status": "Success"}


async def test_v5_close_signal_ends_stdin(client: TestClient[web.Request, web.Application]) -> None:
    got = await session(client, ["sh"], stdin=b"echo one\nhostname\n")
    assert got[1] == b"one\nweb-0\n"
    assert json.loads(got[ERROR])["status"] == "Success"


async def test_a_tty_echoes_prompts_and_merges_stderr(client: TestClient[web.Request, web.Application]) -> None:
    got = await session(client, ["sh"], stdin=b"nope\rexit 2\r", tty=True)
    assert got[1] == b"/ # nope\r\nsh: nope: not found\r\n/ # exit 2\r\n"
    assert 2 not in got
    assert json.loads(got[ERROR])["details"]["causes"][0]["message"] == "2"


def test_requests_are_checked_before_the_upgrade() -> None:
    with pytest.raises(st.APIError, match="you must specify at least 1 command"):
        stream_options({"stdout": "true"}, POD, "web-0", attach=False)
    with pytest.raises(st.APIError, match="at least 1 of stdin, stdout, stderr"):
        stream_options({"command": "ls"}, POD, "web-0", attach=False)
    waiting = {**POD, "status": {"phase": "Running", "containerStatuses": [
        {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}
    with pytest.raises(st.APIError, match=r'container not found \("app"\)'):
        stream_options({"command": "ls", "stdout": "true"}, waiting, "web-0", attach=False)
    done = {**POD, "status": {"phase": "Succeeded"}}
    with pytest.raises(st.APIError, match="cannot exec into a container in a completed pod; current phase is "
                                          "Succeeded"):
        stream_options({"command": "ls", "stdout": "true"}, done, "web-0", attach=False)
    assert stream_options({"stdout": "true", "stderr": "true", "tty": "true"}, POD, "web-0", attach=True).stderr \
        is False


class FakeConnection:
    """An upgraded socket: the client's bytes given up front, what the server sends collected."""

    def __init__(self, incoming: list[bytes]) -> None:
        self.incoming, self.sent, self.closed = incoming, b"", False

    async def chunks(self) -> AsyncIterator[bytes]:
        for chunk in self.incoming:
            yield chunk

    async def send(self, data: bytes) -> None:
        self.sent += data

    def close(self) -> None:
        self.closed = True


async def test_spdy_streams_carry_the_channels() -> None:
    client = spdy.Framer()  # kubectl's side
    opened = [client.syn_stream(stream, {"streamtype": kind}) for stream, kind in
              ((1, "error"), (3, "stdin"), (5, "stdout"), (7, "stderr"))]
    connection = FakeConnection([*opened, spdy.data(3, b"echo $A\nnope\n", fin=True)])
    channels = SpdyChannels(connection, options("sh", stdin=True))  # type: ignore[arg-type]
    reader = asyncio.create_task(channels.read())
    await channels.ready()
    code = await execute(channels, BOX)
    await channels.send(ERROR, json.dumps(exit_status(code, ("sh",))).encode())
    await channels.close()
    await reader
    frames = spdy.Framer().feed(connection.sent)
    assert [f.stream for f in frames if f.control and f.kind == spdy.SYN_REPLY] == [1, 3, 5, 7]
    data = {}
    for frame in frames:
        if not frame.control:
            data[frame.stream] = data.get(frame.stream, b"") + frame.payload
    assert data[5] == b"1\n"
    assert data[7] == b"sh: nope: not found\n"
    assert json.loads(data[1])["details"]["causes"] == [{"reason": "ExitCode", "message": "127"}]
    assert {f.stream for f in frames if not f.control and f.flags & spdy.FLAG_FIN} == {1, 5, 7}
    assert connection.closed
