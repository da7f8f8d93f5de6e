"""SharedInformerFactory: controllers in one process share informers, and so watches, per endpoint."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from kcp_process import KcpServer
from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.informer import SharedInformer
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.reflector import ReflectorOptions

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")


def registered_watchers(server: KcpServer) -> int:
    request = urllib.request.Request(f"{server.url}/metrics", headers={"Authorization": f"Bearer {server.token}"})
    with urllib.request.urlopen(request, context=server.ssl_context(), timeout=5) as resp:
        text = resp.read().decode()
    match = re.search(r"^apiserver_registered_watchers (\S+)$", text, re.MULTILINE)
    assert match, "the server exports no apiserver_registered_watchers gauge"
    return int(float(match.group(1)))


async def settled_watchers(server: KcpServer, timeout: float = 8.0) -> int:
    """The gauge once earlier tests' watches are gone (the server notices a closed watch within ~5 s)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (count := await asyncio.to_thread(registered_watchers, server)) and loop.time() < deadline:
        await asyncio.sleep(0.25)
    return count


def probe_seen(informer: SharedInformer) -> asyncio.Event:
    """Set once the informer delivers an object named `probe`."""
    seen = asyncio.Event()

    def on_add(obj: Any) -> None:
        if obj["metadata"]["name"] == "probe":
            seen.set()

    informer.add_handler(on_add=on_add, name="probe")
    return seen


async def test_two_controllers_asking_for_the_same_informer_share_one_watch(
        kcp: KcpServer, clients: ClientFactory, namespace: str) -> None:
    baseline = await settled_watchers(kcp)
    async with SharedInformerFactory(clients, options=ReflectorOptions(backoff_initial=0.05)) as factory:
        def a_controller_asks_for_configmaps() -> SharedInformer:
            return factory.informer(cluster="*", api_version="v1", plural="configmaps", namespaced=True)

        first, second = a_controller_asks_for_configmaps(), a_controller_asks_for_configmaps()
        assert first is second
        other = factory.informer(cluster="*", api_version="v1", plural="configmaps", namespaced=True,
                                 label_selector="app=other")
        assert other is not first
        factory.start()
        assert await factory.wait_for_sync(10)
        late = factory.informer(cluster="admin", api_version="v1", plural="secrets", namespaced=True,
                                namespace=namespace)  # asked for after start(): runs at once
        assert await late.wait_for_sync(10)
        async with asyncio.timeout(10):
            while await asyncio.to_thread(registered_watchers, kcp) < baseline + 3:
                await asyncio.sleep(0.1)
        # an object for every informer, seen through its watch: every watch the factory opened is live now
        delivered = [probe_seen(informer) for informer in (first, other, late)]
        admin = clients.dynamic("admin")
        await admin.resource("v1", "configmaps", namespaced=True).create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "labels": {"app": "other"}}},
            namespace=namespace)
        await admin.resource("v1", "secrets", namespaced=True).create(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe"}}, namespace=namespace)
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in delivered)), 10)
        assert await asyncio.to_thread(registered_watchers, kcp) == baseline + 3  # and no other
        assert len(factory.informers) == 3


async def test_one_resource_watched_on_two_endpoints_is_two_informers(
        kcp: KcpServer, clients: ClientFactory, unique: str, kubeconfig_text: Callable[..., str]) -> None:
    """The same cluster name, resource and namespace on kcp and on a physical cluster never share a cache."""
    cluster, physical = f"up-{unique}", f"down-{unique}"  # `physical` plays a kcp-sim-cluster's cluster
    text = kubeconfig_text(kcp, path=f"/clusters/{physical}")
    async with await KubeClientFactory.from_text(text, name=cluster, component="t", version="0") as downstream, \
            SharedInformerFactory(clients, options=ReflectorOptions(backoff_initial=0.05)) as factory:
        await clients.dynamic(cluster).resource("v1", "configmaps", namespaced=True).create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "upstream"}}, namespace="default")
        await downstream.dynamic().resource("v1", "configmaps", namespaced=True).create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "downstream"}}, namespace="default")

        def ask(**endpoint: Any) -> SharedInformer:
            return factory.informer(cluster=cluster, api_version="v1", plural="configmaps", namespaced=True,
                                    namespace="default", **endpoint)

        upstream_informer, downstream_informer = ask(), ask(clients=downstream)
        assert upstream_informer is not downstream_informer
        assert ask(clients=downstream) is downstream_informer and ask(clients=clients) is upstream_informer
        keys = {key.endpoint: key for key in factory.informers}
        assert set(keys) == {kcp.url, f"{kcp.url}/clusters/{physical}"}
        assert dataclasses.replace(keys[kcp.url], endpoint="") == dataclasses.replace(
            keys[f"{kcp.url}/clusters/{physical}"], endpoint="")  # the endpoint alone tells them apart
        assert downstream_informer.name.endswith(f"@{kcp.url}/clusters/{physical}")
        factory.start()
        assert await factory.wait_for_sync(10)
        assert [o["metadata"]["name"] for o in upstream_informer.indexer.list()] == ["upstream"]
        assert [o["metadata"]["name"] for o in downstream_informer.indexer.list()] == ["downstream"]
        assert {str(k) for k in downstream_informer.indexer.keys()} == {f"{cluster}|default/downstream"}
