"""A plain SPDY/3.1 connection on an aiohttp request (`Upgrade: SPDY/3.1`, what kubectl sends for exec and
attach before 1.30, for port-forward before 1.31, or when told KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false):
the 101 answer naming the agreed stream protocol, then the socket's bytes both ways. kcp-sim-cluster
speaks SPDY on it; kcp relays its bytes to the pod's cluster through the syncer's tunnel.

aiohttp hands an upgraded connection's bytes to the parser set on its protocol (as its WebSocketResponse
does); this one only queues them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from kcp_apiserver.apimachinery import status as st

Sender = Callable[[bytes], Awaitable[None]]


class _Bytes:
    """The parser aiohttp feeds the upgraded socket's bytes to; b"" marks their end."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(b"")


@dataclass
class RawConnection:
    """The upgraded socket: what the peer sends, chunk by chunk, and a way to send."""

    response: web.StreamResponse
    incoming: asyncio.Queue[bytes]
    transport: asyncio.Transport

    async def chunks(self) -> AsyncIterator[bytes]:
        while chunk := await self.incoming.get():
            yield chunk

    async def send(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        self.transport.close()


def spdy_protocol(request: web.Request, offered: tuple[str, ...]) -> str:
    """The first of kubectl's `X-Stream-Protocol-Version`s that we serve; kube's 403 when none is."""
    wanted = [v.strip() for h in request.headers.getall("X-Stream-Protocol-Version", []) for v in h.split(",")]
    chosen = next((p for p in wanted if p in offered), "")
    if not chosen:
        raise st.APIError(403, "Forbidden", f"unable to upgrade: unable to negotiate protocol: client supports "
                                            f"{wanted}, server supports {list(offered)}")
    return chosen


async def upgrade(request: web.Request, protocol: str) -> RawConnection:
    """Answers 101 Switching Protocols and takes the socket over."""
    response = web.StreamResponse(status=101, headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                                       "X-Stream-Protocol-Version": protocol})
    await response.prepare(request)
    transport = request.transport
    if transport is None:
        raise ConnectionResetError("the connection closed before the upgrade")
    reader = _Bytes()
    request.protocol.set_parser(reader)  # type: ignore[arg-type]  # any feed_data/feed_eof parser will do
    request.protocol.keep_alive(False)
    return RawConnection(response, reader.queue, transport)  # type: ignore[arg-type]

