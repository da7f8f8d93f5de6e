"""Benchmark (not a test): many workspaces, each bound to one shared API (issue 24).

Setup, everything real: one kcp-apiserver (its embedded etcd). A provider workspace exports `widgets`
(an APIResourceSchema through an APIExport); a WorkspaceType `bound` in root binds it by default
(`defaultAPIBindings`), so each of its workspaces is Ready only once its APIBinding is Bound.

1. `--workspaces` (10,000) workspaces of type `bound` are created in root, `--concurrency` at a time, and
   followed with one watch until all are Ready: throughput, and the kcp process's RSS per workspace (RSS
   after, less RSS before, over the count; etcd's own memory is reported apart).
2. Creating one workspace until Ready, one at a time, `--rounds` times, of type `universal` and of type
   `bound` (which includes its binding): p50/p99 (issue 24's target: p99 < 1 s).
3. GET and LIST of widgets (100 in a namespace) in a bound workspace against the same in a workspace whose
   widgets come from a local CRD of the same schema, interleaved in the same moments: p50/p99 and the ratio
   (target <= 1.2).

Prints a summary and writes bench/results/workspaces-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

PROVIDER = "root:provider"
WORKSPACES = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces"
WIDGETS = "/apis/example.io/v1/namespaces/default/widgets"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "size": {"type": "integer", "default": 3, "maximum": 10}, "color": {"type": "string", "enum": ["red", "blue"]}}}}}
NAMES = {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"}


def workspace(name: str, type_name: str) -> dict[str, Any]:
    return {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
            "spec": {"type": {"name": type_name, "path": "root"}}}


def etcd_rss_kib(pid: int) -> int:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    total = 0
    for child in children.read_text().split() if children.exists() else []:
        try:
            if b"etcd" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0]:
                total += rss_kib(int(child))
        except FileNotFoundError:
            pass
    return total


class ReadyWatch:
    """One watch on root's Workspaces: when each became Ready (perf_counter), as the events arrive."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.ready: dict[str, float] = {}
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = orjson.loads(await self.bench.get(WORKSPACES))
        for ws in listed["items"]:
            if (ws.get("status") or {}).get("phase") == "Ready":
                self.ready[ws["metadata"]["name"]] = time.perf_counter()
        self.task = asyncio.create_task(self._follow(listed["metadata"]["resourceVersion"]))

    async def _follow(self, version: str) -> None:
        while True:
            url = f"{self.bench.server.url}{WORKSPACES}?watch=1&resourceVersion={version}&timeoutSeconds=600"
            async with self.bench.session.get(url, headers=self.bench.headers, ssl=self.bench.ssl,
                                              timeout=aiohttp.ClientTimeout(total=None)) as resp:
                async for line in resp.content:
                    event = orjson.loads(line)
                    ws = event["object"]
                    version = ws["metadata"].get("resourceVersion") or version
                    if event["type"] != "BOOKMARK" and (ws.get("status") or {}).get("phase") == "Ready":
                        self.ready.setdefault(ws["metadata"]["name"], time.perf_counter())
                        self.changed.set()

    async def until(self, names: list[str], within: float) -> None:
        deadline = time.perf_counter() + within
        while any(n not in self.ready for n in names):
            self.changed.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                missing = [n for n in names if n not in self.ready]
                raise RuntimeError(f"{len(missing)} workspaces not Ready within {within}s, e.g. {missing[:3]}")
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=min(left, 5))
            except TimeoutError:
                pass

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def set_up(bench: Bench) -> None:
    """The provider's export, the `bound` type in root, and a workspace with a local CRD of the same schema."""
    provider = f"/clusters/{PROVIDER}"
    await bench.post(f"{provider}/apis/apis.kcp.io/v1alpha1/apiresourceschemas", {
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema", "metadata": {"name": "v1.widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced", "names": NAMES, "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": SCHEMA}]}})
    await bench.post(f"{provider}/apis/apis.kcp.io/v1alpha1/apiexports", {
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "widgets"},
        "spec": {"latestResourceSchemas": ["v1.widgets.example.io"]}})
    await bench.post("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes", {
        "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "bound"},
        "spec": {"defaultAPIBindings": [{"path": PROVIDER, "export": "widgets"}]}})
    await bench.post("/clusters/root:local-crd/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced", "names": NAMES, "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA}}]}})


async def served(bench: Bench, cluster: str, within: float = 60) -> None:
    deadline = time.perf_counter() + within
    while True:
        async with bench.session.get(f"{bench.server.url}/clusters/{cluster}{WIDGETS}", headers=bench.headers,
                                     ssl=bench.ssl) as resp:
            await resp.read()
            if resp.status == 200:
                return
        if time.perf_counter() > deadline:
            raise RuntimeError(f"widgets not served in {cluster}")
        await asyncio.sleep(0.1)


async def one_at_a_time(bench: Bench, watch: ReadyWatch, type_name: str, rounds: int) -> dict[str, float]:
    samples = []
    for i in range(rounds):
        name = f"seq-{type_name}-{i}"
        started = time.perf_counter()
        await bench.post(WORKSPACES, workspace(name, type_name))
        await watch.until([name], 60)
        samples.append(watch.ready[name] - started)
    return {"p50_ms": round(percentile(samples, 50) * 1000, 1), "p99_ms": round(percentile(samples, 99) * 1000, 1),
            "max_ms": round(max(samples) * 1000, 1)}


async def read_latencies(bench: Bench, bound: str, local: str, rounds: int) -> dict[str, Any]:
    """GET and LIST in the bound workspace and in the local-CRD one, interleaved so both see the same moments."""
    for cluster in (bound, local):
        await served(bench, cluster)
        for i in range(100):
            await bench.post(f"/clusters/{cluster}{WIDGETS}", {
                "apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": f"w{i}"},
                "spec": {"color": "red"}})
    times: dict[str, list[float]] = {f"{op}_{side}": [] for op in ("get", "list") for side in ("bound", "local")}
    for i in range(rounds + 20):
        for side, cluster in (("bound", bound), ("local", local)):
            for op, path in (("get", f"{WIDGETS}/w{i % 100}"), ("list", WIDGETS)):
                started = time.perf_counter()
                await bench.get(f"/clusters/{cluster}{path}")
                if i >= 20:  # warmed up
                    times[f"{op}_{side}"].append(time.perf_counter() - started)
    out: dict[str, Any] = {}
    for key, samples in times.items():
        out[key] = {"p50_ms": round(percentile(samples, 50) * 1000, 3), "p99_ms": round(percentile(samples, 99) * 1000, 3)}
    for op in ("get", "list"):
        out[f"{op}_ratio_p50"] = round(out[f"{op}_bound"]["p50_ms"] / out[f"{op}_local"]["p50_ms"], 3)
        out[f"{op}_ratio_p99"] = round(out[f"{op}_bound"]["p99_ms"] / out[f"{op}_local"]["p99_ms"], 3)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "workspaces": args.workspaces, "concurrency": args.concurrency}
    with tempfile.TemporaryDirectory(prefix="bench-workspaces-") as tmp:
        server = KcpServer(Path(tmp), free_port())
        server.start()
        try:
            assert server.process is not None
            pid = server.process.pid
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency + 8)) as session:
                bench = Bench(server, session)
                await set_up(bench)
                watch = ReadyWatch(bench)
                await watch.start()
                names = [f"ws-{i}" for i in range(args.workspaces)]
                await asyncio.sleep(2)  # the server settles after the set-up's writes
                rss_before, etcd_before = rss_kib(pid), etcd_rss_kib(pid)
                started = time.perf_counter()
                created_per_s = await run_concurrent(len(names), args.concurrency,
                                                     lambda i: bench.post(WORKSPACES, workspace(names[i], "bound")))
                await watch.until(names, args.timeout)
                elapsed = time.perf_counter() - started
                await asyncio.sleep(2)
                rss_after, etcd_after = rss_kib(pid), etcd_rss_kib(pid)
                results["bulk"] = {"created_per_s": round(created_per_s, 1), "all_ready_s": round(elapsed, 1),
                                   "ready_per_s": round(len(names) / elapsed, 1),
                                   "kcp_rss_before_kib": rss_before, "kcp_rss_after_kib": rss_after,
                                   "kcp_rss_per_workspace_kib": round((rss_after - rss_before) / len(names), 1),
                                   "etcd_rss_before_kib": etcd_before, "etcd_rss_after_kib": etcd_after}
                results["one_at_a_time_universal"] = await one_at_a_time(bench, watch, "universal", args.rounds)
                results["one_at_a_time_bound"] = await one_at_a_time(bench, watch, "bound", args.rounds)
                await watch.stop()
                results["reads"] = await read_latencies(bench, "root:ws-0", "root:local-crd", args.reads)
        finally:
            results["kcp_exit"] = server.stop()
    return results


def summary(results: dict[str, Any]) -> str:
    bulk, reads = results["bulk"], results["reads"]
    universal, bound = results["one_at_a_time_universal"], results["one_at_a_time_bound"]
    return "\n".join([
        f"{results['workspaces']} workspaces of type `bound` (one APIBinding each), {results['concurrency']} "
        f"creates in flight: all Ready in {bulk['all_ready_s']} s ({bulk['ready_per_s']}/s)",
        f"  kcp RSS {bulk['kcp_rss_before_kib'] // 1024} -> {bulk['kcp_rss_after_kib'] // 1024} MiB: "
        f"{bulk['kcp_rss_per_workspace_kib']} KiB per workspace (etcd {bulk['etcd_rss_before_kib'] // 1024} -> "
        f"{bulk['etcd_rss_after_kib'] // 1024} MiB)",
        f"  one at a time until Ready: universal p50 {universal['p50_ms']} ms p99 {universal['p99_ms']} ms; "
        f"bound p50 {bound['p50_ms']} ms p99 {bound['p99_ms']} ms (target p99 < 1000 ms)",
        f"  bound vs local CRD: GET p50 {reads['get_bound']['p50_ms']} / {reads['get_local']['p50_ms']} ms "
        f"(ratio {reads['get_ratio_p50']}, p99 ratio {reads['get_ratio_p99']}); LIST of 100 p50 "
        f"{reads['list_bound']['p50_ms']} / {reads['list_local']['p50_ms']} ms (ratio {reads['list_ratio_p50']}, "
        f"p99 ratio {reads['list_ratio_p99']}) (target <= 1.2)",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspaces", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=100, help="workspaces created one at a time, per type")
    parser.add_argument("--reads", type=int, default=300, help="timed GETs and LISTs per side")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds until every workspace is Ready")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"workspaces-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(summary(results))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
