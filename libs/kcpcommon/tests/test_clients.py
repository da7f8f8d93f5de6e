"""ClientFactory and the dynamic client: per-logical-cluster URLs, credentials, throttling, any resource.

KubeClientFactory (a plain server) has its own tests in test_kube_clients.py; only its throttling is here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client as kube
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import incluster_config

from kcp_process import KcpServer
from kcpcommon import errors
from kcpcommon.clients import ClientFactory, KubeClientFactory, base_server

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


def test_a_server_url_that_names_a_logical_cluster_is_reduced_to_the_server() -> None:
    assert base_server("https://kcp:6443/clusters/root:org/") == "https://kcp:6443"
    assert base_server("https://kcp:6443/clusters/*") == "https://kcp:6443"
    assert base_server("https://kcp:6443/") == "https://kcp:6443"


async def test_a_kubeconfig_for_one_logical_cluster_serves_every_logical_cluster(
        kcp: KcpServer, unique: str) -> None:
    text = kcp.kubeconfig.read_text()
    assert "/clusters/user" in text
    async with await ClientFactory.load(text, context="user", component="t", version="0") as factory:
        assert factory.server == kcp.url
        assert factory.api_client(f"t-{unique}").configuration.host == f"{kcp.url}/clusters/t-{unique}"
        created = await factory.dynamic(f"t-{unique}").resource("v1", "configmaps", namespaced=True).create(
            configmap("here"), namespace="default")
        assert created["metadata"]["name"] == "here"
        with pytest.raises(errors.APINotFoundError):
            await factory.dynamic("user").resource("v1", "configmaps", namespaced=True).get("here",
                                                                                           namespace="default")


async def test_typed_and_dynamic_clients_of_a_logical_cluster_share_its_objects(
        clients: ClientFactory, unique: str) -> None:
    cluster = f"typed-{unique}"
    core = kube.CoreV1Api(clients.api_client(cluster))
    async with errors.translate():
        await core.create_namespaced_config_map("default", kube.V1ConfigMap(
            metadata=kube.V1ObjectMeta(name="typed"), data={"k": "v"}))
    got = await clients.dynamic(cluster).resource("v1", "configmaps", namespaced=True).get("typed",
                                                                                         namespace="default")
    assert got["data"] == {"k": "v"}
    assert clients.api_client(cluster) is clients.api_client(cluster)
    with pytest.raises(ValueError):
        clients.api_client("Not/A/Cluster")


async def test_in_cluster_service_account_credentials_work(
        kcp: KcpServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    token = tmp_path / "token"
    token.write_text(kcp.token)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(kcp.port))
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(kcp.root / "ca.crt"))
    async with await ClientFactory.load(None, component="t", version="0") as factory:
        listed = await factory.dynamic("admin").resource("v1", "namespaces", namespaced=False).list()
    assert "default" in [n["metadata"]["name"] for n in listed["items"]]


@contextlib.asynccontextmanager
async def recording_server(requests: list[web.Request] | None = None) -> AsyncIterator[tuple[str, list[Any]]]:
    """A plain-HTTP stand-in that records what the client sends (paths, headers, arrival times).

    `requests`, if given, receives every request as it arrived.
    """
    seen: list[Any] = []

    async def handle(request: web.Request) -> web.Response:
        if requests is not None:
            requests.append(request)
        seen.append((request.path, request.headers.get("User-Agent"), asyncio.get_running_loop().time()))
        return web.json_response({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_every_request_carries_the_user_agent_and_waits_for_a_token() -> None:
    async with recording_server() as (url, seen):
        configuration = Configuration(host=f"{url}/clusters/ignored")
        async with ClientFactory(configuration, component="kcp-syncer", version="1.2.3", qps=20, burst=2) as factory:
            api = factory.dynamic("root:a").resource("v1", "configmaps", namespaced=True)
            core = kube.CoreV1Api(factory.api_client("root:b"))
            started = asyncio.get_running_loop().time()
            await asyncio.gather(*(api.get("x", namespace="ns") for _ in range(4)),
                                 core.read_namespaced_config_map("x", "ns"))
    assert {path for path, _, _ in seen} == {"/clusters/root:a/api/v1/namespaces/ns/configmaps/x",
                                             "/clusters/root:b/api/v1/namespaces/ns/configmaps/x"}
    assert {agent for _, agent, _ in seen} == {"kcp-syncer/1.2.3"}
    # a burst of 2, then 3 more at 20 qps: the last cannot arrive before 0.15 s after the first was sent
    # (measured from the send, not from the first arrival, which a slow first connection can delay)
    assert max(t for _, _, t in seen) - started >= 0.14


async def test_a_factory_with_its_own_budget_is_not_throttled_by_the_one_it_came_from() -> None:
    async with recording_server() as (url, seen):
        configuration = Configuration(host=f"{url}/clusters/ignored")
        async with ClientFactory(configuration, component="kcp-cluster-controller", version="1.2.3", qps=1,
                                 burst=1) as controller:
            await controller.dynamic("root").resource("v1", "configmaps", namespaced=True).get("x", namespace="ns")
            async with controller.with_budget(component="kcp-syncer", qps=1000, burst=10) as syncer:
                api = syncer.dynamic("root:a").resource("v1", "configmaps", namespaced=True)
                started = asyncio.get_running_loop().time()
                await asyncio.gather(*(api.get("x", namespace="ns") for _ in range(5)))
                took = asyncio.get_running_loop().time() - started
    assert {agent for _, agent, _ in seen} == {"kcp-cluster-controller/1.2.3", "kcp-syncer/1.2.3"}
    assert [path for path, _, _ in seen][1:] == ["/clusters/root:a/api/v1/namespaces/ns/configmaps/x"] * 5
    assert took < 1.0  # the controller's bucket (empty, 1 qps) would have spread them over 5 s


async def test_a_plain_server_keeps_its_path_and_shares_throttling_and_user_agent() -> None:
    async with recording_server() as (url, seen):
        configuration = Configuration(host=f"{url}/k8s/clusters/c-1")  # e.g. a proxy's path to one cluster
        async with KubeClientFactory(configuration, name="c-1", component="kcp-syncer", version="1.2.3",
                                     qps=20, burst=2) as factory:
            api = factory.dynamic().resource("v1", "configmaps", namespaced=True)
            core = kube.CoreV1Api(factory.api_client())
            started = asyncio.get_running_loop().time()
            await asyncio.gather(*(api.get("x", namespace="ns") for _ in range(4)),
                                 core.read_namespaced_config_map("x", "ns"))
    assert [path for path, _, _ in seen] == ["/k8s/clusters/c-1/api/v1/namespaces/ns/configmaps/x"] * 5
    assert {agent for _, agent, _ in seen} == {"kcp-syncer/1.2.3"}
    # a burst of 2, then 3 more at 20 qps: the last cannot arrive before 0.15 s after the first was sent
    # (measured from the send, not from the first arrival, which a slow first connection can delay)
    assert max(t for _, _, t in seen) - started >= 0.14


async def test_credentials_come_from_the_kubeconfig_only_never_from_netrc(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    requests: list[web.Request] = []
    async with recording_server(requests) as (url, _):
        async with ClientFactory(Configuration(host=url), component="t", version="0") as factory:
            await factory.dynamic("admin").resource("v1", "configmaps", namespaced=True).get("x", namespace="ns")
    assert [r.headers.get("Authorization") for r in requests] == [None]


async def test_a_proxy_named_by_the_environment_carries_the_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[web.Request] = []
    async with recording_server(requests) as (proxy, _):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        configuration = Configuration(host="http://kcp.invalid:6443")  # only the proxy can reach it
        async with ClientFactory(configuration, component="t", version="0") as factory:
            got = await factory.dynamic("admin").resource("v1", "configmaps", namespaced=True).get(
                "x", namespace="ns")
    assert got["kind"] == "ConfigMap"
    assert [str(r.url) for r in requests] == ["http://kcp.invalid:6443/clusters/admin/api/v1/namespaces/ns/configmaps/x"]


async def test_the_dynamic_client_lists_in_pages(clients: ClientFactory, namespace: str) -> None:
    api = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    await asyncio.gather(*(api.create(configmap(f"p{i}"), namespace=namespace) for i in range(5)))
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = await api.list(namespace=namespace, limit=2, continue_token=token)
        names += [i["metadata"]["name"] for i in page["items"]]
        pages += 1
        token = page["metadata"].get("continue")
        if not token:
            break
    assert sorted(names) == [f"p{i}" for i in range(5)] and pages == 3


async def test_the_dynamic_client_patches_in_each_patch_format(clients: ClientFactory, namespace: str) -> None:
    api = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    await api.create(configmap("p", a="1"), namespace=namespace)
    await api.patch("p", {"data": {"b": "2"}}, namespace=namespace)
    await api.patch("p", [{"op": "add", "path": "/data/c", "value": "3"}], namespace=namespace, patch_type="json")
    patched = await api.patch("p", {"data": {"a": None}}, namespace=namespace, patch_type="strategic")
    assert patched["data"] == {"b": "2", "c": "3"}
    with pytest.raises(ValueError):
        await api.patch("p", {}, namespace=namespace, patch_type="yaml")


async def test_the_dynamic_client_serves_custom_resources_and_their_status(
        clients: ClientFactory, unique: str) -> None:
    cluster, group = f"crd-{unique}", f"g{unique}.example.com"
    dynamic = clients.dynamic(cluster)
    crds = dynamic.resource("apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False)
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}
    await crds.create({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema}}]}})
    widgets = dynamic.resource(f"{group}/v1", "widgets", namespaced=True)
    async with asyncio.timeout(5):
        while True:
            with contextlib.suppress(errors.APINotFoundError):
                await widgets.list(namespace="default")
                break
            await asyncio.sleep(0.05)
    created = await widgets.create({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
                                    "spec": {"size": 3}}, namespace="default")
    with_status = dict(created, status={"ready": True})
    updated = await widgets.replace(with_status, subresource="status")
    assert updated["status"] == {"ready": True} and updated["spec"] == {"size": 3}
    await widgets.delete("w", namespace="default")
    with pytest.raises(errors.APINotFoundError):
        await widgets.get("w", namespace="default")


async def test_the_dynamic_client_reaches_resources_of_api_groups(clients: ClientFactory, namespace: str) -> None:
    leases = clients.dynamic("admin").resource("coordination.k8s.io/v1", "leases", namespaced=True)
    created = await leases.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                   "metadata": {"name": "lock", "namespace": namespace},
                                   "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})
    assert created["metadata"]["namespace"] == namespace  # taken from the body
    assert (await leases.list(namespace=namespace, label_selector="nothing=here"))["items"] == []
    assert (await leases.get("lock", namespace=namespace))["spec"]["holderIdentity"] == "me"


async def test_the_dynamic_client_refuses_requests_that_miss_their_scope(clients: ClientFactory) -> None:
    configmaps = clients.dynamic("admin").resource("v1", "configmaps", namespaced=True)
    namespaces = clients.dynamic("admin").resource("v1", "namespaces", namespaced=False)
    with pytest.raises(ValueError):
        await configmaps.get("x")
    with pytest.raises(ValueError):
        await namespaces.get("x", namespace="default")


async def test_closing_the_factory_closes_its_connections(kcp: KcpServer) -> None:
    factory = await ClientFactory.load(str(kcp.kubeconfig), component="t", version="0")  # a path, as a str
    api_client = factory.api_client("admin")
    await api_client.close()  # a per-cluster client leaves the shared pool open
    await factory.dynamic("admin").resource("v1", "namespaces", namespaced=False).list()
    await factory.close()
    assert api_client.rest_client.pool_manager.closed
    with pytest.raises(RuntimeError):
        factory.api_client("admin")
