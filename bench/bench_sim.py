"""Benchmark of kcp-sim-cluster's simulated control plane (not a test).

Three figures, printed and written to bench/results/sim-<time>.json:
- how long a Deployment of `--replicas` (1,000) takes to become fully available with --ready-delay 0;
- how long a rolling update of it (a new image) takes to complete;
- the server's RSS (without etcd) once `--pods` (10,000) pods run on `--nodes` (100) nodes;
and the server's CPU seconds (without etcd) for the first two, which a busy machine disturbs less than their times.
Targets (issue 9): 1,000 replicas available in < 20 s; 10,000 pods under 1 GiB.
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

from bench_apiserver import rss_kib, tree_cpu_seconds, tree_rss_kib  # noqa: E402

from kcp_process import KcpServer, free_port, sim_cluster_command, sim_cluster_env  # noqa: E402

NAMESPACE = "bench"
POLL = 0.2


def deployment(name: str, replicas: int, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": image}]}}}}


class Client:
    def __init__(self, server: KcpServer, session: aiohttp.ClientSession) -> None:
        self.server = server
        self.session = session
        self.ssl = server.ssl_context()
        self.headers = {"Authorization": f"Bearer {server.token}", "Accept": "application/json"}

    async def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        headers = {**self.headers, "Content-Type": content_type}
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, self.server.url + path, data=data, headers=headers,
                                        ssl=self.ssl) as resp:
            text = await resp.read()
            if resp.status >= 300:
                raise RuntimeError(f"{method} {path}: {resp.status} {text[:300]!r}")
            return orjson.loads(text)

    def deployments(self, name: str = "") -> str:
        return f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments" + (f"/{name}" if name else "")

    async def rolled_out(self, name: str, patience: float) -> float:
        """Seconds until the Deployment is fully rolled out (kubectl rollout status's test)."""
        started = time.perf_counter()
        while time.perf_counter() - started < patience:
            d = await self.request("GET", self.deployments(name))
            status, want = d.get("status") or {}, d["spec"]["replicas"]
            if (status.get("observedGeneration", 0) >= d["metadata"]["generation"]
                    and status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want
                    and status.get("availableReplicas", 0) == want):
                return time.perf_counter() - started
            await asyncio.sleep(POLL)
        raise TimeoutError(f"deployment {name} not rolled out in {patience}s")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="kcp-bench-sim-"))
    server = KcpServer(root, free_port(), ["--nodes", str(args.nodes), "--ready-delay", "0",
                                           "--node-capacity", f"cpu=64,memory=256Gi,pods={args.pods_per_node}",
                                           "--log-level", args.log_level],
                       command=sim_cluster_command(), env=sim_cluster_env())
    server.start(timeout=120)
    assert server.process is not None
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "nodes": args.nodes, "replicas": args.replicas, "pods": args.pods}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            client = Client(server, session)
            await client.request("POST", "/api/v1/namespaces",
                                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            results["rss_idle_kib"] = tree_rss_kib(server.process.pid)

            pid = server.process.pid
            started, cpu = time.perf_counter(), tree_cpu_seconds(pid)
            await client.request("POST", client.deployments(), deployment("big", args.replicas, "app:1"))
            await client.rolled_out("big", args.timeout)
            results["deployment_available_s"] = round(time.perf_counter() - started, 2)
            results["deployment_available_cpu_s"] = round(tree_cpu_seconds(pid) - cpu, 2)

            started, cpu = time.perf_counter(), tree_cpu_seconds(pid)
            await client.request("PATCH", client.deployments("big"),
                                 {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}},
                                 content_type="application/strategic-merge-patch+json")
            await client.rolled_out("big", args.timeout)
            results["rolling_update_s"] = round(time.perf_counter() - started, 2)
            results["rolling_update_cpu_s"] = round(tree_cpu_seconds(pid) - cpu, 2)

            remaining = args.pods - args.replicas
            started = time.perf_counter()
            index = 0
            while remaining > 0:
                size = min(args.replicas, remaining)
                await client.request("POST", client.deployments(), deployment(f"fill-{index}", size, "app:1"))
                remaining -= size
                index += 1
            for i in range(index):
                await client.rolled_out(f"fill-{i}", args.timeout)
            results["fill_to_pods_s"] = round(time.perf_counter() - started, 2)
            results["rss_pods_kib"] = tree_rss_kib(server.process.pid)
            results["etcd_rss_kib"] = etcd_rss_kib(server.process.pid)
    finally:
        server.stop()
    return results


def etcd_rss_kib(pid: int) -> int:
    """RSS of the embedded etcd (a child of the server)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    children = path.read_text().split() if path.exists() else []
    return sum(rss_kib(int(c)) for c in children
               if b"etcd" in Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")[0])


def summary(results: dict[str, Any]) -> str:
    return "\n".join([
        f"kcp-sim-cluster: {results['nodes']} nodes, --ready-delay 0",
        f"  {results['replicas']}-replica Deployment fully available: {results['deployment_available_s']} s"
        " (target < 20 s)",
        f"  rolling update of it:                     {results['rolling_update_s']} s",
        f"  server CPU (without etcd): {results['deployment_available_cpu_s']} s to make it available, "
        f"{results['rolling_update_cpu_s']} s to roll it (less load-bound than the times above)",
        f"  {results['pods']} pods running: server RSS {results['rss_pods_kib'] / 1024:.0f} MiB (target < 1024), "
        f"etcd {results['etcd_rss_kib'] / 1024:.0f} MiB; idle {results['rss_idle_kib'] / 1024:.0f} MiB; "
        f"filled in {results['fill_to_pods_s']} s",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=1000, help="replicas of the measured Deployment")
    parser.add_argument("--pods", type=int, default=10_000, help="pods running when RSS is measured")
    parser.add_argument("--nodes", type=int, default=100, help="simulated nodes")
    parser.add_argument("--pods-per-node", type=int, default=110, help="each node's pods capacity")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for each rollout")
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"sim-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(summary(results))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
