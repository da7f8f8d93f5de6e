"""The syncer's end of the tunnel: kcp reaches the pods this syncer mirrored (logs, exec, attach,
port-forward) through a connection the syncer opens, so it works in pull mode, where kcp cannot reach the
physical cluster, and in push mode alike (one code path).

The syncer holds a control WebSocket to its SyncTarget's `tunnel` subresource with its own identity; per
`StreamRequest` it dials back a data WebSocket and opens the stream downstream with its own credentials
(kcpcommon.tunnel has the wire). It maps the upstream namespace itself and serves only a pod that carries
its owner label and comes from that logical cluster and namespace: kcp names a pod, never a path, and
cannot make the syncer reach anything it did not sync. A pod of a workspace placed on the SyncTarget (the
request names that workspace) is served the same way, with that workspace's namespace mapping and owner
label: what this syncer's engine of that workspace synced.
"""

from __future__ import annotations

import asyncio
import json
import re

import aiohttp
from structlog.typing import FilteringBoundLogger

from kcpcommon.backoff import Backoff
from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpcommon.tasks import cancel_and_wait, spawn
from kcpcommon.tunnel import (
    SPDY,
    STREAM_PARAM,
    TUNNEL_SUBRESOURCE,
    WEBSOCKET,
    StreamHead,
    StreamRequest,
    TunnelProtocolError,
    relay,
    relay_bytes,
)
from kcpcommon.upgrade import Upgraded, upgrade

from .names import (
    HEARTBEAT_GROUP_VERSION,
    OWNER_LABEL,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    downstream_namespace,
    owner,
)
from .objects import meta

HEARTBEAT = 20.0  # seconds between pings on the control connection, so a dead kcp is noticed
CONNECT_TIMEOUT = 30.0
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _status(code: int, reason: str, message: str) -> str:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code})


def _not_found(name: str) -> StreamHead:
    return StreamHead(404, "application/json", body=_status(404, "NotFound", f'pods "{name}" not found'))


class Tunnel:
    """One syncer's tunnel to kcp: the control connection, and a relay per stream kcp asks for."""

    def __init__(self, *, upstream: ClientFactory, downstream: KubeClientFactory, logical_cluster: str,
                 sync_target: str, owner: str, log: FilteringBoundLogger) -> None:
        self.up = upstream.api_client(logical_cluster)
        self.down = downstream.api_client()
        self.pods = downstream.dynamic().resource("v1", "pods", namespaced=True)
        self.lc, self.owner, self.log = logical_cluster, owner, log.bind(tunnel=sync_target)
        self.target = sync_target
        self.path = f"/apis/{HEARTBEAT_GROUP_VERSION}/synctargets/{sync_target}/{TUNNEL_SUBRESOURCE}"
        self._streams: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Keeps the control connection open (reconnecting with backoff) until cancelled."""
        delays = Backoff()
        try:
            while True:
                try:
                    async with await self.up.websocket(self.path, heartbeat=HEARTBEAT) as control:
                        delays.reset()
                        self.log.info("tunnel open")
                        async for message in control:
                            if message.type == aiohttp.WSMsgType.TEXT:
                                self._start(message.data)
                    self.log.info("tunnel closed by kcp")
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    self.log.warning("tunnel failed; reconnecting", error=str(exc) or type(exc).__name__)
                await asyncio.sleep(delays.next())
        finally:
            await cancel_and_wait(*self._streams)

    def _start(self, text: str) -> None:
        try:
            request = StreamRequest.decode(text)
        except TunnelProtocolError as exc:
            self.log.warning("not a stream request; ignored", error=str(exc))
            return
        task = spawn(self.serve(request), name=f"tunnel-stream:{request.subresource}:{request.name}")
        self._streams.add(task)
        task.add_done_callback(self._streams.discard)

    async def serve(self, request: StreamRequest) -> None:
        """Dials back for `request` and relays its stream from the physical cluster."""
        log = self.log.bind(stream=request.subresource, namespace=request.namespace, name=request.name)
        try:
            async with await self.up.websocket(self.path, query=[(STREAM_PARAM, request.id)]) as data:
                head, opened = await self._open(request)
                try:
                    await data.send_str(head.encode())
                    if isinstance(opened, aiohttp.ClientWebSocketResponse):
                        await relay(data, opened)
                    elif isinstance(opened, Upgraded):
                        await _relay_upgraded(opened, data)
                    elif opened is not None:
                        await _copy(opened, data)
                finally:  # whatever ended the stream, the cluster's side of it ends too
                    if isinstance(opened, aiohttp.ClientWebSocketResponse):
                        await opened.close()
                    elif opened is not None:
                        opened.close()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            log.info("stream ended", error=str(exc) or type(exc).__name__)

    async def _open(self, request: StreamRequest) -> tuple[StreamHead, aiohttp.ClientWebSocketResponse
                                                                      | aiohttp.ClientResponse | Upgraded | None]:
        """The downstream request for `request`, if the pod is this syncer's: its head and its stream."""
        workspace = request.cluster or self.lc
        namespace = downstream_namespace(workspace, request.namespace)
        try:
            if not _NAME.match(request.name) or not await self._owns(namespace, request, workspace):
                return _not_found(request.name), None
        except APIClientError as exc:
            code = exc.status if exc.status >= 400 else 503
            return StreamHead(code, "application/json", body=_status(code, exc.reason, exc.message)), None
        path = f"/api/v1/namespaces/{namespace}/pods/{request.name}/{request.subresource}"
        try:
            if request.upgrade == SPDY:
                return await self._spdy(path, request)
            if request.upgrade != WEBSOCKET and request.subresource != "log":
                return await self._answer(path, request), None
            if request.subresource == "log":
                response = await self.down.send("GET", path, query=request.query, headers={},
                                                timeout=aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT))
                if response.status != 200:
                    async with response:
                        return StreamHead(response.status, response.content_type,
                                          body=(await response.read()).decode(errors="replace")), None
                return StreamHead(200, response.headers.get("Content-Type", "text/plain")), response
            ws = await self.down.websocket(path, query=request.query, protocols=request.protocols)
            return StreamHead(101, protocol=ws.protocol or ""), ws
        except aiohttp.WSServerHandshakeError as exc:
            return await self._refusal(path, request, exc), None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            return StreamHead(503, "application/json", body=_status(
                503, "ServiceUnavailable", f"the physical cluster cannot be reached: {str(exc) or type(exc)}")), None

    async def _spdy(self, path: str, request: StreamRequest) -> tuple[StreamHead, Upgraded | None]:
        """A plain SPDY/3.1 upgrade downstream (a POST, as kubectl's), offering the client's versions."""
        answer = await upgrade(self.down, "POST", path, query=request.query, headers=[
            ("Connection", "Upgrade"), ("Upgrade", SPDY),
            *(("X-Stream-Protocol-Version", version) for version in request.protocols)])
        if answer.status != 101:
            return StreamHead(answer.status, answer.headers.get("content-type", ""),
                              body=answer.body.decode(errors="replace")), None
        return StreamHead(101, protocol=answer.headers.get("x-stream-protocol-version", "")), answer

    async def _owns(self, namespace: str, request: StreamRequest, workspace: str) -> bool:
        try:
            pod = await self.pods.get(request.name, namespace=namespace)
        except APINotFoundError:
            return False
        labels, annotations = meta(pod).get("labels") or {}, meta(pod).get("annotations") or {}
        mine = self.owner if workspace == self.lc else owner(workspace, self.target)
        return (labels.get(OWNER_LABEL) == mine and annotations.get(UPSTREAM_CLUSTER_ANNOTATION) == workspace
                and annotations.get(UPSTREAM_NAMESPACE_ANNOTATION) == request.namespace)

    async def _answer(self, path: str, request: StreamRequest) -> StreamHead:
        """The cluster's answer to the request without an upgrade: kube checks the pod and the container
        first, then refuses with 400 "Upgrade request required"."""
        response = await self.down.send("GET", path, query=request.query, headers={"Accept": "application/json"},
                                        timeout=aiohttp.ClientTimeout(total=CONNECT_TIMEOUT))
        async with response:
            body = (await response.read()).decode(errors="replace")
        return StreamHead(response.status, response.content_type, body=body)

    async def _refusal(self, path: str, request: StreamRequest, exc: aiohttp.WSServerHandshakeError) -> StreamHead:
        """Why the cluster refused the upgrade: a WebSocket handshake drops the body, so the same request is
        asked again without the upgrade, which kube checks the same way before it would upgrade."""
        try:
            head = await self._answer(path, request)
            if head.status >= 400 and head.content_type == "application/json":
                return head
        except (aiohttp.ClientError, OSError, TimeoutError):
            pass
        return StreamHead(exc.status or 502, "application/json",
                          body=_status(exc.status or 502, "", f"unable to upgrade connection: {exc.message}"))


async def _relay_upgraded(upgraded: Upgraded, data: aiohttp.ClientWebSocketResponse) -> None:
    """The cluster's upgraded connection to kcp and back, byte for byte."""
    reader, writer = upgraded.reader, upgraded.writer
    assert reader is not None and writer is not None

    async def write(chunk: bytes) -> None:
        writer.write(chunk)
        await writer.drain()

    await relay_bytes(lambda: reader.read(65536), write, data)


async def _copy(response: aiohttp.ClientResponse, data: aiohttp.ClientWebSocketResponse) -> None:
    """A log's body to kcp, chunk by chunk, until it ends or kcp closes the stream."""

    async def chunks() -> None:
        async for chunk in response.content.iter_any():
            await data.send_bytes(chunk)

    copier = asyncio.create_task(chunks(), name="tunnel-log")
    closed = asyncio.create_task(data.receive(), name="tunnel-log-closed")  # kcp says nothing but its close
    try:
        await asyncio.wait({copier, closed}, return_when=asyncio.FIRST_COMPLETED)
        if copier.done():
            copier.result()
    finally:
        for task in (copier, closed):
            task.cancel()
        await asyncio.gather(copier, closed, return_exceptions=True)
        response.close()
        await data.close()
