"""Benchmark of one kcp-syncer (not a test): a kcp-apiserver, one kcp-sim-cluster, `python -m kcp_syncer`.

1. Spec-down latency: ConfigMaps created upstream at `--rate` per second; for each, the time from
   just before its create to its ADDED event in a watch on the downstream mapped namespace.
2. Status-up latency: Deployments (0 replicas: the simulated deployment controller still writes
   their status) created at `--rate` per second; for each, the time from the first downstream watch
   event carrying a status to the first upstream watch event carrying it.
3. Throughput: the syncer stopped, `--objects` ConfigMaps created upstream, the syncer started
   again; objects/s from its first downstream write to its last.
4. RSS per synced object: the syncer's RSS with everything synced, minus its RSS synced but empty,
   over the number of objects it holds.

Targets (issue 12): p99 < 1 s both ways under 100 changes/s; >= 300 objects/s per syncer.
Prints a summary and writes bench/results/sync-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "libs" / "kcpcommon"))
sys.path.insert(0, str(REPO / "libs" / "kcpsyncer"))

from bench_apiserver import percentile, rss_kib, server_children  # noqa: E402
from syncer_fixtures import (  # noqa: E402
    ASSIGNMENT_LABEL,
    Rest,
    SyncerProcess,
    create_sync_target,
    install_types,
    sim_cluster,
)

from kcp_process import KcpServer, free_port  # noqa: E402
from kcpsyncer import downstream_namespace  # noqa: E402

LC, TARGET = "bench-sync", "east"
Seen = dict[str, float]


class Side:
    """aiohttp requests and watches against one server (optionally a logical cluster's prefix)."""

    def __init__(self, server: KcpServer, session: aiohttp.ClientSession, prefix: str = "") -> None:
        self.base = server.url + prefix
        self.session = session
        self.ssl = server.ssl_context()
        self.headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json",
                        "Accept": "application/json"}

    async def post(self, path: str, body: dict[str, Any]) -> None:
        async with self.session.post(self.base + path, data=orjson.dumps(body), headers=self.headers,
                                     ssl=self.ssl) as resp:
            if resp.status != 201:
                raise RuntimeError(f"create failed: {resp.status} {await resp.text()}")
            await resp.read()

    async def watch(self, path: str, on_event: Callable[[str, dict[str, Any]], None],
                    started: asyncio.Event) -> None:
        """Stream a watch (from now) into `on_event(type, object)` until cancelled."""
        async with self.session.get(self.base + path, params={"watch": "1", "allowWatchBookmarks": "false"},
                                    headers=self.headers, ssl=self.ssl,
                                    timeout=aiohttp.ClientTimeout(total=None)) as resp:
            started.set()
            async for line in resp.content:
                if line.strip():
                    event = orjson.loads(line)
                    on_event(event["type"], event["object"])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kcp_cpu_seconds(pid: int) -> float:
    """CPU of kcp's process and its worker processes, without its embedded etcd's."""
    return cpu_seconds(pid) + sum(cpu_seconds(child) for child in server_children(pid))


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {ASSIGNMENT_LABEL: TARGET}}, "data": {"k": name}}


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {ASSIGNMENT_LABEL: TARGET}},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def paced(count: int, rate: float, make: Callable[[int], Any]) -> None:
    """`make(i)` for i in range(count), started `rate` per second whatever each takes."""
    start = time.monotonic()
    tasks = []
    for i in range(count):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(make(i)))
    await asyncio.gather(*tasks)


async def wait_for(seen: Seen, names: list[str], timeout: float) -> None:  # noqa: ASYNC109 - a deadline
    deadline = time.monotonic() + timeout
    while not all(name in seen for name in names):
        if time.monotonic() > deadline:
            missing = [n for n in names if n not in seen]
            raise RuntimeError(f"{len(missing)} objects never arrived, e.g. {missing[:3]}")
        await asyncio.sleep(0.05)


def latency(start: Seen, end: Seen) -> dict[str, float]:
    samples = [end[name] - start[name] for name in start if name in end]
    return {"p50_ms": round(percentile(samples, 50) * 1000, 1), "p99_ms": round(percentile(samples, 99) * 1000, 1),
            "max_ms": round(max(samples) * 1000, 1), "samples": len(samples)}


def histogram_quantile(metrics_text: str, name: str, labels: dict[str, str], q: float) -> float:
    """Prometheus's histogram_quantile over one series' buckets (linear within the bucket)."""
    from prometheus_client.parser import text_string_to_metric_families

    buckets: list[tuple[float, float]] = []
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == f"{name}_bucket" and all(sample.labels.get(k) == v for k, v in labels.items()):
                buckets.append((float(sample.labels["le"]), sample.value))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = bound, count
    return lower


def first_seen(seen: Seen, condition: Callable[[dict[str, Any]], bool] = lambda obj: True
               ) -> Callable[[str, dict[str, Any]], None]:
    def on_event(kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind in ("ADDED", "MODIFIED") and name not in seen and condition(obj):
            seen[name] = time.monotonic()
    return on_event


def has_status(obj: dict[str, Any]) -> bool:
    return "observedGeneration" in (obj.get("status") or {})


async def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    kcp = KcpServer(root / "kcp", free_port())
    phys = sim_cluster(root / "phys", "--nodes", "1")
    servers = [kcp, phys]
    workers = [] if args.workers is None else ["--workers", str(args.workers)]
    syncer = SyncerProcess(kcp, phys, TARGET, LC, root / "syncer.log", extra=["--log-level", "warning", *workers])
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "objects": args.objects, "rate": args.rate, "workers": args.workers}
    watches: list[asyncio.Task[None]] = []
    try:
        for server in servers:
            server.start()
        rest = Rest(kcp).at(LC)
        install_types(rest)
        create_sync_target(rest, TARGET)
        syncer.start()  # returns once ready: caches synced, nothing held yet
        assert syncer.process is not None
        rss_empty = rss_kib(syncer.process.pid)
        mapped = downstream_namespace(LC, "default")
        async with aiohttp.ClientSession() as session:
            up, down = Side(kcp, session, f"/clusters/{LC}"), Side(phys, session)
            created: Seen = {}
            cm_down: Seen = {}
            dep_down: Seen = {}
            dep_up: Seen = {}
            for side, path, seen, condition in (
                    (down, f"/api/v1/namespaces/{mapped}/configmaps", cm_down, None),
                    (down, f"/apis/apps/v1/namespaces/{mapped}/deployments", dep_down, has_status),
                    (up, "/apis/apps/v1/namespaces/default/deployments", dep_up, has_status)):
                started = asyncio.Event()
                callback = first_seen(seen) if condition is None else first_seen(seen, condition)
                watches.append(asyncio.ensure_future(side.watch(path, callback, started)))
                await started.wait()

            async def create_cm(i: int) -> None:
                name = f"lat-{i}"
                created[name] = time.monotonic()
                await up.post("/api/v1/namespaces/default/configmaps", configmap(name))
            await paced(args.objects, args.rate, create_cm)
            await wait_for(cm_down, list(created), args.timeout)
            results["spec_down"] = latency(created, cm_down)

            names = [f"dep-{i}" for i in range(args.objects)]
            assert kcp.process is not None
            kcp_cpu_before = kcp_cpu_seconds(kcp.process.pid)
            await paced(args.objects, args.rate,
                        lambda i: up.post("/apis/apps/v1/namespaces/default/deployments", deployment(names[i])))
            await wait_for(dep_up, names, args.timeout)
            results["status_up"] = latency(dep_down, dep_up)
            # of which in the syncer: from its informer's status event to its patch's answer (from its histogram)
            # and of that, kcp's answer time for PATCHes of Deployments (status and finalizer alike)
            text = syncer.metrics()
            async with session.get(kcp.url + "/metrics", headers=up.headers, ssl=up.ssl) as resp:
                kcp_text = await resp.text()
            for q in (50, 99):
                results["status_up"][f"in_syncer_p{q}_ms"] = round(1000 * histogram_quantile(
                    text, "kcp_syncer_sync_latency_seconds", {"direction": "up"}, q / 100), 1)
                results["status_up"][f"kcp_patch_p{q}_ms"] = round(1000 * histogram_quantile(
                    kcp_text, "apiserver_request_duration_seconds", {"verb": "patch", "resource": "deployments"},
                    q / 100), 1)
            # kcp's own CPU (not its etcd's) for the phase: each Deployment's create, and the syncer's status
            # patch and finalizer merge patch
            results["status_up"]["kcp_cpu_ms_per_object"] = round(
                (kcp_cpu_seconds(kcp.process.pid) - kcp_cpu_before) * 1000 / len(names), 2)

            # throughput: a backlog for a freshly started syncer
            assert syncer.stop() == 0
            await up.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": "burst"}})
            burst_ns = downstream_namespace(LC, "burst")
            burst_seen: Seen = {}
            burst = [f"burst-{i}" for i in range(args.objects)]
            sem = asyncio.Semaphore(32)

            async def create_burst(name: str) -> None:
                async with sem:
                    await up.post("/api/v1/namespaces/burst/configmaps", configmap(name))
            await asyncio.gather(*(create_burst(name) for name in burst))
            started = asyncio.Event()
            watches.append(asyncio.ensure_future(down.watch(f"/api/v1/namespaces/{burst_ns}/configmaps",
                                                            first_seen(burst_seen), started)))
            # the namespace may not exist yet downstream: a watch on it is still valid
            await started.wait()
            began = time.monotonic()
            await asyncio.to_thread(syncer.start)  # the watches keep reading meanwhile
            assert syncer.process is not None
            cpu_before = cpu_seconds(syncer.process.pid)
            await wait_for(burst_seen, burst, args.timeout)
            cpu_used = cpu_seconds(syncer.process.pid) - cpu_before
            first, last = min(burst_seen.values()), max(burst_seen.values())
            results["throughput"] = {
                "objects": len(burst), "objects_per_s": round(len(burst) / max(last - first, 1e-6), 1),
                "objects_per_s_from_start": round(len(burst) / (last - began), 1),
                "syncer_cpu_ms_per_object": round(cpu_used * 1000 / len(burst), 2)}
            assert syncer.process is not None
            synced = 3 * args.objects
            rss_full = rss_kib(syncer.process.pid)
            results["rss"] = {"empty_kib": rss_empty, "synced_kib": rss_full, "objects": synced,
                              "per_object_bytes": round((rss_full - rss_empty) * 1024 / synced)}
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        syncer.stop()
        for server in reversed(servers):
            server.stop()
    return results


def summary(results: dict[str, Any]) -> str:
    down, up, tp, rss = results["spec_down"], results["status_up"], results["throughput"], results["rss"]
    return "\n".join([
        f"kcp-syncer, {results['objects']} objects per phase at {results['rate']}/s:",
        f"  spec down (upstream create -> downstream object): p50 {down['p50_ms']} ms, p99 {down['p99_ms']} ms, "
        f"max {down['max_ms']} ms",
        f"  status up (downstream status -> upstream status): p50 {up['p50_ms']} ms, p99 {up['p99_ms']} ms, "
        f"max {up['max_ms']} ms, kcp CPU {up.get('kcp_cpu_ms_per_object')} ms per object",
        f"    of which in the syncer (its status event to its patch's answer, from its histogram): "
        f"p50 {up.get('in_syncer_p50_ms')} ms, p99 {up.get('in_syncer_p99_ms')} ms; kcp's PATCH answers "
        f"p50 {up.get('kcp_patch_p50_ms')} ms, p99 {up.get('kcp_patch_p99_ms')} ms",
        f"  throughput (backlog of {tp['objects']}): {tp['objects_per_s']} objects/s "
        f"({tp['objects_per_s_from_start']} counting the syncer's start), "
        f"syncer CPU {tp['syncer_cpu_ms_per_object']} ms per object",
        f"  RSS: {rss['empty_kib'] / 1024:.1f} MiB empty, {rss['synced_kib'] / 1024:.1f} MiB with {rss['objects']} "
        f"objects: {rss['per_object_bytes']} bytes per object",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000, help="objects per phase")
    parser.add_argument("--rate", type=float, default=100.0, help="creates per second in the latency phases")
    parser.add_argument("--workers", type=int, default=None, help="the syncer's --workers (default: its own)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for a phase to arrive")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        results = asyncio.run(run(args, Path(tmp)))
    print(summary(results))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"sync-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
