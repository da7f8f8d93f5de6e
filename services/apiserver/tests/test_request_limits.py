"""The in-flight limits and the request timeout, as filters in front of a handler the test holds open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Gauge

from kcp_apiserver.apimachinery.request import AUTHENTICATED, SYSTEM_MASTERS, UserInfo
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters import Handler
from kcp_apiserver.filters.errors import errors_to_status
from kcp_apiserver.filters.inflight import max_inflight
from kcp_apiserver.filters.requestinfo import request_info
from kcp_apiserver.filters.timeout import request_timeout

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@web.middleware
async def header_user(request: web.Request, handler: Handler) -> web.StreamResponse:
    """X-User names the user; X-Masters puts them in system:masters."""
    groups = (SYSTEM_MASTERS, AUTHENTICATED) if "X-Masters" in request.headers else (AUTHENTICATED,)
    request_context(request).user = UserInfo(request.headers.get("X-User", "alice"), groups=groups)
    return await handler(request)


class Held:
    """A handler that answers once the test releases it, and tells when requests have entered."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0
        self.changed = asyncio.Condition()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        async with self.changed:
            self.entered += 1
            self.changed.notify_all()
        if request.query.get("hold") == "1":
            await self.release.wait()
        return web.json_response({"ok": True})

    async def wait_entered(self, count: int) -> None:
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: self.entered >= count), 5)


def gauge_value(registry: CollectorRegistry, kind: str) -> float | None:
    return registry.get_sample_value("inflight", {"request_kind": kind})


@pytest.fixture
async def limited() -> AsyncIterator[tuple[TestClient[Any, Any], Held, CollectorRegistry]]:
    held = Held()
    registry = CollectorRegistry()
    gauge = Gauge("inflight", "test", ["request_kind"], registry=registry)
    app = web.Application(middlewares=[errors_to_status, request_info, request_timeout(1.0), header_user,
                                       max_inflight(1, 1, gauge=gauge)])
    app.router.add_route("*", "/{tail:.*}", held.handle)
    client = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield client, held, registry
    finally:
        held.release.set()
        await client.close()


async def test_past_the_limit_a_request_is_429_with_retry_after(limited: Any) -> None:
    client, held, registry = limited
    holding = asyncio.create_task(client.post(CONFIGMAPS + "?hold=1", json={}))
    await held.wait_entered(1)
    assert gauge_value(registry, "mutating") == 1
    refused = await client.delete(CONFIGMAPS + "/x")
    assert refused.status == 429 and refused.headers["Retry-After"] == "1"
    assert await refused.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Too many requests, please try again later.",
                                    "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1}, "code": 429}
    assert (await client.get(CONFIGMAPS)).status == 200  # reads have their own limit
    assert (await client.post(CONFIGMAPS, json={}, headers={"X-Masters": "1"})).status == 200
    held.release.set()
    assert (await holding).status == 200
    assert gauge_value(registry, "mutating") == 0
    assert (await client.post(CONFIGMAPS, json={})).status == 200


async def test_watches_are_not_counted_and_non_resource_requests_are(limited: Any) -> None:
    client, held, registry = limited
    watches = [asyncio.create_task(client.get(CONFIGMAPS + "?watch=1&hold=1")) for _ in range(3)]
    await held.wait_entered(3)
    assert gauge_value(registry, "readOnly") == 0
    holding = asyncio.create_task(client.get("/version?hold=1"))
    await held.wait_entered(4)
    assert (await client.get(CONFIGMAPS)).status == 429
    held.release.set()
    assert [(await w).status for w in watches] == [200, 200, 200] and (await holding).status == 200


async def test_a_request_past_the_timeout_is_504_and_a_watch_is_not_timed(limited: Any) -> None:
    client, held, _ = limited
    watch = asyncio.create_task(client.get(CONFIGMAPS + "?watch=1&hold=1"))
    timed_out = await client.get(CONFIGMAPS + "?hold=1")
    assert timed_out.status == 504
    assert await timed_out.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": "Timeout: request did not complete within the allotted timeout",
                                      "reason": "Timeout", "details": {}, "code": 504}
    assert not watch.done()
    held.release.set()
    assert (await watch).status == 200


async def test_a_timeout_inside_the_handler_is_not_the_request_timeout() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise TimeoutError("etcd took too long")

    app = web.Application(middlewares=[errors_to_status, request_info, request_timeout(5.0)])
    app.router.add_route("*", "/{tail:.*}", handler)
    async with TestClient(TestServer(app)) as client:
        reply = await client.get(CONFIGMAPS)
        assert reply.status == 500 and (await reply.json())["reason"] == "InternalError"
