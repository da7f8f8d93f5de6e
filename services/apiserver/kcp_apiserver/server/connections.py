"""Deadlines and bounds for connections, so idle or half-open connections cannot starve the clients that talk.

Deadlines, as kube's Go http.Server keeps them: a client has ReadHeaderTimeout (32 s) to finish the TLS
handshake and again to send its first request's headers, and a kept-alive connection is closed after
IdleTimeout (90 s) without a request. aiohttp's `keepalive_timeout` is the idle timeout; `Connection` adds
the handshake and header deadlines.

Bounds, which Go's server does not keep (it relies on a large file-descriptor limit, see
kcpcommon.rlimits): until its first request head is complete a connection is *pending*. It has proven
nothing, and thousands of them (opened and left idle, before or after the TLS handshake) would hold every
file descriptor for up to two header deadlines, so that accept() fails for everyone. So:

- at most `max_pending` pending connections, and `max_pending_per_client` from one remote address;
- at most `max_open` connections in all (the descriptors left once the process's own are set aside).

Past a bound the *oldest* pending connection (of that address, or of all) is closed: a flood of idle
connections then sheds its own members while a client that completes a request in time is never touched.
Only when every open connection has sent a request is a new one refused (closed at once), which still
beats accept() failing with EMFILE, after which the event loop stops accepting for a second.

The site accepts connections itself and runs each handshake through `loop.connect_accepted_socket`: the
connection is then known (and can be shed) from the moment it is accepted, not only once its handshake
is done, as it would be behind `loop.create_server`.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from dataclasses import dataclass
from typing import cast

import structlog
from aiohttp import web

from kcpcommon.backoff import Backoff
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("connections")

HEAD_ENDS = (b"\n\n", b"\n\r\n")  # the blank line that ends a request head (CRLF or bare LF)
FD_RESERVE_MIN = 256  # descriptors kept for the process's own files, etcd streams and logs ...
FD_RESERVE_SHARE = 4  # ... or a quarter of the limit, whichever is more
WARN_EVERY = 10.0  # seconds between two warnings that connections are being shed
# after accept() failed, wait before accepting again as Go's http.Server does: 5 ms, doubling to 1 s, and
# start over once a connection is accepted (asyncio's own server always waits 1 s)
ACCEPT_RETRY_MIN, ACCEPT_RETRY_MAX = 0.005, 1.0


def connection_budget(open_files_limit: int) -> int:
    """How many connections a process whose soft RLIMIT_NOFILE is `open_files_limit` may hold."""
    return max(1, open_files_limit - max(FD_RESERVE_MIN, open_files_limit // FD_RESERVE_SHARE))


@dataclass(frozen=True)
class ConnectionLimits:
    read_header_timeout: float = 32.0
    max_pending: int = 2048
    max_pending_per_client: int = 512
    max_open: int = 1 << 30


class Connections:
    """The open connections of one serving process; sheds the oldest pending one when a bound is passed."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open = 0
        self.shed_total = 0  # pending connections closed to keep the bounds
        self.refused_total = 0  # new connections closed at once: every open one had sent a request
        self._pending: dict[Connection, None] = {}  # oldest first
        self._pending_by_client: dict[str, dict[Connection, None]] = {}
        self._last_warning = -WARN_EVERY

    def admit(self, conn: Connection) -> bool:
        """Count a new connection, shedding old pending ones as the bounds require; False: refuse it."""
        limits = self.limits
        mine = self._pending_by_client.get(conn.client)
        if mine and len(mine) >= limits.max_pending_per_client:
            self._shed(next(iter(mine)))
        if len(self._pending) >= limits.max_pending:
            self._shed(next(iter(self._pending)))
        if self.open >= limits.max_open:
            if not self._pending:
                self.refused_total += 1
                return False
            self._shed(next(iter(self._pending)))
        self.open += 1
        self._pending[conn] = None
        self._pending_by_client.setdefault(conn.client, {})[conn] = None
        return True

    def proven(self, conn: Connection) -> None:
        """Its first request head is complete: no longer pending."""
        if self._pending.pop(conn, 0) is None:
            mine = self._pending_by_client[conn.client]
            del mine[conn]
            if not mine:
                del self._pending_by_client[conn.client]

    def closed(self, conn: Connection) -> None:
        self.proven(conn)
        self.open -= 1

    def shed_oldest(self) -> None:
        if self._pending:
            self._shed(next(iter(self._pending)))

    def close_pending(self) -> None:
        for conn in list(self._pending):
            self.closed(conn)
            conn.shed()

    def _shed(self, conn: Connection) -> None:
        self.shed_total += 1
        self.closed(conn)
        conn.shed()
        now = time.monotonic()
        if now - self._last_warning >= WARN_EVERY:  # a flood sheds thousands a second: say so now and then
            self._last_warning = now
            log.warning("closing connections that sent no request, to keep the bounds", shed_total=self.shed_total,
                        open=self.open, pending=len(self._pending), client=conn.client)


class Connection(asyncio.Protocol):
    """One accepted connection: its TLS handshake, then aiohttp's protocol, closed unless the first request
    head arrives within the header deadline."""

    def __init__(self, table: Connections, handler: web.Server, sock: socket.socket, client: str) -> None:
        self.table = table
        self.handler = handler
        self.sock = sock
        self.client = client
        self.inner: web.RequestHandler | None = None
        self.transport: asyncio.Transport | None = None  # once the handshake is done
        self.counted = False
        self._timer: asyncio.TimerHandle | None = None
        self._tail = b""

    async def serve(self, context: ssl.SSLContext | None) -> None:
        """The handshake (bounded by the header deadline); then the protocol methods below take over."""
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                lambda: self, self.sock, ssl=context,
                ssl_handshake_timeout=self.table.limits.read_header_timeout if context else None)
        except Exception:  # a failed handshake (reset, not TLS, too slow, shed) just ends the connection
            self._gone()
            self.sock.close()

    # -- the protocol aiohttp's handler is wrapped in -------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's TLS transport is one, not by its class
        if not self.counted:  # shed while shaking hands
            self.transport.abort()
            return
        self.inner = self.handler()
        self.inner.connection_made(transport)
        self._timer = asyncio.get_running_loop().call_later(self.table.limits.read_header_timeout, self._expired)

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return
        if self._timer is not None:
            seen = self._tail + data
            if any(end in seen for end in HEAD_ENDS):
                self._disarm()
                self.table.proven(self)
            else:
                self._tail = seen[-2:]
        self.inner.data_received(data)

    def eof_received(self) -> None:
        if self.inner is not None:
            self.inner.eof_received()  # aiohttp's keeps nothing open: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._gone()
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    # -- endings -------------------------------------------------------------------------------------

    def shed(self) -> None:
        """Closed by the table to keep its bounds (it has already stopped counting this connection)."""
        self.counted = False
        self._disarm()
        if self.transport is not None:
            self.transport.abort()
            return
        try:  # in the handshake: the loop owns the socket; shutting it down ends the handshake at once
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed
            pass

    def _gone(self) -> None:
        if self.counted:
            self.counted = False
            self.table.closed(self)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._tail = b""

    def _expired(self) -> None:
        self._timer = None
        if self.inner is not None:
            self.inner.force_close()  # as Go's server: no answer, the connection just ends


class DeadlineSite(web.BaseSite):
    """A TCP (TLS) site like aiohttp's TCPSite whose connections get the deadlines and bounds above.

    It accepts connections itself (`sock_accept`, then `connect_accepted_socket` for the handshake), so a
    connection is counted, and can be shed, from the moment it is accepted rather than once its handshake
    is done, and a failed accept (out of descriptors after all) is retried a moment later."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, ssl_context: ssl.SSLContext | None,
                 limits: ConnectionLimits, reuse_port: bool = False) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self.host = host
        self.port = port
        self.connections = Connections(limits)
        self.reuse_port = reuse_port
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()

    @property
    def name(self) -> str:
        return f"{'https' if self._ssl_context else 'http'}://{self.host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._listener = socket.create_server((self.host, self.port), family=family, backlog=self._backlog,
                                              reuse_port=self.reuse_port)
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]  # the one chosen, when asked for port 0
        self._accepting = spawn(self._accept(self._listener), name=f"accept {self.name}")
        limits = self.connections.limits
        log.info("accepting connections", max_pending=limits.max_pending,
                 max_pending_per_client=limits.max_pending_per_client, max_open=limits.max_open)

    async def stop(self) -> None:
        if self._accepting is not None:
            await cancel_and_wait(self._accepting)
        if self._listener is not None:
            self._listener.close()
        self.connections.close_pending()  # their handshakes and header deadlines end with the site
        await cancel_and_wait(*self._handshakes)
        await super().stop()

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None, "the runner is set up before its sites start"
        backoff = Backoff(initial=ACCEPT_RETRY_MIN, cap=ACCEPT_RETRY_MAX, jitter=0.0)
        while True:
            try:
                sock, peer = await loop.sock_accept(listener)
            except OSError as exc:  # out of descriptors after all (files, etcd streams): shed, retry soon
                delay = backoff.next()
                log.warning("accepting a connection failed", error=str(exc), open=self.connections.open,
                            retry_in=delay)
                self.connections.shed_oldest()
                await asyncio.sleep(delay)
                continue
            backoff.reset()
            sock.setblocking(False)
            conn = Connection(self.connections, server, sock, str(peer[0]) if peer else "")
            if not self.connections.admit(conn):
                sock.close()
                continue
            conn.counted = True
            task = loop.create_task(conn.serve(self._ssl_context), name="connection")
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)
