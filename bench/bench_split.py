"""Benchmark of kcp-deployment-splitter (not a test).

Real processes: a kcp-apiserver and the splitter. The SyncTargets are driven through the API (the
cluster controller's part), so the figures are the splitter's own:

1. spread: seconds from creating N root Deployments (10 replicas each) over T Ready targets until
   every root has its T children with the right replicas, and the reconcile throughput over that
   time (reconciles/s from the splitter's own `reconcile_total`);
2. failover: seconds from one target turning NotReady until every root's replicas are reassigned to
   the others (children written), reported with and without the grace period.

Prints a summary and writes bench/results/split-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from splitter_fixtures import DEPLOYMENTS, SplitterProcess, deployment, set_ready  # noqa: E402
from syncer_fixtures import Rest, create_sync_target, install_types  # noqa: E402

from kcp_process import KcpServer, free_port  # noqa: E402

CLUSTER = "bench-split"
REPLICAS = 10


def reconciles(splitter: SplitterProcess) -> float:
    found = re.findall(r'kcp_deployment_splitter_reconcile_total\{controller="deployment-splitter",'
                       r'result="[a-z_]+"\} ([0-9.e+]+)', splitter.metrics())
    return sum(float(v) for v in found)


def children_by_root(rest: Rest) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for item in rest.get(DEPLOYMENTS)["items"]:
        labels = item["metadata"].get("labels") or {}
        root = labels.get("splitter.kcp.io/root")
        if root:
            out.setdefault(root, {})[labels["workloads.kcp.io/cluster"]] = item["spec"]["replicas"]
    return out


def wait_until(done: Any, timeout: float, what: str, period: float = 0.25) -> float:
    started = time.perf_counter()
    while not done():
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"not within {timeout}s: {what}")
        time.sleep(period)
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "deployments": args.deployments, "targets": args.targets,
                               "grace_period": args.grace_period}
    with tempfile.TemporaryDirectory(prefix="bench-split-") as tmp:
        kcp = KcpServer(Path(tmp) / "kcp", free_port())
        kcp.start()
        splitter = None
        try:
            rest = Rest(kcp).at(CLUSTER)
            install_types(rest)
            targets = [f"cluster-{i:02d}" for i in range(args.targets)]
            for target in targets:
                create_sync_target(rest, target)
                set_ready(rest, target, True)
            splitter = SplitterProcess(kcp, Path(tmp) / "splitter.log",
                                       ["--no-leader-elect", "--grace-period", str(args.grace_period),
                                        "--workers", str(args.workers), "--qps", "0"]).start()
            names = [f"app-{i:04d}" for i in range(args.deployments)]
            before = reconciles(splitter)
            started = time.perf_counter()
            for name in names:
                rest.create(DEPLOYMENTS, deployment(name, REPLICAS))
            created = time.perf_counter() - started

            def spread() -> bool:
                children = children_by_root(rest)
                return all(sum(children.get(n, {}).values()) == REPLICAS and len(children[n]) == min(
                    REPLICAS, len(targets)) for n in names)
            wait_until(spread, args.timeout, "every root spread")
            seconds = time.perf_counter() - started
            done = reconciles(splitter) - before
            results["spread"] = {"seconds": round(seconds, 3), "create_seconds": round(created, 3),
                                 "reconciles": int(done), "reconciles_per_second": round(done / seconds, 1)}

            lost = targets[0]
            started = time.perf_counter()
            set_ready(rest, lost, False)

            def moved() -> bool:
                children = children_by_root(rest)
                return all(sum(n for t, n in children.get(r, {}).items() if t != lost) == REPLICAS for r in names)
            wait_until(moved, args.timeout + args.grace_period, "replicas moved off the lost target")
            seconds = time.perf_counter() - started
            results["failover"] = {"seconds": round(seconds, 3),
                                   "beyond_grace_seconds": round(seconds - args.grace_period, 3)}
        finally:
            if splitter is not None:
                splitter.stop()
            kcp.stop()
    return results


def summary(results: dict[str, Any]) -> str:
    spread, failover = results["spread"], results["failover"]
    return "\n".join([
        f"splitter: {results['deployments']} roots x {REPLICAS} replicas over {results['targets']} targets",
        f"  spread:   {spread['seconds']} s to place every root ({spread['create_seconds']} s of it creating them); "
        f"{spread['reconciles']} reconciles, {spread['reconciles_per_second']} /s",
        f"  failover: {failover['seconds']} s from NotReady to every root reassigned "
        f"({failover['beyond_grace_seconds']} s beyond the {results['grace_period']} s grace period)",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--targets", type=int, default=10)
    parser.add_argument("--grace-period", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    results = run(args)
    print(summary(results))
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"split-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
