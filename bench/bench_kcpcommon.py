"""Benchmark of the shared controller runtime (not a test).

1. Informer initial sync of 10,000 objects from a real kcp-apiserver: seconds
   from start to synced, and the RSS the informer's process grew by. The
   informer runs in a child process so its RSS is its own.
2. Work-queue throughput: items/s through a no-op reconcile with 8 workers,
   with Prometheus metrics on, as a daemon runs it.

Prints a summary and writes bench/results/kcpcommon-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "bench"))

from bench_apiserver import Bench, cm, rss_kib, run_concurrent  # noqa: E402

from kcp_process import KcpServer, free_port  # noqa: E402

NAMESPACE = "informer-bench"


async def informer_child(kubeconfig: str, namespace: str) -> dict[str, Any]:
    """Run in the child: sync one informer over the namespace's ConfigMaps and report."""
    import gc
    import os

    from kcpcommon.clients import ClientFactory
    from kcpcommon.informer_factory import SharedInformerFactory

    gc.collect()
    before = rss_kib(os.getpid())
    async with await ClientFactory.load(kubeconfig, component="bench-informer", version="0",
                                        qps=1000, burst=1000) as clients:
        factory = SharedInformerFactory(clients)
        informer = factory.informer(cluster="admin", api_version="v1", plural="configmaps", namespaced=True,
                                    namespace=namespace)
        started = time.perf_counter()
        factory.start()
        synced = await factory.wait_for_sync(timeout=300)
        seconds = time.perf_counter() - started
        count = len(informer.indexer.list())
        gc.collect()
        after = rss_kib(os.getpid())
        await factory.stop()
    return {"synced": synced, "objects": count, "seconds": round(seconds, 3),
            "rss_before_kib": before, "rss_after_kib": after, "rss_growth_kib": after - before}


async def queue_throughput(items: int, workers: int) -> dict[str, Any]:
    """Distinct keys through a Controller with a no-op reconcile and metrics on."""
    from prometheus_client import CollectorRegistry

    from kcpcommon.controller import Controller
    from kcpcommon.keys import ObjectKey

    done = asyncio.Event()
    seen = 0

    async def reconcile(key: ObjectKey) -> None:
        nonlocal seen
        seen += 1
        if seen == items:
            done.set()

    controller: Controller[ObjectKey] = Controller("bench", reconcile, workers=workers,
                                                   registry=CollectorRegistry(), component="bench")
    keys = [ObjectKey(f"cluster-{i % 100}", "default", f"obj-{i}") for i in range(items)]
    runner = asyncio.create_task(controller.start())
    await asyncio.sleep(0)
    started = time.perf_counter()
    for key in keys:
        controller.enqueue(key)
    await asyncio.wait_for(done.wait(), 600)
    seconds = time.perf_counter() - started
    controller.stop()
    await runner
    return {"items": items, "workers": workers, "seconds": round(seconds, 3),
            "items_per_s": round(items / seconds, 1)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd

    root = Path(tempfile.mkdtemp(prefix="kcp-bench-kcpcommon-"))
    (root / "etcd").mkdir()
    etcd = EmbeddedEtcd(root / "etcd")
    await etcd.start()
    server = KcpServer(root / "kcp", free_port(), ["--log-level", "warning", "--etcd-servers", etcd.endpoint])
    server.start()
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            bench = Bench(server, session)
            await bench.namespace(NAMESPACE)
            payload = "x" * 256
            await run_concurrent(args.objects, 64, lambda i: bench.post(
                f"/api/v1/namespaces/{NAMESPACE}/configmaps", cm(f"item-{i}", payload)))
        child = await asyncio.to_thread(  # the informer runs in a process of its own, as a controller would
            subprocess.run, [sys.executable, __file__, "--informer-child", str(server.kubeconfig)],
            capture_output=True, text=True, timeout=600, check=True)
        results["informer"] = json.loads(child.stdout.strip().splitlines()[-1])
    finally:
        server.stop()
        await etcd.stop()
    results["queue"] = await queue_throughput(args.items, args.workers)
    return results


def summary(results: dict[str, Any]) -> str:
    inf, queue = results["informer"], results["queue"]
    return "\n".join([
        "kcpcommon benchmark", "",
        f"informer initial sync: {inf['objects']} objects in {inf['seconds']:.2f} s, "
        f"RSS +{inf['rss_growth_kib'] / 1024:.1f} MiB ({inf['rss_growth_kib'] * 1024 / max(inf['objects'], 1):.0f} "
        f"bytes/object)",
        f"work queue, no-op reconcile, {queue['workers']} workers: {queue['items_per_s']:.0f} items/s "
        f"({queue['items']} items in {queue['seconds']:.2f} s)",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--informer-child", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.informer_child:
        print(json.dumps(asyncio.run(informer_child(args.informer_child, NAMESPACE))))
        return
    results = asyncio.run(main_async(args))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"kcpcommon-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(summary(results))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
