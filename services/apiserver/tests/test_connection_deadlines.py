"""Connections get kube's header deadline (from the start of the connection to the end of its first request
head) and its idle timeout (aiohttp's keep-alive timeout), through DeadlineSite."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from kcp_apiserver.server.connections import ConnectionLimits, DeadlineSite

HEADER_TIMEOUT = 0.5
IDLE_TIMEOUT = 2.0


@pytest.fixture
async def site() -> AsyncIterator[DeadlineSite]:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(float(request.query.get("for", "0")))  # the handler's own work, not a test wait
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", slow)
    runner = web.AppRunner(app, keepalive_timeout=IDLE_TIMEOUT, access_log=None)
    await runner.setup()
    site = DeadlineSite(runner, "127.0.0.1", 0, ssl_context=None,
                        limits=ConnectionLimits(read_header_timeout=HEADER_TIMEOUT))
    await site.start()
    assert site.port != 0
    try:
        yield site
    finally:
        await runner.cleanup()


async def closed_after(reader: asyncio.StreamReader, timeout: float = 10) -> tuple[float, bytes]:
    started = time.monotonic()
    received = await asyncio.wait_for(reader.read(), timeout)
    return time.monotonic() - started, received


async def test_a_head_that_never_ends_is_cut_at_the_header_deadline(site: DeadlineSite) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
    writer.write(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
    elapsed, received = await closed_after(reader)
    writer.close()
    assert received == b"" and HEADER_TIMEOUT * 0.9 <= elapsed < IDLE_TIMEOUT


async def test_a_complete_head_is_served_even_when_the_handler_outlasts_the_deadline(site: DeadlineSite) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
    writer.write(b"GET /?for=" + str(HEADER_TIMEOUT * 2).encode() + b" HTTP/1.1\r\nHost: t\r\n")
    await writer.drain()
    writer.write(b"\r\n")  # the blank line in its own packet
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 200")
    assert await reader.readexactly(2) == b"ok"
    # kept alive afterwards until the idle timeout, not cut by the header deadline
    elapsed, _ = await closed_after(reader)
    writer.close()
    assert IDLE_TIMEOUT * 0.9 <= elapsed
