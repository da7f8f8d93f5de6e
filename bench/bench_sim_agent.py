"""Benchmark of `kcp-sim-cluster agent` against the sim's in-process kubelets, back to back (not a test).

The same Deployment (`--replicas`, 500) on the same number of nodes (`--nodes`, 50), --ready-delay 0:
first on a `--nodes 0` kcp-sim-cluster whose nodes an agent process plays over HTTP, then on a
kcp-sim-cluster with its own nodes. Prints a summary and writes bench/results/sim-agent-<time>.json:
seconds until every node is Ready, seconds until the Deployment is fully available, the agent's RSS.
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

from bench_apiserver import rss_kib  # noqa: E402
from bench_sim import NAMESPACE, POLL, Client, deployment  # noqa: E402

from kcp_process import KcpServer, free_port, sim_cluster_command, sim_cluster_env  # noqa: E402


async def nodes_ready(client: Client, count: int, patience: float) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < patience:
        nodes = (await client.request("GET", "/api/v1/nodes"))["items"]
        ready = [n for n in nodes if any(c["type"] == "Ready" and c["status"] == "True"
                                         for c in (n.get("status") or {}).get("conditions") or [])]
        if len(ready) >= count:
            return time.perf_counter() - started
        await asyncio.sleep(POLL)
    raise TimeoutError(f"{count} nodes not Ready in {patience}s")


def start_agent(server: KcpServer, args: argparse.Namespace) -> subprocess.Popen[bytes]:
    with open(server.root / "agent.log", "ab") as log:
        return subprocess.Popen([*sim_cluster_command(), "agent", "--kubeconfig", str(server.kubeconfig),
                                 "--nodes", str(args.nodes), "--node-capacity", args.node_capacity,
                                 "--ready-delay", "0", "--health-address", "127.0.0.1", "--log-level", "warning"],
                                stdout=log, stderr=log, env=sim_cluster_env(), start_new_session=True)


async def measure(args: argparse.Namespace, *, agent: bool) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="kcp-bench-sim-agent-"))
    server = KcpServer(root, free_port(), ["--nodes", "0" if agent else str(args.nodes), "--ready-delay", "0",
                                           "--node-capacity", args.node_capacity, "--log-level", "warning"],
                       command=sim_cluster_command(), env=sim_cluster_env())
    server.start(timeout=120)
    process: subprocess.Popen[bytes] | None = None
    result: dict[str, Any] = {}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            client = Client(server, session)
            started = time.perf_counter()
            if agent:
                process = start_agent(server, args)
            await nodes_ready(client, args.nodes, args.timeout)
            result["nodes_ready_s"] = round(time.perf_counter() - started, 2)
            await client.request("POST", "/api/v1/namespaces",
                                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            started = time.perf_counter()
            await client.request("POST", client.deployments(), deployment("big", args.replicas, "app:1"))
            await client.rolled_out("big", args.timeout)
            result["deployment_available_s"] = round(time.perf_counter() - started, 2)
            if process is not None:
                result["agent_rss_kib"] = rss_kib(process.pid)
    finally:
        if process is not None:
            process.terminate()
            process.wait(30)
        server.stop()
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    return {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nodes": args.nodes,
            "replicas": args.replicas, "agent": await measure(args, agent=True),
            "in_process": await measure(args, agent=False)}


def summary(results: dict[str, Any]) -> str:
    agent, local = results["agent"], results["in_process"]
    return "\n".join([
        f"{results['nodes']} nodes, a {results['replicas']}-replica Deployment, --ready-delay 0",
        f"  agent (over HTTP):  nodes Ready {agent['nodes_ready_s']} s, Deployment available "
        f"{agent['deployment_available_s']} s, agent RSS {agent['agent_rss_kib'] / 1024:.0f} MiB",
        f"  in-process kubelet: nodes Ready {local['nodes_ready_s']} s, Deployment available "
        f"{local['deployment_available_s']} s",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=500, help="replicas of the measured Deployment")
    parser.add_argument("--nodes", type=int, default=50, help="simulated nodes")
    parser.add_argument("--node-capacity", default="cpu=64,memory=256Gi,pods=110", help="each node's capacity")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for each step")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"sim-agent-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(summary(results))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
