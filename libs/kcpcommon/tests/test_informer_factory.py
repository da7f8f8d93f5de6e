"""SharedInformerFactory: controllers in one process share informers, and so watches."""

from __future__ import annotations

import asyncio
import re
import urllib.request

import pytest
from kcp_process import KcpServer
from kcpcommon.clients import ClientFactory
from kcpcommon.informer_factory import SharedInformerFactory
from kcpcommon.reflector import ReflectorOptions

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")


def registered_watchers(server: KcpServer) -> int:
    with urllib.request.urlopen(f"{server.url}/metrics", context=server.ssl_context(), timeout=5) as resp:
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


async def test_two_controllers_asking_for_the_same_informer_share_one_watch(
        kcp: KcpServer, clients: ClientFactory, namespace: str) -> None:
    baseline = await settled_watchers(kcp)
    async with SharedInformerFactory(clients, options=ReflectorOptions(backoff_initial=0.05)) as factory:
        def a_controller_asks_for_configmaps() -> object:
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
        await asyncio.sleep(1.0)  # nothing else shows up
        assert await asyncio.to_thread(registered_watchers, kcp) == baseline + 3
        assert len(factory.informers) == 3
