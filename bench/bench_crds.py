"""Benchmark of custom resources and of logical-cluster scale (not a test).

0. In process, per object: prune + default + validate of that 30-field
   custom resource, against decoding (fieldValidation=Strict) + validating a
   ConfigMap of 30 keys, and the ObjectMeta validation both share.
1. Create throughput of a custom resource with a 30-field schema against
   ConfigMaps, in the same run (target ratio >= 0.7).
2. 1, 100, 1,000 and 10,000 logical clusters, each with its own CRD and 10
   objects: RSS per logical cluster beyond the objects (target <= 50 KiB) and
   GET/LIST latency at each count against a second server holding 1 logical
   cluster, measured in the same moments (target <= 1.2 at 10,000): on this
   shared machine, latencies taken minutes apart differ by more than that.
3. A hostile tenant: 100 writes of a custom resource whose `pattern: "^(a+)+$"` a backtracking engine
   needs ~2^40 steps for, while another logical cluster GETs a ConfigMap in a loop: that tenant's GET
   p50/p99 against the same GETs with no hostile writes, in one run (target p99 < 50 ms).
   `--hostile-only` runs only this phase.

Prints a summary and writes bench/results/crds-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "bench"))

from bench_apiserver import Bench, percentile, run_concurrent, tree_rss_kib  # noqa: E402

from kcp_process import KcpServer, free_port  # noqa: E402

GROUP = "bench.example.com"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CONFIGMAP = "/api/v1/namespaces/default/configmaps/r0-0"  # made by the create round


def thirty_field_crd() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for i in range(10):
        fields[f"name{i}"] = {"type": "string", "maxLength": 64}
        fields[f"count{i}"] = {"type": "integer", "minimum": 0, "maximum": 1000}
        fields[f"flag{i}"] = {"type": "boolean", "default": False}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": fields}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"things.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def thing(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for i in range(10):
        spec[f"name{i}"] = f"value-{i}"
        spec[f"count{i}"] = i * 7
        spec[f"flag{i}"] = bool(i % 2)
    return {"apiVersion": f"{GROUP}/v1", "kind": "Thing", "metadata": {"name": name}, "spec": spec}


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {f"key{i}": f"value-{i}" for i in range(30)}}


async def post_retrying(bench: Bench, path: str, body: dict[str, Any], attempts: int = 200) -> None:
    """Create, retrying while the CRD is not served yet (404)."""
    for _ in range(attempts):
        async with bench.session.post(bench.server.url + path, data=orjson.dumps(body), headers=bench.headers,
                                      ssl=bench.ssl) as resp:
            await resp.read()
            if resp.status in (201, 409):
                return
            if resp.status != 404:
                raise RuntimeError(f"{path}: {resp.status}")
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{path}: never served")


async def ensure_crd(bench: Bench, prefix: str) -> None:
    await post_retrying(bench, f"{prefix}{CRD_PATH}", thirty_field_crd())


def schema_costs(n: int) -> dict[str, Any]:
    """Microseconds per object of the in-process work a create does before etcd, custom resource vs ConfigMap."""
    import copy

    from kcp_apiserver.apiextensions.compiledschema import compile_schema
    from kcp_apiserver.apimachinery.validation import validate_object_meta
    from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
    from kcp_apiserver.registry.builtin import BUILTINS

    compiled = compile_schema(thirty_field_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    things = [thing("t") for _ in range(n)]
    started = time.perf_counter()
    for obj in things:
        compiled.prune(obj)
        compiled.apply_defaults(obj)
        if compiled.validate(obj):
            raise RuntimeError("the benchmark's custom resource does not validate")
    custom_us = (time.perf_counter() - started) / n * 1e6

    res = next(r for r in BUILTINS if r.kind == "ConfigMap")
    strategy = res.strategy
    checker = FieldValidator()
    one = dict(configmap("c"), metadata={"name": "c", "namespace": "ns"})
    configmaps = [copy.deepcopy(one) for _ in range(n)]
    checker.check(res, configmaps[0], None, "Strict")  # the built-in schemas load outside the timing
    started = time.perf_counter()
    for obj in configmaps:
        checker.check(res, obj, None, "Strict")
        if strategy.validate(obj):
            raise RuntimeError("the benchmark's ConfigMap does not validate")
    configmap_us = (time.perf_counter() - started) / n * 1e6

    meta = {"name": "w", "namespace": "ns"}
    started = time.perf_counter()
    for _ in range(n):
        validate_object_meta(meta, namespaced=True)
    meta_us = (time.perf_counter() - started) / n * 1e6
    return {"objects": n, "custom_resource_us": round(custom_us, 1), "configmap_us": round(configmap_us, 1),
            "object_meta_us": round(meta_us, 1), "ratio": round(custom_us / configmap_us, 2)}


CATASTROPHIC = "^(a+)+$"


def hostile_crd() -> dict[str, Any]:
    crd = thirty_field_crd()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["value"] = {"type": "string", "pattern": CATASTROPHIC}
    return crd


async def hostile_tenant(bench: Bench, writes: int) -> dict[str, Any]:
    """Another tenant's GET latency with and without `writes` catastrophic-pattern writes going on."""
    hostile, calm = "/clusters/hostile", "/clusters/calm"
    await post_retrying(bench, f"{hostile}{CRD_PATH}", hostile_crd())
    things = f"{hostile}/apis/{GROUP}/v1/namespaces/default/things"
    await post_retrying(bench, things, thing("warmup"))
    await post_retrying(bench, f"{calm}/api/v1/namespaces/default/configmaps", configmap("steady"))
    steady = f"{calm}/api/v1/namespaces/default/configmaps/steady"
    bad = dict(thing("bad"), spec={"value": "a" * 40 + "!"})
    refused = 0

    async def write_all() -> None:
        nonlocal refused
        for i in range(writes):
            body = dict(bad, metadata={"name": f"bad-{i}"})
            async with bench.session.post(bench.server.url + things, data=orjson.dumps(body),
                                          headers=bench.headers, ssl=bench.ssl) as resp:
                text = await resp.text()
                if resp.status == 422 and f"should match '{CATASTROPHIC}'" in text:
                    refused += 1

    async def read_while(work: asyncio.Task[None] | None, count: int) -> list[float]:
        times: list[float] = []
        while (work is not None and not work.done()) or (work is None and len(times) < count):
            started = time.perf_counter()
            await bench.get(steady)
            times.append(time.perf_counter() - started)
        return times

    for _ in range(50):  # warm up
        await bench.get(steady)
    started = time.perf_counter()
    writing = asyncio.create_task(write_all())
    under_attack = await read_while(writing, 0)
    await writing
    attack_s = time.perf_counter() - started
    quiet = await read_while(None, max(len(under_attack), 200))
    hostile_q, quiet_q = quantiles(under_attack), quantiles(quiet)
    return {"writes": writes, "refused_422": refused, "attack_s": round(attack_s, 2),
            "gets_during_attack": len(under_attack), "during_attack": hostile_q, "quiet": quiet_q,
            "p50_ratio": round(hostile_q["p50_ms"] / quiet_q["p50_ms"], 3),
            "p99_ratio": round(hostile_q["p99_ms"] / quiet_q["p99_ms"], 3)}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settle(pids: list[int], limit: float = 120.0) -> float:
    """Wait until the server and etcd are idle (under 5% of a core for a second): after a fill they
    finish background work (watch fan-out, CRD status, etcd commits) that would be measured as latency."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        before = sum(cpu_seconds(p) for p in pids)
        await asyncio.sleep(1.0)
        if sum(cpu_seconds(p) for p in pids) - before < 0.05:
            break
    return round(time.monotonic() - started, 1)


def quantiles(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(times, 50) * 1000, 3), "p99_ms": round(percentile(times, 99) * 1000, 3)}


@dataclass
class Target:
    """One server under measurement, the paths read from it and their etcd keys."""

    bench: Bench
    etcd_endpoint: str
    gets: list[str]
    lists: list[str]

    @property
    def keys(self) -> list[str]:
        return [f"/registry/{GROUP}/things/{p.split('/')[2]}/default/{p.rsplit('/', 1)[1]}" for p in self.gets]


def sample_paths(bench: Bench, etcd_endpoint: str, clusters: int) -> Target:
    names = [f"scale-{i}" for i in random.sample(range(clusters), min(clusters, 500))]
    return Target(bench, etcd_endpoint,
                  [f"/clusters/{c}/apis/{GROUP}/v1/namespaces/default/things/t{random.randrange(10)}" for c in names],
                  [f"/clusters/{c}/apis/{GROUP}/v1/namespaces/default/things" for c in names])


async def populate(bench: Bench, start: int, end: int) -> None:
    """Logical clusters scale-<start>..scale-<end-1>, each with the CRD and 10 objects."""
    new = [f"scale-{i}" for i in range(start, end)]
    await run_concurrent(len(new), 64, lambda i: ensure_crd(bench, f"/clusters/{new[i]}"))
    pairs = [(c, j) for c in new for j in range(10)]
    await run_concurrent(len(pairs), 64, lambda i: post_retrying(
        bench, f"/clusters/{pairs[i][0]}/apis/{GROUP}/v1/namespaces/default/things", thing(f"t{pairs[i][1]}")))


async def latencies(targets: dict[str, Target], samples: int, rounds: int = 10) -> dict[str, dict[str, Any]]:
    """GET and LIST of custom resources, the same GETs straight from etcd (how much of any growth is
    etcd's own) and a GET of one admin ConfigMap, on every target, interleaved in rounds so that load
    from elsewhere on this shared machine hits every target and every operation alike."""
    from etcd3aio import Etcd3Client

    ops: dict[tuple[str, str], Any] = {}
    clients = []
    for name, t in targets.items():
        client = Etcd3Client([t.etcd_endpoint])
        await client.connect()
        clients.append(client)
        assert client.kv is not None
        keys = t.keys
        if not (await client.kv.get(keys[0])).kvs:
            raise RuntimeError(f"{keys[0]} is not in etcd: the bench reads the wrong keys")
        ops[(name, "get")] = lambda t=t: t.bench.get(random.choice(t.gets))
        ops[(name, "list")] = lambda t=t: t.bench.get(random.choice(t.lists))
        ops[(name, "etcd_get")] = lambda kv=client.kv, keys=keys: kv.get(random.choice(keys))
        ops[(name, "configmap_get")] = lambda t=t: t.bench.get(CONFIGMAP)
    pools: dict[tuple[str, str], list[float]] = {key: [] for key in ops}
    try:
        for op in ops.values():  # warm up
            for _ in range(20):
                await op()
        for _ in range(rounds):
            for key, op in ops.items():
                for _ in range(max(samples // rounds, 1)):
                    started = time.perf_counter()
                    await op()
                    pools[key].append(time.perf_counter() - started)
    finally:
        for client in clients:
            await client.close()
    out: dict[str, dict[str, Any]] = {name: {} for name in targets}
    for (name, op_name), times in pools.items():
        out[name][op_name] = quantiles(times)
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd

    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "schema": schema_costs(args.schema_objects)}
    if args.schema_only:
        return results
    root = Path(tempfile.mkdtemp(prefix="kcp-bench-crds-"))
    (root / "etcd").mkdir()
    etcd = EmbeddedEtcd(root / "etcd")
    await etcd.start()
    server = KcpServer(root / "kcp", free_port(), ["--log-level", args.log_level, "--etcd-servers", etcd.endpoint])
    server.start()
    # a second server with one logical cluster, measured in the same moments as the growing one
    (root / "base-etcd").mkdir()
    base_etcd = EmbeddedEtcd(root / "base-etcd")
    await base_etcd.start()
    baseline = KcpServer(root / "base", free_port(), ["--log-level", args.log_level, "--etcd-servers",
                                                      base_etcd.endpoint])
    baseline.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            bench = Bench(server, session)
            base_bench = Bench(baseline, session)
            assert server.process is not None and baseline.process is not None
            results["hostile"] = await hostile_tenant(bench, args.hostile_writes)
            if args.hostile_only:
                return results
            await populate(base_bench, 0, 1)
            await base_bench.post("/api/v1/namespaces/default/configmaps", configmap("r0-0"))
            await ensure_crd(bench, "")
            await post_retrying(bench, f"/apis/{GROUP}/v1/namespaces/default/things", thing("warmup"))
            rates: dict[str, list[float]] = {"configmaps": [], "things": []}
            for round_ in range(args.rounds):
                for kind, path, make in (("configmaps", "/api/v1/namespaces/default/configmaps", configmap),
                                         ("things", f"/apis/{GROUP}/v1/namespaces/default/things", thing)):
                    rate = await run_concurrent(args.creates, 32, lambda i, path=path, make=make, r=round_:
                                                bench.post(path, make(f"r{r}-{i}")))
                    rates[kind].append(rate)
            cm, cr = max(rates["configmaps"]), max(rates["things"])
            results["create"] = {"configmaps_per_s": round(cm, 1), "custom_per_s": round(cr, 1),
                                 "ratio": round(cr / cm, 3), "concurrency": 32, "count": args.creates,
                                 "rounds": args.rounds}

            levels: list[dict[str, Any]] = []
            created = 0
            base_rss = tree_rss_kib(server.process.pid)
            for target in args.clusters:
                await populate(bench, created, target)
                created = target
                settled = await settle([server.process.pid, etcd.process.pid, baseline.process.pid])
                rss = tree_rss_kib(server.process.pid)
                measured = await latencies({"scaled": sample_paths(bench, etcd.endpoint, target),
                                            "baseline": sample_paths(base_bench, base_etcd.endpoint, 1)},
                                           args.samples)
                scaled, base = measured["scaled"], measured["baseline"]
                previous = levels[-1] if levels else {"clusters": 0, "rss_kib": base_rss}
                levels.append({"clusters": target, "rss_kib": rss, "settled_s": settled,
                               "rss_per_cluster_kib": round((rss - base_rss) / target, 2),
                               "rss_per_added_cluster_kib": round((rss - previous["rss_kib"])
                                                                  / (target - previous["clusters"]), 2),
                               **scaled, "baseline": base,
                               "ratios": {f"{op}_{q}": round(scaled[op][f"{q}_ms"] / base[op][f"{q}_ms"], 3)
                                          for op in scaled for q in ("p50", "p99")}})
                print(f"  {target} clusters: RSS {rss / 1024:.0f} MiB, {levels[-1]['rss_per_cluster_kib']} KiB/cluster,"
                      f" ratios to a 1-cluster server {levels[-1]['ratios']}", flush=True)
            results["scale"] = levels
            results["base_rss_kib"] = base_rss
            results["scale_ratios"] = levels[-1]["ratios"]
    finally:
        server.stop()
        baseline.stop()
        await etcd.stop()
        await base_etcd.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clusters", type=int, nargs="+", default=[1, 100, 1000, 10_000])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--schema-objects", type=int, default=3000, help="objects for the in-process figure")
    parser.add_argument("--schema-only", action="store_true", help="only the in-process figure, no servers")
    parser.add_argument("--hostile-writes", type=int, default=100)
    parser.add_argument("--hostile-only", action="store_true", help="only the hostile-tenant phase")
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"crds-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    v = results["schema"]
    print(f"\nin process, per object: 30-field custom resource prune+default+validate {v['custom_resource_us']} us, "
          f"ConfigMap decode+validate {v['configmap_us']} us (ratio {v['ratio']}); ObjectMeta validation, "
          f"shared by both: {v['object_meta_us']} us")
    if args.schema_only:
        print(f"written to {out}")
        return
    h = results["hostile"]
    print(f"hostile tenant: {h['refused_422']}/{h['writes']} catastrophic-pattern writes refused (422) in "
          f"{h['attack_s']} s; another tenant's GET p50/p99 {h['during_attack']['p50_ms']}/"
          f"{h['during_attack']['p99_ms']} ms during them, {h['quiet']['p50_ms']}/{h['quiet']['p99_ms']} ms "
          f"without (ratio {h['p50_ratio']}/{h['p99_ratio']}; target p99 < 50 ms)")
    if args.hostile_only:
        print(f"written to {out}")
        return
    c = results["create"]
    print(f"create c=32: ConfigMap {c['configmaps_per_s']}/s, custom resource (30 fields) {c['custom_per_s']}/s,"
          f" ratio {c['ratio']}")
    for level in results["scale"]:
        r = level["ratios"]
        print(f"{level['clusters']:>6} clusters: {level['rss_per_cluster_kib']:>7} KiB/cluster  "
              f"GET p50/p99 {level['get']['p50_ms']}/{level['get']['p99_ms']} ms  "
              f"LIST p50/p99 {level['list']['p50_ms']}/{level['list']['p99_ms']} ms  | against 1 cluster: "
              f"GET {r['get_p50']}/{r['get_p99']}  LIST {r['list_p50']}/{r['list_p99']}  "
              f"etcd get {r['etcd_get_p50']}  admin ConfigMap GET {r['configmap_get_p50']}")
    print(f"RSS per logical cluster added between the two largest counts: "
          f"{results['scale'][-1]['rss_per_added_cluster_kib']} KiB")
    print(f"ratios at the largest count against a 1-cluster server: {results['scale_ratios']}")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
