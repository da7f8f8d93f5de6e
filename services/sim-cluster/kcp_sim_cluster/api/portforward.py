"""pods/portforward: each forwarded connection to a container port gets a canned HTTP/1.1 answer naming the
pod, the port and the request's path (no process listens anywhere; a port no container declares refuses).

The wires:
- SPDY/3.1 with `portforward.k8s.io`, plain (`Upgrade: SPDY/3.1`: kubectl 1.30 and older, or
  KUBECTL_PORT_FORWARD_WEBSOCKETS=false) or tunnelled in a WebSocket's binary messages
  (`SPDY/3.1+portforward.k8s.io`: kubectl 1.31+). Per connection the client opens an error stream and a
  data stream (headers `streamType`, `port`, `requestID`); the answer goes on the data stream, then both
  streams are finished.
- the WebSocket channel protocol `v4.channel.k8s.io` / `portforward.k8s.io` (other clients): ports from
  the query, channel 2i carries port i's data and 2i+1 its errors, each opened by a message holding the
  port (uint16, little-endian).
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import WSMsgType, web

from kcp_apiserver.embedding import Action, ActionCall, ActionResult, Obj, spdyupgrade
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api import spdy

TUNNEL = "SPDY/3.1+portforward.k8s.io"
CHANNELS = ("v4.channel.k8s.io", "portforward.k8s.io")
SPDY_PROTOCOLS = ("portforward.k8s.io",)


def container_ports(pod: Obj) -> set[int]:
    return {int(port.get("containerPort") or 0) for c in (pod.get("spec") or {}).get("containers") or []
            for port in c.get("ports") or []}


def answer(pod: Obj, port: int, request: bytes) -> bytes:
    """The canned HTTP response to what a client sent to `port`."""
    line = request.split(b"\r\n", 1)[0].decode(errors="replace").split()
    path = line[1] if len(line) > 1 else "/"
    meta = pod["metadata"]
    body = f"pod {meta.get('namespace', '')}/{meta['name']} port {port} path {path}\n".encode()
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    return head + body


def refused(pod: Obj, port: int) -> bytes:
    return (f"error forwarding port {port} to pod {pod['metadata']['name']}: failed to connect to localhost:{port} "
            "inside the pod: connect: connection refused").encode()


def _complete(request: bytes) -> bool:
    return b"\r\n\r\n" in request


class SpdySession:
    """One SPDY connection: streams paired by requestID, each data stream answered once."""

    def __init__(self, send: spdyupgrade.Sender, pod: Obj) -> None:
        self.send, self.pod = send, pod
        self.framer = spdy.Framer()
        self.kinds: dict[int, tuple[str, str, int]] = {}  # stream -> (streamType, requestID, port)
        self.errors: dict[str, int] = {}  # requestID -> its error stream
        self.received: dict[int, bytes] = {}
        self.answered: set[int] = set()

    async def run(self, chunks: AsyncIterator[bytes]) -> None:
        async for chunk in chunks:
            for frame in self.framer.feed(chunk):
                if not await self.handle(frame):
                    return

    async def handle(self, frame: spdy.Frame) -> bool:
        if not frame.control:
            await self.data(frame)
        elif frame.kind == spdy.SYN_STREAM:
            headers = self.framer.headers(frame.payload)
            kind, request_id = headers.get("streamtype", ""), headers.get("requestid", "")
            port = int(headers.get("port", "0") or 0)
            self.kinds[frame.stream] = (kind, request_id, port)
            if kind == "error":
                self.errors[request_id] = frame.stream
            await self.send(self.framer.syn_reply(frame.stream, {}))
            if kind == "data" and port not in container_ports(self.pod):
                await self.finish(frame.stream, refused(self.pod, port), b"")
        elif frame.kind in (spdy.SYN_REPLY, spdy.HEADERS):
            self.framer.headers(frame.payload)  # keeps the compression context in step
        elif frame.kind == spdy.PING:
            await self.send(spdy.ping(frame.payload))
        elif frame.kind == spdy.GOAWAY:
            return False
        return True

    async def data(self, frame: spdy.Frame) -> None:
        kind, _, port = self.kinds.get(frame.stream, ("", "", 0))
        if kind != "data" or frame.stream in self.answered:
            return
        self.received[frame.stream] = self.received.get(frame.stream, b"") + frame.payload
        if _complete(self.received[frame.stream]) or frame.flags & spdy.FLAG_FIN:
            await self.finish(frame.stream, b"", answer(self.pod, port, self.received.pop(frame.stream)))

    async def finish(self, stream: int, error: bytes, reply: bytes) -> None:
        """Answers a connection: the reply on its data stream, any error on its error stream; both end."""
        self.answered.add(stream)
        error_stream = self.errors.get(self.kinds[stream][1])
        if error_stream is not None:
            await self.send(spdy.data(error_stream, error, fin=True))
        await self.send(spdy.data(stream, reply, fin=True))


async def binary_messages(ws: web.WebSocketResponse) -> AsyncIterator[bytes]:
    async for message in ws:
        if message.type == WSMsgType.BINARY:
            yield message.data


async def channel_session(ws: web.WebSocketResponse, pod: Obj, ports: list[int]) -> None:
    """The channel protocol: each port's data and error channels opened with the port, requests answered."""
    for index, port in enumerate(ports):
        for channel in (2 * index, 2 * index + 1):
            await ws.send_bytes(bytes([channel]) + struct.pack("<H", port))
    received: dict[int, bytes] = {}
    async for message in ws:
        if message.type != WSMsgType.BINARY or len(message.data) < 2 or message.data[0] % 2:
            continue
        index = message.data[0] // 2
        if index >= len(ports):
            continue
        received[index] = received.get(index, b"") + message.data[1:]
        if _complete(received[index]):
            port = ports[index]
            if port in container_ports(pod):
                await ws.send_bytes(bytes([2 * index]) + answer(pod, port, received.pop(index)))
            else:
                await ws.send_bytes(bytes([2 * index + 1]) + refused(pod, port))


def _ports(query: Any) -> list[int]:
    values = query.getall("ports", []) if hasattr(query, "getall") else []
    try:
        ports = [int(p) for value in values for p in str(value).split(",") if p]
    except ValueError:
        raise st.bad_request("unable to parse port: invalid syntax") from None
    if any(not 0 < port < 65536 for port in ports):
        raise st.bad_request("port must be > 0 and < 65536")
    return ports


async def _serve(request: web.Request, pod: Obj) -> web.StreamResponse:
    upgrade = request.headers.get("Upgrade", "")
    if upgrade.upper() == "SPDY/3.1":
        connection = await spdyupgrade.upgrade(request, spdyupgrade.spdy_protocol(request, SPDY_PROTOCOLS))
        try:
            await SpdySession(connection.send, pod).run(connection.chunks())
        finally:
            connection.close()
        return connection.response
    if upgrade.lower() != "websocket":
        raise st.bad_request("Upgrade request required")
    ports = _ports(request.query)
    ws = web.WebSocketResponse(protocols=(TUNNEL, *CHANNELS))
    await ws.prepare(request)
    try:
        if ws.ws_protocol == TUNNEL:
            await SpdySession(ws.send_bytes, pod).run(binary_messages(ws))
        else:
            await channel_session(ws, pod, ports)
    finally:
        await ws.close()
    return ws


async def port_forward(call: ActionCall) -> ActionResult:
    pod = await call.registry.get(call.resource, call.cluster, call.namespace, call.name)
    if not (pod.get("spec") or {}).get("nodeName"):
        raise st.bad_request(f"pod {call.name} does not have a host assigned")
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        raise st.bad_request(f"cannot port-forward to a completed pod; current phase is {phase}")
    return ActionResult(respond=lambda request: _serve(request, pod))


PORT_FORWARD = Action("portforward", ("create", "get"), port_forward, ("", "v1", "PodPortForwardOptions"),
                      connect=True)
