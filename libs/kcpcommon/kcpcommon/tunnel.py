"""The syncer tunnel's wire, shared by kcp (which asks for a pod's stream) and the syncer (which opens it).

kcp cannot reach a physical cluster in pull mode, so the syncer dials out: it holds one control WebSocket
to kcp (`.../synctargets/<name>/tunnel` in its logical cluster). Per stream kcp sends one text message on
it, a `StreamRequest`; the syncer dials back a data WebSocket (`.../tunnel?stream=<id>`), whose first
message is a `StreamHead` (the physical cluster's answer: an error Status, a log's content type, or the
subprotocol an upgraded stream agreed), then the stream itself: a log's chunks as binary messages, a
WebSocket's messages as they are, both ways (`relay`), a plain SPDY/3.1 connection's bytes as binary
messages (`relay_bytes`).

A request names the upstream namespace and pod only: the syncer maps them itself and never follows a path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import WSMsgType

SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward"})
STREAM_PARAM = "stream"  # the data connection's query parameter: the id of the stream it carries
TUNNEL_SUBRESOURCE = "tunnel"
WEBSOCKET, SPDY = "websocket", "SPDY/3.1"
UPGRADES = frozenset({"", WEBSOCKET, SPDY})


class TunnelProtocolError(ValueError):
    """A message that is not the tunnel's."""


def _json_object(text: str, what: str) -> dict[str, Any]:
    """A message of the tunnel's protocol: one JSON object."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise TunnelProtocolError(f"not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise TunnelProtocolError(f"{what} is an object")
    return raw


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TunnelProtocolError(f"{what} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True)
class StreamRequest:
    """kcp to the syncer: open `subresource` of pod `namespace/name` (upstream names) with `query`.
    `upgrade`: what the client asked for, `websocket` or `SPDY/3.1` (`protocols`: the subprotocols or stream
    protocol versions it offered), or nothing: a log is read, any other stream is only asked for (kube
    checks the pod and container, then refuses without an upgrade)."""

    id: str
    subresource: str
    namespace: str
    name: str
    query: tuple[tuple[str, str], ...] = ()
    protocols: tuple[str, ...] = ()
    upgrade: str = ""
    # the workspace of the pod when it is not the SyncTarget's own: one placed on the SyncTarget (shared compute)
    cluster: str = ""

    def encode(self) -> str:
        return json.dumps({"id": self.id, "subresource": self.subresource, "namespace": self.namespace,
                           "name": self.name, "query": [list(p) for p in self.query],
                           "protocols": list(self.protocols), "upgrade": self.upgrade, "cluster": self.cluster})

    @classmethod
    def decode(cls, text: str) -> StreamRequest:
        raw = _json_object(text, "a stream request")
        fields = {key: raw.get(key) for key in ("id", "subresource", "namespace", "name")}
        for key, value in fields.items():
            if not isinstance(value, str) or not value:
                raise TunnelProtocolError(f"{key} must be a non-empty string")
        if fields["subresource"] not in SUBRESOURCES:
            raise TunnelProtocolError(f"no stream {fields['subresource']!r}: one of {sorted(SUBRESOURCES)}")
        pairs = raw.get("query") or []
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise TunnelProtocolError("query must be a list of [name, value] pairs")
        query = tuple((k, v) for k, v in (_strings(p, "a query pair") for p in pairs))
        upgrade = raw.get("upgrade") or ""
        if upgrade not in UPGRADES:
            raise TunnelProtocolError(f"no upgrade {upgrade!r}: one of {sorted(UPGRADES)}")
        cluster = raw.get("cluster") or ""
        if not isinstance(cluster, str):
            raise TunnelProtocolError("cluster must be a string")
        return cls(str(fields["id"]), str(fields["subresource"]), str(fields["namespace"]), str(fields["name"]),
                   query, _strings(raw.get("protocols") or [], "protocols"), upgrade, cluster)


@dataclass(frozen=True)
class StreamHead:
    """The syncer to kcp, first on a data connection: the physical cluster's status (101: upgraded, with
    the agreed `protocol`), the body's content type, and the whole body when it is an error."""

    status: int
    content_type: str = ""
    protocol: str = ""
    body: str = ""

    def encode(self) -> str:
        return json.dumps({"status": self.status, "contentType": self.content_type, "protocol": self.protocol,
                           "body": self.body})

    @classmethod
    def decode(cls, text: str) -> StreamHead:
        raw = _json_object(text, "a stream head")
        if not isinstance(raw.get("status"), int):
            raise TunnelProtocolError("a stream head is an object with an integer status")
        values = [raw.get(key) or "" for key in ("contentType", "protocol", "body")]
        if not all(isinstance(v, str) for v in values):
            raise TunnelProtocolError("contentType, protocol and body are strings")
        return cls(raw["status"], *values)


class WebSocket(Protocol):
    """What `relay` needs of aiohttp's server and client WebSockets alike."""

    @property
    def closed(self) -> bool: ...

    async def receive(self, timeout: float | None = None) -> Any: ...  # noqa: ASYNC109 - aiohttp's signature

    async def send_bytes(self, data: bytes, compress: int | None = None) -> None: ...

    async def send_str(self, data: str, compress: int | None = None) -> None: ...

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool: ...


async def _pump(source: WebSocket, sink: WebSocket) -> None:
    """`source`'s messages to `sink`, as they are, until `source` closes."""
    while True:
        message = await source.receive()
        if message.type == WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        elif message.type == WSMsgType.TEXT:
            await sink.send_str(message.data)
        elif message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            return


async def relay(one: WebSocket, other: WebSocket) -> None:
    """Messages both ways until either side closes; then both are closed."""
    pumps = [asyncio.create_task(_pump(one, other), name="tunnel-relay"),
             asyncio.create_task(_pump(other, one), name="tunnel-relay")]
    try:
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        await asyncio.gather(one.close(), other.close(), return_exceptions=True)


async def relay_bytes(read: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]],
                      ws: WebSocket) -> None:
    """A byte stream (`read` returns b"" at its end) and a WebSocket's binary messages, both ways, until
    either ends; the WebSocket is closed then (the caller closes the byte stream)."""

    async def out() -> None:
        while data := await read():
            await ws.send_bytes(data)

    async def back() -> None:
        while (message := await ws.receive()).type == WSMsgType.BINARY:
            await write(message.data)

    pumps = [asyncio.create_task(out(), name="tunnel-bytes"), asyncio.create_task(back(), name="tunnel-bytes")]
    try:
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        await ws.close()
