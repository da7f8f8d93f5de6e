"""Opening a pod's exec, attach or portforward stream is a create, also when the client's handshake is a
WebSocket GET (kube 1.35's AuthorizePodWebsocketUpgradeCreatePermission); other GETs stay gets."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters.requestinfo import request_info

UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade"}


async def verb(request: web.Request) -> web.Response:
    return web.Response(text=request_context(request).info.verb)


@pytest.mark.parametrize(("path", "headers", "expected"), [
    ("/api/v1/namespaces/d/pods/p/exec", UPGRADE, "create"),
    ("/api/v1/namespaces/d/pods/p/attach", UPGRADE, "create"),
    ("/clusters/x/api/v1/namespaces/d/pods/p/portforward", UPGRADE, "create"),
    ("/api/v1/namespaces/d/pods/p/exec", {}, "get"),
    ("/api/v1/namespaces/d/pods/p/log", UPGRADE, "get"),
    ("/apis/example.com/v1/namespaces/d/pods/p/exec", UPGRADE, "get"),
])
async def test_a_websocket_handshake_to_a_pod_stream_is_a_create(path: str, headers: dict[str, str],
                                                                 expected: str) -> None:
    app = web.Application(middlewares=[request_info])
    app.router.add_get("/{tail:.*}", verb)
    async with TestClient(TestServer(app)) as client:
        reply = await client.get(path, headers=headers)
        assert await reply.text() == expected
