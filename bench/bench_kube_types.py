"""Benchmark (not a test): client-side `kubectl apply` of a changed Deployment, through kcp and directly.

kcp serves apps/v1 Deployment as a CRD imported from the physical clusters; kubectl still treats it as
kube's Deployment and sends strategic merge patches. Issue 21's target: that update throughput through
kcp is at least 0.8 of the same against a kcp-sim-cluster (where Deployment is a built-in).

Setup: a kcp-apiserver and one kcp-sim-cluster. The Deployment CRD kcp serves is the one the cluster
controller imports from that sim cluster (its own code reads the sim's OpenAPI and writes the CRD,
patch strategies and all), in logical cluster `bench-apply`. The Deployments are paused, so the sim's
deployment controller rolls nothing out and both sides measure the API path alone.

Each of `--concurrency` workers applies its own Deployment `--rounds` times, as kubectl's client-side
apply does: GET the live object, then PATCH a strategic merge patch changing the image and the
last-applied-configuration annotation (with kubectl's `$setElementOrder` directive). Throughput is
applies (GET + PATCH) per second over the whole run; the latency is per apply. Prints a summary and
writes bench/results/kube-types-<time>.json.
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

from bench_apiserver import percentile  # noqa: E402
from kcp_cluster_controller.imports import crd_for  # noqa: E402
from kcp_cluster_controller.openapi import crd_schema  # noqa: E402
from kcp_cluster_controller.physical import ImportedType  # noqa: E402
from syncer_fixtures import Rest, eventually, sim_cluster  # noqa: E402

from kcp_process import KcpServer, free_port  # noqa: E402

LOGICAL_CLUSTER = "bench-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SMP = "application/strategic-merge-patch+json"


def manifest(name: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": 1, "paused": True, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                         {"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]}}}}


def applied(name: str, image: str) -> dict[str, Any]:
    """The object as `kubectl apply` creates it: the manifest with its last-applied annotation."""
    obj = manifest(name, image)
    obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(manifest(name, image), sort_keys=True) + "\n"}
    return obj


def apply_patch(name: str, image: str) -> bytes:
    """kubectl's three-way patch for a new image: the annotation, the container by name, its order."""
    return orjson.dumps({
        "metadata": {"annotations": {LAST_APPLIED: json.dumps(manifest(name, image), sort_keys=True) + "\n"}},
        "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "nginx"}],
                                       "containers": [{"image": image, "name": "nginx"}]}}}})


def import_deployment_crd(kcp: Rest, sim: Rest) -> None:
    """What the cluster controller publishes for the sim's Deployment, created in kcp and established."""
    schema = crd_schema(sim.get("/openapi/v3/apis/apps/v1"), "apps", "v1", "Deployment")
    view = ImportedType(resource="deployments.apps", group="apps", version="v1", kind="Deployment",
                        plural="deployments", singular="deployment", namespaced=True, schema=schema,
                        short_names=("deploy",), scale=True)
    status, body = kcp.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                               crd_for([view], schema, ["sim"]))
    assert status == 201, (status, body)
    eventually(lambda: kcp.get("/apis/apps/v1/namespaces/default/deployments") is not None,
               "Deployments served by kcp", timeout=30)


async def run_side(server: KcpServer, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    base = f"{server.url}{prefix}/apis/apps/v1/namespaces/default/deployments"
    headers = {"Authorization": f"Bearer {server.token}", "Accept": "application/json"}
    ssl = server.ssl_context()
    latencies: list[float] = []
    codes: dict[int, int] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as session:
        names = [f"web-{i}" for i in range(args.concurrency)]
        for name in names:
            async with session.post(base, data=orjson.dumps(applied(name, "nginx:0")), ssl=ssl,
                                    headers={**headers, "Content-Type": "application/json"}) as resp:
                assert resp.status == 201, await resp.text()

        async def worker(name: str) -> None:
            for round_ in range(1, args.rounds + 1):
                began = time.perf_counter()
                async with session.get(f"{base}/{name}", headers=headers, ssl=ssl) as resp:
                    await resp.read()
                async with session.patch(f"{base}/{name}", data=apply_patch(name, f"nginx:{round_}"), ssl=ssl,
                                         headers={**headers, "Content-Type": SMP}) as resp:
                    await resp.read()
                    codes[resp.status] = codes.get(resp.status, 0) + 1
                latencies.append(time.perf_counter() - began)

        started = time.perf_counter()
        await asyncio.gather(*(worker(name) for name in names))
        elapsed = time.perf_counter() - started
    applies = args.concurrency * args.rounds
    return {"applies": applies, "seconds": round(elapsed, 2), "applies_per_s": round(applies / elapsed, 1),
            "p50_ms": round(percentile(latencies, 50) * 1000, 1), "p99_ms": round(percentile(latencies, 99) * 1000, 1),
            "codes": {str(k): v for k, v in sorted(codes.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=40, help="applies per worker")
    args = parser.parse_args()
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "concurrency": args.concurrency, "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="bench-kube-types-") as tmp:
        kcp = KcpServer(Path(tmp) / "kcp", free_port())
        sim = sim_cluster(Path(tmp) / "sim")
        try:
            kcp.start()
            sim.start()
            import_deployment_crd(Rest(kcp).at(LOGICAL_CLUSTER), Rest(sim))
            # the sim first, then kcp: each side alone on the machine while it is measured
            results["sim"] = asyncio.run(run_side(sim, "", args))
            results["kcp"] = asyncio.run(run_side(kcp, f"/clusters/{LOGICAL_CLUSTER}", args))
        finally:
            sim.stop()
            kcp.stop()
    results["ratio"] = round(results["kcp"]["applies_per_s"] / results["sim"]["applies_per_s"], 2)
    out = REPO / "bench" / "results" / f"kube-types-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(summary(results))
    print(f"written to {out.relative_to(REPO)}")


def summary(results: dict[str, Any]) -> str:
    lines = [f"client-side apply of a changed Deployment, c={results['concurrency']} "
             f"({results['concurrency'] * results['rounds']} applies per side):"]
    for side, label in (("sim", "kcp-sim-cluster (built-in)"), ("kcp", "kcp (imported CRD)")):
        r = results[side]
        lines.append(f"  {label:28} {r['applies_per_s']:7.1f} applies/s  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms"
                     f"  codes {r['codes']}")
    lines.append(f"  ratio kcp / sim: {results['ratio']} (target >= 0.8)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
