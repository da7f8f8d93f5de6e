"""Benchmark (not a test): `kubectl get pods` through kcp over the pods of many physical clusters (issue 23).

Setup, everything real: kcp, one `kcp-sim-cluster --clusters N` (N physical clusters in one process), the cluster
controller in push mode (its syncers mirror the pods of synced workloads into kcp) and the splitter. `--deployments`
Deployments of `--replicas` each are spread over the N clusters; once kcp lists every pod Running, each read is
timed `--rounds` times:
- `kubectl get pods` (the Table kubectl asks for), `-o wide`, and `-l app=<one Deployment>`: wall clock of the
  kubectl process, so its own start (~0.1 s) is included, as a user sees it;
- the same list straight from the API, as a Table and as JSON (the server's part alone).
Issue 23's target: `kubectl get pods` over 1,000 pods on 10 clusters < 1 s. The reads are served from kcp's
watch cache of the mirrored pods: the physical clusters see none of them (one reflector per syncer, as before).
Prints a summary and writes bench/results/pods-view-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "bench"))

from bench_apiserver import percentile  # noqa: E402
from daemon_process import ClusterControllerProcess  # noqa: E402
from splitter_fixtures import DEPLOYMENTS, TARGETS, SplitterProcess, deployment  # noqa: E402
from syncer_fixtures import Rest, eventually  # noqa: E402

from kcp_process import KcpServer, cluster_kubeconfig, free_port, kubectl_binary, sim_cluster_command, sim_cluster_env  # noqa: E402

LOGICAL_CLUSTER = "bench-pods"
PODS = "/api/v1/namespaces/default/pods"
SYNC_TARGET_CRD = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _ready(target: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (target.get("status") or {}).get("conditions") or [])


def running_pods(rest: Rest) -> int:
    items = rest.get(PODS)["items"]
    return sum(1 for p in items if (p.get("status") or {}).get("phase") == "Running")


def timed(call: Any, rounds: int) -> dict[str, float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return {"p50_s": round(percentile(times, 50), 3), "p99_s": round(percentile(times, 99), 3),
            "max_s": round(max(times), 3)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-pods-view-"))
    kcp = KcpServer(tmp / "kcp", free_port())
    per_cluster = -(-args.deployments * args.replicas // args.clusters)
    sim = KcpServer(tmp / "sim", free_port(), ["--clusters", str(args.clusters), "--nodes", "2", "--ready-delay", "0",
                                                "--node-capacity", f"cpu=640,memory=2560Gi,pods={per_cluster + 50}"],
                    command=sim_cluster_command(), env=sim_cluster_env())
    controller = ClusterControllerProcess(kcp, tmp / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "5", "--heartbeat-threshold", "60",
        "--qps", "0"])
    splitter = SplitterProcess(kcp, tmp / "splitter.log", ["--no-leader-elect", "--qps", "0"])
    started: list[Any] = []
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "clusters": args.clusters, "deployments": args.deployments, "replicas": args.replicas}
    try:
        for server in (kcp, sim):
            server.start(timeout=120)
            started.append(server)
        controller.start()
        started.append(controller)
        rest = Rest(kcp).at(LOGICAL_CLUSTER)
        status, body = rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    yaml.safe_load(SYNC_TARGET_CRD.read_text()))
        assert status in (201, 409), (status, body)
        eventually(lambda: rest.request("GET", TARGETS)[0] == 200, "SyncTargets served", timeout=60)
        targets = [f"sim-{i}" for i in range(1, args.clusters + 1)]
        for target in targets:
            rest.create(TARGETS, {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                                  "metadata": {"name": target},
                                  "spec": {"kubeconfig": (sim.root / f"{target}.kubeconfig").read_text()}})
        eventually(lambda: all(_ready(rest.get(f"{TARGETS}/{t}")) for t in targets), "every SyncTarget Ready",
                   timeout=300)
        eventually(lambda: rest.request("GET", DEPLOYMENTS)[0] == 200 and rest.request("GET", PODS)[0] == 200,
                   "Deployments and Pods imported", timeout=180)
        splitter.start()
        started.append(splitter)
        names = [f"app-{i:03d}" for i in range(args.deployments)]
        begun = time.perf_counter()
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda name: rest.create(DEPLOYMENTS, deployment(name, args.replicas)), names))
        want = args.deployments * args.replicas
        eventually(lambda: running_pods(rest) >= want, f"{want} pods Running in kcp", timeout=args.timeout)
        results["pods_in_kcp_seconds"] = round(time.perf_counter() - begun, 1)
        results["pods"] = len(rest.get(PODS)["items"])

        kubeconfig = cluster_kubeconfig(kcp, LOGICAL_CLUSTER, "bench")
        kubectl = [kubectl_binary(), "--kubeconfig", str(kubeconfig)]

        def kubectl_lines(*extra: str) -> int:
            out = subprocess.run([*kubectl, "get", "pods", *extra], capture_output=True, text=True, check=True).stdout
            return len(out.splitlines()) - 1

        listed = kubectl_lines()
        assert listed == results["pods"], (listed, results["pods"])
        assert kubectl_lines("-l", f"app={names[0]}") == args.replicas
        clusters_shown = {line.split()[-1] for line in subprocess.run(
            [*kubectl, "get", "pods", "--no-headers"], capture_output=True, text=True, check=True).stdout.splitlines()}
        results["clusters_shown"] = len(clusters_shown)
        results["kubectl_get_pods"] = timed(kubectl_lines, args.rounds)
        results["kubectl_get_pods_wide"] = timed(lambda: kubectl_lines("-o", "wide"), args.rounds)
        results["kubectl_get_pods_selector"] = timed(lambda: kubectl_lines("-l", f"app={names[0]}"), args.rounds)
        results["api_table"] = timed(lambda: rest.request("GET", PODS, accept=TABLE), args.rounds)
        results["api_json"] = timed(lambda: rest.request("GET", PODS), args.rounds)
    finally:
        for part in reversed(started):
            part.stop()
    return results


def summary(results: dict[str, Any]) -> str:
    def row(label: str, key: str) -> str:
        f = results[key]
        return f"  {label:<34} p50 {f['p50_s']:.3f} s  p99 {f['p99_s']:.3f} s  max {f['max_s']:.3f} s"
    return "\n".join([
        f"{results['pods']} pods of {results['deployments']} Deployments on {results['clusters']} clusters, mirrored "
        f"into kcp in {results['pods_in_kcp_seconds']} s; `get pods` shows {results['clusters_shown']} clusters",
        row("kubectl get pods (target < 1 s)", "kubectl_get_pods"),
        row("kubectl get pods -o wide", "kubectl_get_pods_wide"),
        row(f"kubectl get pods -l (one app, {results['replicas']})", "kubectl_get_pods_selector"),
        row("API list as Table (server alone)", "api_table"),
        row("API list as JSON", "api_json"),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--deployments", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=100, help="per Deployment")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=600, help="seconds until every pod shows Running in kcp")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"pods-view-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(summary(results))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
