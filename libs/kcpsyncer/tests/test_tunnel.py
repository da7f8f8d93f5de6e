"""The syncer's end of the tunnel against a fake physical cluster: it maps the upstream namespace itself and
opens a stream only for a pod it synced (its owner label, from that logical cluster and namespace)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import structlog
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.tunnel import StreamHead, StreamRequest
from kcpsyncer import downstream_namespace
from kcpsyncer.names import OWNER_LABEL, UPSTREAM_CLUSTER_ANNOTATION, UPSTREAM_NAMESPACE_ANNOTATION, owner
from kcpsyncer.tunnel import Tunnel

OPTIONS: dict[str, Any] = {"component": "tunnel-tests", "version": "0.1.0", "qps": 0, "burst": 0}
LC, TARGET = "tenant", "east"
MAPPED = downstream_namespace(LC, "default")


def pod(name: str, *, labels: dict[str, str] | None = None, upstream_namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": MAPPED,
                         "labels": {OWNER_LABEL: owner(LC, TARGET)} if labels is None else labels,
                         "annotations": {UPSTREAM_CLUSTER_ANNOTATION: LC,
                                         UPSTREAM_NAMESPACE_ANNOTATION: upstream_namespace}}}


PODS = {"web": pod("web"), "planted": pod("planted", labels={}), "moved": pod("moved", upstream_namespace="other")}


class FakeKcp:
    """kcp's end of the tunnel, in short: it drops the first control connection, asks the second for a log,
    and keeps what the syncer's data connection carries."""

    def __init__(self) -> None:
        self.controls = 0
        self.received: asyncio.Queue[str | bytes] = asyncio.Queue()

    async def tunnel(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        if "stream" in request.query:
            assert request.query["stream"] == "id-1"
            async for message in ws:
                await self.received.put(message.data)
            return ws
        self.controls += 1
        if self.controls > 1:
            await ws.send_str(StreamRequest("id-1", "log", "default", "web", (("tailLines", "1"),)).encode())
            async for _ in ws:
                pass
        await ws.close()
        return ws


KCP = web.AppKey("kcp", FakeKcp)


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[TestServer, list[str]]]:
    """A physical cluster with three pods in the tenant's mapped namespace; it records the logs it serves."""
    served: list[str] = []

    async def get_pod(request: web.Request) -> web.Response:
        found = PODS.get(request.match_info["name"]) if request.match_info["namespace"] == MAPPED else None
        if found is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return web.json_response(found)

    async def log(request: web.Request) -> web.Response:
        served.append(request.path)
        return web.Response(text=f"tail {request.query.get('tailLines')}\n")

    app = web.Application()
    app[KCP] = FakeKcp()
    app.router.add_get("/api/v1/namespaces/{namespace}/pods/{name}", get_pod)
    app.router.add_get("/api/v1/namespaces/{namespace}/pods/{name}/log", log)
    app.router.add_get(f"/clusters/{LC}/apis/workload.kcp.io/v1alpha1/synctargets/{TARGET}/tunnel", app[KCP].tunnel)
    server = TestServer(app)
    await server.start_server()
    try:
        yield server, served
    finally:
        await server.close()


def _kubeconfig(server: TestServer) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                           "clusters": [{"name": "c", "cluster": {"server": str(server.make_url(""))}}],
                           "users": [{"name": "u", "user": {"token": "t"}}],
                           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]})


@pytest.fixture
async def tunnel(cluster: tuple[TestServer, list[str]]) -> AsyncIterator[Tunnel]:
    text = _kubeconfig(cluster[0])
    async with await ClientFactory.from_text(text, **OPTIONS) as up, \
            await KubeClientFactory.from_text(text, name=TARGET, **OPTIONS) as down:
        yield Tunnel(upstream=up, downstream=down, logical_cluster=LC, sync_target=TARGET, owner=owner(LC, TARGET),
                     log=structlog.get_logger())


async def test_a_synced_pods_log_is_opened_in_the_mapped_namespace(tunnel: Tunnel,
                                                                   cluster: tuple[TestServer, list[str]]) -> None:
    head, opened = await tunnel._open(StreamRequest("1", "log", "default", "web", (("tailLines", "2"),)))
    assert head.status == 200 and isinstance(opened, aiohttp.ClientResponse)
    async with opened:
        assert await opened.text() == "tail 2\n"
    assert cluster[1] == [f"/api/v1/namespaces/{MAPPED}/pods/web/log"]


@pytest.mark.parametrize("name", ["planted", "moved", "absent", "web/../../../secrets", "..", "Web"])
async def test_a_pod_the_syncer_did_not_sync_is_not_found(tunnel: Tunnel, cluster: tuple[TestServer, list[str]],
                                                          name: str) -> None:
    head, opened = await tunnel._open(StreamRequest("1", "log", "default", name))
    assert (head.status, opened) == (404, None)
    assert f'pods \\"{name}\\" not found' in head.body
    assert cluster[1] == []  # nothing was opened downstream


async def test_the_syncer_reconnects_a_dropped_tunnel_and_serves_streams_on_it(
        tunnel: Tunnel, cluster: tuple[TestServer, list[str]]) -> None:
    kcp = cluster[0].app[KCP]
    running = asyncio.create_task(tunnel.run())
    try:
        async with asyncio.timeout(10):
            head = StreamHead.decode(str(await kcp.received.get()))
            assert head.status == 200
            assert await kcp.received.get() == b"tail 1\n"
        assert kcp.controls == 2  # the first was dropped; the syncer came back
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_a_pod_of_another_workspace_is_served_only_as_the_engine_of_that_placed_workspace_synced_it(
        tunnel: Tunnel, cluster: tuple[TestServer, list[str]]) -> None:
    """kcp names the pod's workspace when it is placed on the SyncTarget: the namespace is then mapped from that
    workspace, and the pod must carry that workspace's owner label (the fixture's pods are this workspace's)."""
    head, opened = await tunnel._open(StreamRequest("1", "log", "default", "web", cluster="team-a"))
    assert (head.status, opened) == (404, None)
    assert cluster[1] == []
