"""Deadlines for connections, as kube's Go http.Server keeps them: a client has ReadHeaderTimeout (32 s) to
finish the TLS handshake and again to send its request's headers, and a kept-alive connection is closed after
IdleTimeout (90 s) without a request. Without them idle or half-sent connections pile up until the process
runs out of file descriptors and every other client is refused.

aiohttp's `keepalive_timeout` closes a connection whose next request has not fully arrived that long after it
opened or after its last response: that is the idle timeout. It has no header deadline, so `HeaderDeadline`
wraps aiohttp's protocol to close a connection whose first request head is not complete in time; later
requests on a kept-alive connection are bounded by the idle timeout.
"""

from __future__ import annotations

import asyncio
import ssl

from aiohttp import web

HEAD_ENDS = (b"\n\n", b"\n\r\n")  # the blank line that ends a request head (CRLF or bare LF)


class HeaderDeadline(asyncio.Protocol):
    """aiohttp's protocol for one connection, closed unless the first request head arrives in `timeout` s."""

    def __init__(self, inner: web.RequestHandler, timeout: float) -> None:
        self.inner = inner
        self.timeout = timeout
        self._timer: asyncio.TimerHandle | None = None
        self._tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)
        self._timer = asyncio.get_running_loop().call_later(self.timeout, self._expired)

    def data_received(self, data: bytes) -> None:
        if self._timer is not None:
            seen = self._tail + data
            if any(end in seen for end in HEAD_ENDS):
                self._disarm()
            else:
                self._tail = seen[-2:]
        self.inner.data_received(data)

    def eof_received(self) -> None:
        self.inner.eof_received()  # aiohttp's keeps nothing open: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._tail = b""

    def _expired(self) -> None:
        self._timer = None
        self.inner.force_close()  # as Go's server: no answer, the connection just ends


class DeadlineSite(web.BaseSite):
    """A TCP (TLS) site like aiohttp's TCPSite whose connections get the handshake and header deadline."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, ssl_context: ssl.SSLContext | None,
                 read_header_timeout: float, reuse_port: bool = False) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self.host = host
        self.port = port
        self.read_header_timeout = read_header_timeout
        self.reuse_port = reuse_port

    @property
    def name(self) -> str:
        return f"{'https' if self._ssl_context else 'http'}://{self.host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None, "the runner is set up before its sites start"

        def protocol() -> asyncio.Protocol:
            return HeaderDeadline(server(), self.read_header_timeout)

        self._server = await asyncio.get_running_loop().create_server(
            protocol, self.host, self.port, ssl=self._ssl_context, backlog=self._backlog, reuse_address=True,
            reuse_port=self.reuse_port,
            ssl_handshake_timeout=self.read_header_timeout if self._ssl_context else None)
        if self._server.sockets:
            self.port = self._server.sockets[0].getsockname()[1]  # the one chosen, when asked for port 0
