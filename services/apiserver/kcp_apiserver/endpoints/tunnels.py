"""The syncers' tunnels, kcp's side: `synctargets/<name>/tunnel`, and the streams opened through them.

A syncer (push or pull mode alike) holds one control WebSocket per SyncTarget, opened as `get
synctargets/tunnel` on its SyncTarget in its logical cluster. To reach a pod, kcp sends a `StreamRequest`
on it and waits for the syncer to dial back a data WebSocket with the request's id (random, so only the
syncer that was asked can claim it, and only on the same SyncTarget). The wire is kcpcommon.tunnel's.

The tunnels live in this process: with several apiserver replicas (or --workers), a stream reaches a
SyncTarget only on the replica its syncer is connected to; elsewhere it is answered 503.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import structlog
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.actions import Action, ActionCall, ActionResult
from kcpcommon.keys import sync_target_key
from kcpcommon.tunnel import STREAM_PARAM, TUNNEL_SUBRESOURCE, StreamRequest

log = structlog.get_logger(__name__)

DIAL_BACK_TIMEOUT = 10.0  # seconds a syncer has to dial back for a stream
HEARTBEAT = 20.0  # seconds between pings on a control connection: a dead syncer's tunnel goes within two

Target = tuple[str, str]  # (logical cluster, SyncTarget name)


@dataclass(frozen=True)
class PodRoute:
    """Where a pod's streams go: the SyncTarget whose syncer runs it, and the pod's workspace (the SyncTarget's
    own, or one placed on it)."""

    target: Target
    cluster: str


@dataclass
class _Pending:
    target: Target
    connected: asyncio.Future[web.WebSocketResponse]
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class Tunnels:
    """The control connection of each SyncTarget's syncer, and the streams waiting for their data connection."""

    def __init__(self, *, dial_back_timeout: float = DIAL_BACK_TIMEOUT) -> None:
        self.dial_back_timeout = dial_back_timeout
        self._control: dict[Target, web.WebSocketResponse] = {}
        self._pending: dict[str, _Pending] = {}

    def connected(self, target: Target) -> bool:
        return target in self._control

    def placed(self, name: str, keys: Collection[str]) -> Target | None:
        """The connected SyncTarget named `name` whose `sync_target_key` is one of `keys` (a namespace's placed
        labels: its pods run on a SyncTarget of another workspace, shared compute)."""
        return next((t for t in sorted(self._control) if t[1] == name and sync_target_key(*t) in keys), None)

    async def serve_control(self, request: web.Request, target: Target) -> web.WebSocketResponse:
        """Holds a syncer's control connection until it closes; a newer one for the same SyncTarget wins."""
        ws = web.WebSocketResponse(heartbeat=HEARTBEAT)
        await ws.prepare(request)
        previous = self._control.get(target)
        self._control[target] = ws
        if previous is not None:
            await previous.close()
        log.info("syncer tunnel connected", cluster=target[0], sync_target=target[1])
        try:
            async for _ in ws:  # the syncer says nothing on it; its end is what matters
                pass
        finally:
            if self._control.get(target) is ws:
                del self._control[target]
                for stream_id, pending in list(self._pending.items()):
                    if pending.target == target and not pending.connected.done():
                        pending.connected.set_exception(ConnectionResetError("the syncer's tunnel closed"))
                        del self._pending[stream_id]
            log.info("syncer tunnel closed", cluster=target[0], sync_target=target[1])
        return ws

    async def serve_data(self, request: web.Request, target: Target, stream_id: str) -> web.WebSocketResponse:
        """A syncer's data connection for one stream: handed to the waiting stream, held until it ends."""
        pending = self._pending.get(stream_id)
        if pending is None or pending.target != target or pending.connected.done():
            raise st.not_found("streams", stream_id)
        del self._pending[stream_id]
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        pending.connected.set_result(ws)
        await pending.finished.wait()
        await ws.close()
        return ws

    @asynccontextmanager
    async def stream(self, route: PodRoute, subresource: str, namespace: str, name: str,
                     query: tuple[tuple[str, str], ...],
                     protocols: tuple[str, ...] = (), *, upgrade: str = "") -> AsyncIterator[web.WebSocketResponse]:
        """The data connection of a new stream to the route's syncer; kube's 503 when there is no tunnel."""
        target = route.target
        control = self._control.get(target)
        if control is None or control.closed:
            raise st.APIError(503, "ServiceUnavailable",
                              f'the syncer of SyncTarget "{target[1]}" has no tunnel to this server: '
                              f"its pods' {subresource} cannot be reached now")
        stream_id = secrets.token_urlsafe(18)
        pending = _Pending(target, asyncio.get_running_loop().create_future())
        self._pending[stream_id] = pending
        try:
            await control.send_str(StreamRequest(stream_id, subresource, namespace, name, query, protocols,
                                                upgrade, "" if route.cluster == target[0] else route.cluster).encode())
            async with asyncio.timeout(self.dial_back_timeout):
                data = await pending.connected
        except (ConnectionError, TimeoutError) as exc:
            raise st.APIError(503, "ServiceUnavailable",
                              f'the syncer of SyncTarget "{target[1]}" did not open the stream: '
                              f"{str(exc) or type(exc).__name__}") from exc
        finally:
            self._pending.pop(stream_id, None)
        try:
            yield data
        finally:
            pending.finished.set()


def tunnel_action(tunnels: Tunnels) -> Action:
    """`synctargets/<name>/tunnel`: a syncer's control connection, or (`?stream=<id>`) a data connection."""

    async def connect(call: ActionCall) -> ActionResult:
        await call.registry.get(call.resource, call.cluster, "", call.name)  # kube's 404 for no such SyncTarget
        target = (call.cluster, call.name)
        stream_id = call.query.get(STREAM_PARAM, "")

        async def respond(request: web.Request) -> web.StreamResponse:
            if request.headers.get("Upgrade", "").lower() != "websocket":
                raise st.bad_request("Upgrade request required")
            if stream_id:
                return await tunnels.serve_data(request, target, stream_id)
            return await tunnels.serve_control(request, target)

        return ActionResult(respond=respond)

    return Action(TUNNEL_SUBRESOURCE, ("get",), connect, connect=True)
