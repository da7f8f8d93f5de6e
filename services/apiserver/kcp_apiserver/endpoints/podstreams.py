"""`pods/log`, `pods/exec`, `pods/attach`, `pods/portforward` of the pods syncers mirror into kcp, carried to
the physical cluster through the pod's syncer's tunnel (tunnels.py).

The authorizer has already judged the request in the logical cluster with kube's verbs (`get pods/log`,
`create` for the others, a WebSocket GET included). Here the pod is read (kube's 404), its SyncTarget taken
from its upsync label `state.workload.kcp.io/<target>: Upsync` (a pod without one was not put there by a
syncer, so no cluster runs it: kube's answer for a pod without a host), and the stream handed to that
SyncTarget's syncer, which maps the names and opens the request downstream itself.

A log is relayed chunk by chunk (`follow` keeps it open); exec, attach and port-forward are WebSockets
relayed message by message with the subprotocol the physical cluster agreed to (kubectl 1.30+ for exec and
attach, 1.31+ for port-forward; 1.31+ tunnels port-forward's SPDY inside the WebSocket, which is relayed as
well). A plain SPDY/3.1 upgrade (older kubectl, kubectl told to, or kubectl falling back after any failed
WebSocket upgrade) is opened downstream as SPDY too and its bytes relayed as they are: kcp parses neither.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import WSMsgType, web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.endpoints import spdyupgrade
from kcp_apiserver.endpoints.tunnels import PodRoute, Tunnels
from kcp_apiserver.registry.actions import Action, ActionCall, ActionResult
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.builtin.podcolumns import UPSYNC, UPSYNC_LABEL_PREFIX
from kcp_apiserver.registry.resource import Obj
from kcpcommon.keys import placed_keys
from kcpcommon.tunnel import SPDY, WEBSOCKET, StreamHead, TunnelProtocolError, relay, relay_bytes

UPGRADE_REQUIRED = "Upgrade request required"
HEAD_TIMEOUT = 30.0  # seconds the syncer has to say how the physical cluster answered
CLIENT_CHECK = 5.0  # seconds between looks at a quiet followed log's client: gone, the stream ends


def sync_target_of(pod: Obj) -> str | None:
    """The SyncTarget whose syncer mirrored `pod` into kcp, or None."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    targets = sorted(k.removeprefix(UPSYNC_LABEL_PREFIX) for k, v in labels.items()
                     if k.startswith(UPSYNC_LABEL_PREFIX) and v == UPSYNC)
    return targets[0] if targets else None


def _pairs(query: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    items = getattr(query, "items", None)
    return tuple((str(k), str(v)) for k, v in items()) if items else ()  # a MultiDict's items keep repeats


async def _head(data: web.WebSocketResponse) -> StreamHead:
    message = await data.receive(timeout=HEAD_TIMEOUT)
    if message.type != WSMsgType.TEXT:
        raise st.APIError(503, "ServiceUnavailable", "the syncer closed the stream before the cluster answered")
    try:
        return StreamHead.decode(message.data)
    except TunnelProtocolError as exc:
        raise st.internal(f"the syncer's answer is not the tunnel's: {exc}") from exc


def _error(head: StreamHead) -> web.Response:
    """The physical cluster's refusal, as it gave it (a kube Status)."""
    return web.Response(status=head.status, body=head.body.encode(), content_type="application/json")


async def _log(tunnels: Tunnels, request: web.Request, route: PodRoute, namespace: str,
               name: str) -> web.StreamResponse:
    async with tunnels.stream(route, "log", namespace, name, _pairs(request.query)) as data:
        head = await _head(data)
        if head.status != 200:
            return _error(head)
        response = web.StreamResponse(status=200, headers={"Content-Type": head.content_type or "text/plain"})
        await response.prepare(request)
        try:
            while True:
                if _client_gone(request):
                    return response
                try:
                    message = await data.receive(timeout=CLIENT_CHECK)
                except TimeoutError:
                    continue
                if message.type != WSMsgType.BINARY:
                    break
                await response.write(message.data)
            await response.write_eof()
        except ConnectionResetError:  # the client left while a line was on its way
            pass
        return response


def _client_gone(request: web.Request) -> bool:
    """Whether the client closed its connection: a followed log that prints nothing must not outlive it."""
    return request.transport is None or request.transport.is_closing()


async def _upgraded(tunnels: Tunnels, request: web.Request, subresource: str, route: PodRoute, namespace: str,
                    name: str) -> web.StreamResponse:
    upgrade = request.headers.get("Upgrade", "")
    if upgrade.upper() == SPDY.upper():
        return await _spdy(tunnels, request, subresource, route, namespace, name)
    if upgrade.lower() != WEBSOCKET:
        return await _not_upgraded(tunnels, request, subresource, route, namespace, name)
    offered = _header_values(request, "Sec-WebSocket-Protocol")
    async with tunnels.stream(route, subresource, namespace, name, _pairs(request.query), offered,
                              upgrade=WEBSOCKET) as data:
        head = await _head(data)
        if head.status != 101:
            return _error(head)
        client = web.WebSocketResponse(protocols=(head.protocol,) if head.protocol else ())
        await client.prepare(request)
        await relay(client, data)
        return client


async def _spdy(tunnels: Tunnels, request: web.Request, subresource: str, route: PodRoute, namespace: str,
                name: str) -> web.StreamResponse:
    """kubectl's SPDY/3.1 (before 1.30, when told to, or after a failed WebSocket upgrade): the cluster's
    SPDY connection, byte for byte, with the stream protocol version it chose."""
    offered = _header_values(request, "X-Stream-Protocol-Version")
    async with tunnels.stream(route, subresource, namespace, name, _pairs(request.query), offered,
                              upgrade=SPDY) as data:
        head = await _head(data)
        if head.status != 101:
            return _error(head)
        connection = await spdyupgrade.upgrade(request, head.protocol)
        try:
            await relay_bytes(connection.incoming.get, connection.send, data)
        finally:
            connection.close()
        return connection.response


async def _not_upgraded(tunnels: Tunnels, request: web.Request, subresource: str, route: PodRoute, namespace: str,
                        name: str) -> web.StreamResponse:
    """A stream asked for without an upgrade: the cluster's answer (its refusal of the pod or container, or
    kube's "Upgrade request required")."""
    async with tunnels.stream(route, subresource, namespace, name, _pairs(request.query)) as data:
        head = await _head(data)
    if head.status >= 400:
        return _error(head)
    raise st.bad_request(UPGRADE_REQUIRED)


def _header_values(request: web.Request, name: str) -> tuple[str, ...]:
    return tuple(v.strip() for h in request.headers.getall(name, []) for v in h.split(",") if v.strip())


async def _route(tunnels: Tunnels, call: ActionCall, sync_target: str) -> PodRoute:
    """The pod's SyncTarget: one of another workspace its namespace is placed on (shared compute: the tunnel of
    that SyncTarget's syncer is registered there), else the one of that name in the pod's own workspace."""
    try:
        namespace = await call.registry.get(NAMESPACE, call.cluster, "", call.namespace)
    except st.APIError as exc:
        if exc.code != 404:
            raise
        namespace = {}
    placed = tunnels.placed(sync_target, placed_keys((namespace.get("metadata") or {}).get("labels")))
    return PodRoute(placed or (call.cluster, sync_target), call.cluster)


def pod_stream_actions(tunnels: Tunnels) -> tuple[Action, ...]:
    """kcp's pods' streaming subresources, each opened through the pod's syncer's tunnel."""

    def action(subresource: str, verbs: tuple[str, ...], kind: str) -> Action:
        async def connect(call: ActionCall) -> ActionResult:
            pod = await call.registry.get(call.resource, call.cluster, call.namespace, call.name)
            sync_target = sync_target_of(pod)
            if sync_target is None:
                raise st.bad_request(f"pod {call.name} does not have a host assigned")
            route = await _route(tunnels, call, sync_target)

            async def respond(request: web.Request) -> web.StreamResponse:
                if subresource == "log":
                    return await _log(tunnels, request, route, call.namespace, call.name)
                return await _upgraded(tunnels, request, subresource, route, call.namespace, call.name)

            return ActionResult(respond=respond)

        return Action(subresource, verbs, connect, ("", "v1", kind), connect=subresource != "log")

    return (action("log", ("get",), "Pod"),
            action("exec", ("create", "get"), "PodExecOptions"),
            action("attach", ("create", "get"), "PodAttachOptions"),
            action("portforward", ("create", "get"), "PodPortForwardOptions"))
