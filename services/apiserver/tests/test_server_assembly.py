"""The API server as a library: a ServerConfig of one's own (authenticator, authorizer,
admission plugins) assembles a working server, and each extension point is honoured."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, UserInfo
from kcp_apiserver.filters.authorization import Decision
from kcp_apiserver.registry.admission import CREATE, AdmissionChain, Attributes
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.config import ServerConfig, ServerParts
from kcp_apiserver.server.kcp import namespace_controller, namespace_lifecycle


class HeaderAuthenticator:
    """Trusts an X-Test-User header: enough to tell users apart in a test."""

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        name = request.headers.get("X-Test-User")
        return UserInfo(name, groups=("testers",)) if name else None


class DenyUser:
    def __init__(self, user: str) -> None:
        self.user = user
        self.seen: list[RequestContext] = []

    async def authorize(self, ctx: RequestContext) -> Decision:
        self.seen.append(ctx)
        return Decision(ctx.user.name != self.user, "denied by the test")


class Recorder:
    """A mutating and validating plugin that records what it saw and in which order."""

    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation == CREATE and attrs.obj is not None and attrs.resource.kind == "ConfigMap":
            attrs.obj["metadata"].setdefault("labels", {})["admitted"] = "yes"
            self.log.append(("admit", attrs.ctx.user.name))

    async def validate(self, attrs: Attributes) -> None:
        if attrs.operation == CREATE and attrs.obj is not None and attrs.resource.kind == "ConfigMap":
            self.log.append(("validate", (attrs.obj["metadata"].get("labels") or {}).get("admitted"),
                             attrs.ctx.dry_run))
            if attrs.name == "refused":
                raise st.APIError(403, "Forbidden", "refused by the test plugin")


@pytest.fixture
async def assembled(etcd_endpoint: str) -> AsyncIterator[tuple[TestClient[Any, Any], DenyUser, list[Any]]]:
    seen: list[tuple[str, Any]] = []
    authorizer = DenyUser("mallory")

    async def recorder(parts: ServerParts) -> Recorder:
        return Recorder(seen)

    config = ServerConfig(etcd_endpoints=[etcd_endpoint], resources=BUILTINS,
                          authenticators=[HeaderAuthenticator()], authorizer=authorizer,
                          admission=[namespace_lifecycle, recorder], controllers=[namespace_controller],
                          identity=f"assembly-{uuid.uuid4().hex[:6]}")
    server = APIServer(config)
    await server.start()
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    try:
        yield client, authorizer, seen
    finally:
        await client.close()
        await server.stop()


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def test_requests_without_credentials_are_401_except_public_paths(assembled: Any) -> None:
    client, _, _ = assembled
    cluster = f"c-{uuid.uuid4().hex[:6]}"
    resp = await client.get(f"/clusters/{cluster}/api/v1/namespaces")
    assert resp.status == 401 and (await resp.json())["reason"] == "Unauthorized"
    for path in ("/version", "/version/", "/healthz", f"/clusters/{cluster}/version", f"/clusters/{cluster}/readyz"):
        assert (await client.get(path)).status == 200, path


async def test_the_configured_authorizer_decides_with_kubes_forbidden_message(assembled: Any) -> None:
    client, authorizer, _ = assembled
    cluster = f"c-{uuid.uuid4().hex[:6]}"
    resp = await client.get(f"/clusters/{cluster}/api/v1/namespaces/default/configmaps",
                            headers={"X-Test-User": "mallory"})
    body = await resp.json()
    assert resp.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('configmaps is forbidden: User "mallory" cannot list resource "configmaps" in API '
                               'group "" in the namespace "default": denied by the test')
    ok = await client.get(f"/clusters/{cluster}/api/v1/namespaces/default/configmaps",
                          headers={"X-Test-User": "alice"})
    assert ok.status == 200
    ctx = authorizer.seen[-1]
    assert (ctx.user.name, ctx.cluster, ctx.info.verb, ctx.info.resource) == ("alice", cluster, "list", "configmaps")


async def test_admission_mutates_before_it_validates_and_sees_the_request_context(assembled: Any) -> None:
    client, _, seen = assembled
    cluster = f"c-{uuid.uuid4().hex[:6]}"
    path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    alice = {"X-Test-User": "alice"}
    created = await client.post(path, json=_cm("one"), headers=alice)
    assert created.status == 201, await created.text()
    assert (await created.json())["metadata"]["labels"] == {"admitted": "yes"}
    assert seen[-2:] == [("admit", "alice"), ("validate", "yes", False)]
    dry = await client.post(path + "?dryRun=All", json=_cm("two"), headers=alice)
    assert dry.status == 201 and seen[-1] == ("validate", "yes", True)
    refused = await client.post(path, json=_cm("refused"), headers=alice)
    assert refused.status == 403 and (await refused.json())["message"] == "refused by the test plugin"
    assert (await client.get(f"{path}/refused", headers=alice)).status == 404


async def test_namespace_lifecycle_protects_the_namespaces_every_cluster_relies_on(assembled: Any) -> None:
    client, _, _ = assembled
    cluster = f"c-{uuid.uuid4().hex[:6]}"
    alice = {"X-Test-User": "alice"}
    await client.post(f"/clusters/{cluster}/api/v1/namespaces/default/configmaps", json=_cm("x"), headers=alice)
    resp = await client.delete(f"/clusters/{cluster}/api/v1/namespaces/default", headers=alice)
    body = await resp.json()
    assert resp.status == 403, body
    assert body["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'
    still = await client.get(f"/clusters/{cluster}/api/v1/namespaces/default", headers=alice)
    assert still.status == 200 and not (await still.json())["metadata"].get("deletionTimestamp")
    missing = await client.post(f"/clusters/{cluster}/api/v1/namespaces/nope/configmaps", json=_cm("y"),
                                headers=alice)
    assert missing.status == 404


async def test_admission_chain_refuses_an_object_that_is_not_a_plugin() -> None:
    with pytest.raises(TypeError):
        AdmissionChain([object()])
