"""Connections that have sent no request head are bounded (all of them, and per remote address), and past a
bound the oldest of them is closed, so a client that sends a request in time is served (DeadlineSite)."""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from structlog.testing import capture_logs

from kcp_apiserver.server.connections import ConnectionLimits, DeadlineSite, connection_budget
from kcp_apiserver.server.pki import ensure_credentials

PATIENCE = 10.0  # seconds: "not stalled", never a performance bound

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass
class TLSServer:
    site: DeadlineSite
    client_context: ssl.SSLContext
    opened: list[asyncio.StreamWriter] = field(default_factory=list)

    async def tcp(self) -> Streams:
        """A connection that never starts its TLS handshake."""
        return self._keep(await asyncio.open_connection("127.0.0.1", self.site.port))

    async def tls(self) -> Streams:
        """A connection that completes its TLS handshake."""
        return self._keep(await asyncio.open_connection("127.0.0.1", self.site.port, ssl=self.client_context,
                                                        server_hostname="127.0.0.1"))

    def _keep(self, streams: Streams) -> Streams:
        self.opened.append(streams[1])
        return streams

    async def get(self, streams: Streams | None = None) -> bytes:
        reader, writer = streams or await self.tls()
        writer.write(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), PATIENCE)
        assert await reader.readexactly(2) == b"ok"  # the body: the connection is ready for the next request
        return head.split(b"\r\n", 1)[0]


async def closed(reader: asyncio.StreamReader) -> bool:
    """The server closed this connection (it reads as ended, or was reset)."""
    try:
        return await asyncio.wait_for(reader.read(1), PATIENCE) == b""
    except (ConnectionResetError, ssl.SSLError):
        return True


async def still_open(reader: asyncio.StreamReader) -> bool:
    try:
        await asyncio.wait_for(reader.read(1), 0.2)
    except TimeoutError:
        return True
    except (ConnectionResetError, ssl.SSLError):
        return False
    return False


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Callable[[ConnectionLimits], Awaitable[TLSServer]]]:
    """Starts a TLS site with the given limits; stops it and closes the test's connections afterwards."""
    creds = ensure_credentials(tmp_path, ["127.0.0.1"])
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(creds.serving_cert, creds.serving_key)
    client_context = ssl.create_default_context(cafile=str(creds.ca_cert))

    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    servers: list[TLSServer] = []

    async def start(limits: ConnectionLimits) -> TLSServer:
        site = DeadlineSite(runner, "127.0.0.1", 0, ssl_context=server_context, limits=limits)
        await site.start()
        servers.append(TLSServer(site, client_context))
        return servers[-1]

    try:
        yield start
    finally:
        await runner.cleanup()
        for server in servers:
            for writer in server.opened:
                writer.close()


async def test_an_address_past_its_pending_bound_loses_its_oldest_pending_connection(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(ConnectionLimits(max_pending_per_client=3))
    first, second, third = [await server.tcp() for _ in range(3)]
    fourth = await server.tls()  # past the bound: the oldest (no handshake yet) makes room for it
    assert await closed(first[0])
    assert await still_open(second[0]) and await still_open(third[0])
    assert await server.get(fourth) == b"HTTP/1.1 200 OK"
    assert server.site.connections.shed_total == 1


async def test_a_lone_pending_connection_per_address_is_replaced_by_the_next(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(ConnectionLimits(max_pending_per_client=1))
    first = await server.tcp()
    second = await server.tls()
    assert await closed(first[0])
    assert await server.get(second) == b"HTTP/1.1 200 OK"
    assert await server.get() == b"HTTP/1.1 200 OK"  # the table still knows its addresses


async def test_a_connection_that_sent_its_request_is_not_shed_by_later_idle_ones(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(ConnectionLimits(max_pending=2))
    talker = await server.tls()
    assert await server.get(talker) == b"HTTP/1.1 200 OK"
    idle = [await server.tls() for _ in range(4)]  # handshaken, then silent
    assert await closed(idle[0][0]) and await closed(idle[1][0])
    assert await server.get(talker) == b"HTTP/1.1 200 OK"  # kept alive all along


async def test_past_the_open_budget_idle_connections_make_room_for_a_request(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(ConnectionLimits(max_open=5))
    idle = [await server.tcp() for _ in range(3)] + [await server.tls() for _ in range(2)]
    assert await server.get() == b"HTTP/1.1 200 OK"
    assert await closed(idle[0][0])
    assert server.site.connections.open <= 5


async def test_when_every_connection_has_sent_a_request_a_new_one_is_refused(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(ConnectionLimits(max_open=2))
    talkers = [await server.tls() for _ in range(2)]
    for talker in talkers:
        assert await server.get(talker) == b"HTTP/1.1 200 OK"
    reader, _ = await server.tcp()
    assert await closed(reader)
    assert server.site.connections.refused_total == 1
    for talker in talkers:  # the ones that talk keep being served
        assert await server.get(talker) == b"HTTP/1.1 200 OK"


async def test_a_closed_connection_is_no_longer_counted(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(ConnectionLimits(max_open=2))
    for _ in range(5):
        reader, writer = await server.tls()
        assert await server.get((reader, writer)) == b"HTTP/1.1 200 OK"
        writer.close()
        await writer.wait_closed()
    assert await server.get() == b"HTTP/1.1 200 OK"
    assert server.site.connections.refused_total == 0


def test_the_budget_sets_descriptors_aside_for_the_process_itself() -> None:
    assert connection_budget(1024) == 768
    assert connection_budget(1_048_576) == 786_432
    assert connection_budget(100) == 1


async def test_accept_failures_back_off_as_gos_server_does_and_an_accepted_connection_starts_over(
        serve, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Out of descriptors, accept() fails at once again and again: the waits double from 5 ms (to 1 s), as
    Go's http.Server waits, instead of spinning or waiting a fixed time; an accepted connection resets them."""
    loop = asyncio.get_running_loop()
    real_accept = loop.sock_accept
    failures_left = [4]

    async def sock_accept(listener: socket.socket) -> tuple[socket.socket, object]:
        if failures_left[0]:
            failures_left[0] -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return await real_accept(listener)

    def delays() -> list[float]:
        return [e["retry_in"] for e in logs if e["event"] == "accepting a connection failed"]

    monkeypatch.setattr(loop, "sock_accept", sock_accept)
    with capture_logs() as logs:
        server = await serve(ConnectionLimits())
        assert await server.get() == b"HTTP/1.1 200 OK"  # served once accept() works again
        assert delays() == [0.005, 0.01, 0.02, 0.04]
        failures_left[0] = 1
        await server.tcp()  # accepted; the failure after it sheds it, the oldest connection still pending
        async with asyncio.timeout(PATIENCE):
            while len(delays()) < 5:
                await asyncio.sleep(0.01)
        assert await server.get() == b"HTTP/1.1 200 OK"
    assert delays()[4] == 0.005
