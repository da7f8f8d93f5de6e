"""The sync engine embedded as the cluster controller runs it (push mode): several syncers in one process.

kcp plays both sides: the upstream is one logical cluster (reached through a TCP proxy the test can
cut), and each "physical cluster" is another logical cluster reached through a `KubeClientFactory`,
as a kcp-sim-cluster serves its clusters. ConfigMaps are served natively on both sides.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from prometheus_client import CollectorRegistry

from kcp_process import KcpServer
from kcpcommon.clients import ClientFactory, KubeClientFactory
from kcpcommon.dynamic import DynamicResource
from kcpcommon.tasks import cancel_and_wait, spawn
from kcpsyncer import ASSIGNMENT_LABEL, SyncerOptions, downstream_namespace, run_syncer

OPTIONS: dict[str, Any] = {"component": "sync-tests", "version": "0.1.0", "qps": 0, "burst": 0}
PATIENCE = 60.0
KubeconfigText = Callable[..., str]  # conftest's `kubeconfig_text` fixture
TcpProxy = Any  # conftest's cuttable proxy: cut(), restore(), port


async def eventually(probe: Callable[[], Awaitable[Any]], what: str) -> Any:
    async with asyncio.timeout(PATIENCE):
        while not (result := await probe()):
            await asyncio.sleep(0.05)
    assert result, what
    return result


async def get(resource: DynamicResource, name: str, namespace: str) -> Any:
    try:
        return await resource.get(name, namespace=namespace)
    except Exception as exc:  # 404: not there (yet)
        if getattr(exc, "status", 0) == 404:
            return None
        raise


def reconcile_errors(registry: CollectorRegistry, target: str, cluster: str) -> float:
    value = registry.get_sample_value("kcp_syncer_reconcile_total", {
        "controller": f"syncer:{cluster}:{target}", "result": "error"})
    return value or 0.0


@asynccontextmanager
async def syncers(kcp: KcpServer, kubeconfig_text: KubeconfigText, proxy: TcpProxy, cluster: str,
                  targets: list[str], registry: CollectorRegistry) -> AsyncIterator[dict[str, KubeClientFactory]]:
    upstream = await ClientFactory.from_text(kubeconfig_text(kcp, port=proxy.port), **OPTIONS)
    downstreams = {t: await KubeClientFactory.from_text(kubeconfig_text(kcp, path=f"/clusters/{cluster}-{t}"),
                                                        name=t, **OPTIONS) for t in targets}
    tasks = []
    try:
        for target, downstream in downstreams.items():
            ready = asyncio.Event()
            options = SyncerOptions(upstream=upstream, downstream=downstream, sync_target=target,
                                    logical_cluster=cluster, resources=("configmaps",), heartbeat_interval=60.0)
            tasks.append(spawn(run_syncer(options, registry=registry, ready=ready), name=f"syncer-{target}"))
            async with asyncio.timeout(PATIENCE):
                await ready.wait()
        yield downstreams
    finally:
        await cancel_and_wait(*tasks)
        for task in tasks:  # a syncer ends only by cancellation, never by failing
            assert task.cancelled(), task
        for downstream in downstreams.values():
            await downstream.close()
        await upstream.close()


async def test_two_syncers_share_a_process_and_a_registry(
        no_leaked_tasks: None, kcp: KcpServer, kubeconfig_text: KubeconfigText,
        make_proxy: Callable[[int], Awaitable[TcpProxy]], unique: str) -> None:
    cluster, registry = f"push-{unique}", CollectorRegistry()
    proxy = await make_proxy(kcp.port)
    async with await ClientFactory.load(kcp.kubeconfig, **OPTIONS) as direct:
        up = direct.dynamic(cluster).resource("v1", "configmaps", namespaced=True)
        async with syncers(kcp, kubeconfig_text, proxy, cluster, ["east", "west"], registry) as downstreams:
            for target in ("east", "west"):
                await up.create({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": f"for-{target}", "labels": {ASSIGNMENT_LABEL: target}},
                                 "data": {"t": target}}, namespace="default")
            mapped = downstream_namespace(cluster, "default")
            for target, downstream in downstreams.items():
                cms = downstream.dynamic().resource("v1", "configmaps", namespaced=True)
                got = await eventually(lambda cms=cms, target=target: get(cms, f"for-{target}", mapped),
                                       f"for-{target} in {target}")
                assert got["data"] == {"t": target}
                other = "west" if target == "east" else "east"
                assert await get(cms, f"for-{other}", mapped) is None
        for target in ("east", "west"):
            assert registry.get_sample_value("kcp_syncer_synced_objects_total", {
                "logical_cluster": cluster, "sync_target": target, "direction": "down",
                "resource": "configmaps"}) == 1.0


async def test_with_kcp_unreachable_nothing_is_deleted_and_repairs_still_work(
        no_leaked_tasks: None, kcp: KcpServer, kubeconfig_text: KubeconfigText,
        make_proxy: Callable[[int], Awaitable[TcpProxy]], unique: str) -> None:
    cluster, registry = f"cut-{unique}", CollectorRegistry()
    proxy = await make_proxy(kcp.port)
    async with await ClientFactory.load(kcp.kubeconfig, **OPTIONS) as direct:
        up = direct.dynamic(cluster).resource("v1", "configmaps", namespaced=True)
        async with syncers(kcp, kubeconfig_text, proxy, cluster, ["east"], registry) as downstreams:
            cms = downstreams["east"].dynamic().resource("v1", "configmaps", namespaced=True)
            mapped = downstream_namespace(cluster, "default")
            await up.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "kept", "labels": {ASSIGNMENT_LABEL: "east"}}, "data": {"a": "1"}},
                            namespace="default")
            synced = await eventually(lambda: get(cms, "kept", mapped), "kept downstream")

            proxy.cut()  # kcp unreachable for the syncer (the test still reaches it directly)
            # an object of ours downstream whose upstream the cache does not know: only kcp could say
            lookalike = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": "orphan", "labels": dict(synced["metadata"]["labels"]),
                "annotations": {k: v for k, v in synced["metadata"]["annotations"].items()
                                if k.startswith("syncer.kcp.io/upstream-cluster")}
                | {"syncer.kcp.io/upstream-namespace": "default", "syncer.kcp.io/upstream-name": "orphan"}}}
            await cms.create(lookalike, namespace=mapped)
            await eventually(lambda: asyncio.sleep(0, reconcile_errors(registry, "east", cluster) > 0),
                             "the syncer failing to ask kcp about the orphan")
            assert await get(cms, "orphan", mapped) is not None  # not deleted: kcp could not confirm
            # a downstream delete is repaired from the cache, kcp or no kcp
            await cms.delete("kept", namespace=mapped)
            repaired = await eventually(lambda: get(cms, "kept", mapped), "kept recreated while kcp is cut")
            assert repaired["metadata"]["uid"] != synced["metadata"]["uid"]
            assert await get(cms, "orphan", mapped) is not None

            proxy.restore()  # now kcp answers 404 for the orphan: positive evidence, so it goes
            await eventually(lambda: _absent(cms, "orphan", mapped), "the orphan deleted once kcp said 404")
            assert await get(cms, "kept", mapped) is not None


async def _absent(resource: DynamicResource, name: str, namespace: str) -> bool:
    return await get(resource, name, namespace) is None
