"""Benchmark of `kubectl logs -f` through kcp's syncer tunnel (not a test): how long after the simulated
container prints a line does kubectl print it.

kcp, one kcp-sim-cluster and the cluster controller (push mode, so the syncer and its tunnel run in it, with
its default discovery interval: a discovery round every 5 s held lines back by up to 250 ms); a
Deployment of one pod printing a line every 0.2 s (the e2e file's). The sim stamps each line with the time it
was printed (`--timestamps`), so a line's latency is the time kubectl printed it minus its stamp (one
machine, one clock). The same is measured straight against the sim, the floor kcp adds to. Prints p50, p99
and max of both and writes bench/results/pod-logs-<time>.json. Target (issue 23): p99 < 500 ms through kcp.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from daemon_process import ClusterControllerProcess  # noqa: E402
from syncer_fixtures import sim_cluster  # noqa: E402
from test_pod_streams_through_kcp import running_pods, tenant  # noqa: E402

from kcp_process import KcpServer, free_port, kubectl_binary  # noqa: E402

LINE_INTERVAL = 0.2  # seconds between two lines: the e2e Deployment's sim.kcp.io/log-interval


def follow(kubeconfig: Path, args: list[str], lines: int, timeout: float) -> list[float]:
    """Seconds between each line's stamp and kubectl printing it, for `lines` lines."""
    process = subprocess.Popen([kubectl_binary(), "--kubeconfig", str(kubeconfig), "logs", "-f", "--timestamps",
                                "--tail", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    latencies: list[float] = []
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            printed = time.time()
            stamp, _, text = line.partition(" ")
            if " line " not in text:
                continue
            latencies.append(printed - datetime.fromisoformat(stamp[:26] + "+00:00").timestamp())
            if len(latencies) >= lines:
                break
    finally:
        timer.cancel()
        process.terminate()
        process.wait(10)
    if len(latencies) < lines:
        raise TimeoutError(f"{len(latencies)} of {lines} lines within {timeout}s")
    return latencies


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)

    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": round(ordered[-1] * 1000, 1), "lines": len(values)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="kcp-bench-pod-logs-"))
    kcp, physical = KcpServer(root / "kcp", free_port(), ["--log-level", "warning"]), sim_cluster(root / "east")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2",
        "--discovery-interval", str(args.discovery_interval)])
    started: list[KcpServer] = []
    try:
        for server in (kcp, physical):
            server.start(timeout=120)
            started.append(server)
        controller.start()
        kubeconfig = tenant(kcp, "bench", {"east": physical})
        pod = running_pods(kcp, kubeconfig, ("east",))["east"]
        direct = [f"{pod}", "-c", "app", "-n", kcp_namespace(physical, pod)]
        return {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "interval_s": LINE_INTERVAL,
                "through_kcp": percentiles(follow(kubeconfig, [pod, "-c", "app"], args.lines, args.timeout)),
                "direct_to_sim": percentiles(follow(physical.kubeconfig, direct, args.lines, args.timeout))}
    finally:
        controller.stop()
        for server in started:
            server.stop()


def kcp_namespace(physical: KcpServer, pod: str) -> str:
    """The downstream namespace the syncer put the pod in."""
    listed = subprocess.run([kubectl_binary(), "--kubeconfig", str(physical.kubeconfig), "get", "pods", "-A",
                             "-o", "json"], capture_output=True, text=True, check=True)
    return next(str(p["metadata"]["namespace"]) for p in json.loads(listed.stdout)["items"]
                if p["metadata"]["name"] == pod)


def summary(results: dict[str, Any]) -> str:
    def line(name: str, figures: dict[str, float]) -> str:
        return (f"  {name:15} p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms "
                f"({figures['lines']} lines)")

    return "\n".join([f"kubectl logs -f, a line every {results['interval_s']} s: printed minus stamped",
                      line("through kcp", results["through_kcp"]), line("direct to sim", results["direct_to_sim"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=200, help="lines measured on each path")
    parser.add_argument("--discovery-interval", type=float, default=60.0,
                        help="the cluster controller's (its default; the e2e tests use 5)")
    parser.add_argument("--timeout", type=float, default=150, help="seconds to wait for the lines of one path")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    results = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"pod-logs-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(summary(results))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
