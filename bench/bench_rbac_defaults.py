"""Benchmark: kube's bootstrap RBAC, shared by every logical cluster (issue 28 item 4). Not a test.

A kcp-apiserver with its embedded etcd. Measures, in one logical cluster, the latency of listing its
ClusterRoles (all defaults: the shared objects are copied and dated per request) as JSON and as kubectl's
Table; then the server's RSS before and after `--clusters` logical clusters are each born (one ConfigMap)
and read for their ClusterRoles and ClusterRoleBindings: the defaults must add nothing per logical cluster
(the contract: a logical cluster costs about a namespace). Run the same command against another checkout
(`--repo`, with that checkout's venv first on PATH) for a before/after in one session. Prints a summary and
writes bench/results/rbac-defaults-<time>.json.

Measured on 2 cores shared with other helpers' work, main (11 defaults) then this branch (69 defaults), back
to back: LIST p50 1.5 -> 3.2 ms as JSON, 1.5 -> 3.4 ms as a Table (about the same cost per object; the list
grew 6x); RSS per logical cluster born and read 14.8 -> 15.7 KiB at 1,000 clusters and 14.0 -> 14.2 KiB at
3,000: a fixed ~1 MiB (larger transient lists), not a cost per logical cluster. The roles' data and the
compiled index cost ~0.6 MiB once per process.
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

REPO = Path(__file__).resolve().parents[1]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def percentiles(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"p50_ms": round(times[len(times) // 2] * 1000, 2),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1000, 2)}


async def list_latency(session: aiohttp.ClientSession, url: str, accept: str, samples: int, ssl: Any
                       ) -> dict[str, Any]:
    times, body = [], b""
    for _ in range(samples):
        start = time.perf_counter()
        async with session.get(url, ssl=ssl, headers={"Accept": accept}) as reply:
            body = await reply.read()
            assert reply.status == 200, body[:200]
        times.append(time.perf_counter() - start)
    decoded = json.loads(body)
    return {"items": len(decoded.get("items") or decoded.get("rows") or []), **percentiles(times)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(args.repo / "tests" / "e2e"))
    from kcp_process import KcpServer, free_port

    server = KcpServer(Path(tempfile.mkdtemp(prefix="kcp-bench-rbac-")), free_port(), ["--log-level", "warning"])
    server.start()
    results: dict[str, Any] = {"repo": str(args.repo), "clusters": args.clusters, "samples": args.samples}
    try:
        assert server.process is not None
        ssl = server.ssl_context()
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "born"}}
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as session:
            one = f"{server.url}/clusters/bench-one"
            async with session.post(f"{one}/api/v1/namespaces/default/configmaps", ssl=ssl, json=configmap) as r:
                assert r.status == 201, await r.text()
            for label, accept in (("json", "application/json"), ("table", TABLE)):
                results[f"list_{label}"] = await list_latency(session, f"{one}{RBAC}/clusterroles", accept,
                                                              args.samples, ssl)
            before = rss_kib(server.process.pid)
            gate = asyncio.Semaphore(16)

            async def born_and_read(i: int) -> None:
                async with gate:
                    base = f"{server.url}/clusters/bench-{i}"
                    async with session.post(f"{base}/api/v1/namespaces/default/configmaps", ssl=ssl,
                                            json=configmap) as r:
                        assert r.status == 201, await r.text()
                    for kind in ("clusterroles", "clusterrolebindings"):
                        async with session.get(f"{base}{RBAC}/{kind}", ssl=ssl) as r:
                            await r.read()

            await asyncio.gather(*(born_and_read(i) for i in range(args.clusters)))
            await asyncio.sleep(3)  # let transient buffers go before reading RSS
            after = rss_kib(server.process.pid)
            results.update(rss_before_kib=before, rss_after_kib=after,
                           rss_per_cluster_kib=round((after - before) / args.clusters, 2))
    finally:
        server.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=300, help="LISTs timed per format")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose tests/e2e start the server")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"rbac-defaults-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    for label in ("json", "table"):
        r = results[f"list_{label}"]
        print(f"LIST clusterroles ({label}): {r['items']} items, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms")
    print(f"RSS {results['rss_before_kib'] // 1024} -> {results['rss_after_kib'] // 1024} MiB after {args.clusters} "
          f"logical clusters born and read: {results['rss_per_cluster_kib']} KiB per logical cluster")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
