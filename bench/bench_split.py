"""Benchmark of kcp-deployment-splitter (not a test).

Two setups, each with its own kcp:

1. spread (API-driven): a kcp-apiserver and the splitter; T SyncTargets made Ready, with
   allocatable, through the API (the cluster controller's part), so the figures are the splitter's
   own, at a scale the 2-core machine can hold (N roots x 10 replicas, up to 10 shares each):
   - spread: seconds from creating N roots until every one has its shares with the right
     replicas, and the reconcile throughput (reconciles/s from the splitter's `reconcile_total`);
   - reassignment: seconds from one target turning NotReady until every root's replicas are
     written to the others (nobody runs pods here, so "written" is as far as it goes).
2. fleet (everything real, fewer roots): kcp, one `kcp-sim-cluster --clusters 10`, the cluster
   controller in push mode (its syncers heartbeat, so the SyncTargets are Ready from heartbeats, and
   sync the roots' shares down and their status up) and the splitter; M roots x 10 replicas spread over the
   10 clusters and Ready. Then one cluster is cut off (its SyncTarget's kubeconfig pointed at a port
   nobody listens on: the cluster controller reports it unreachable and NotReady) and the figure is
   the time from NotReady until every root has all its replicas Ready on the other nine, reported
   as grace period + X.

Progress is followed with one list and a watch, not by listing every Deployment again and again
(which would load kcp more than the splitter does). Prints a summary and writes
bench/results/split-<time>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from daemon_process import ClusterControllerProcess  # noqa: E402
from splitter_fixtures import (  # noqa: E402
    DEPLOYMENTS,
    STATUS,
    TARGETS,
    SplitterProcess,
    deployment,
    set_ready,
    shares_on,
)
from syncer_fixtures import Rest, create_sync_target, eventually, install_types  # noqa: E402

from kcp_process import KcpServer, free_port, sim_cluster_command, sim_cluster_env  # noqa: E402

REPLICAS = 10
ASSIGNMENT_LABEL = "workloads.kcp.io/cluster"
SYNC_TARGET_CRD = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
ALLOCATABLE = {"cpu": "4000", "memory": "16000Gi", "pods": "100000"}  # room for everything: the estimate runs


def reconciles(splitter: SplitterProcess) -> float:
    found = re.findall(r'kcp_deployment_splitter_reconcile_total\{controller="deployment-splitter",'
                       r'result="[a-z_]+"\} ([0-9.e+]+)', splitter.metrics())
    return sum(float(v) for v in found)


class Children:
    """Every root's shares (target -> (spec replicas, ready replicas)), written on the roots (the splitter's state
    labels and spec diffs, the syncers' status annotations), from one list and a watch."""

    def __init__(self, rest: Rest) -> None:
        self.rest = rest
        self._lock = threading.Lock()
        self._children: dict[str, dict[str, tuple[int, int]]] = {}  # root -> target -> spec, ready
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-watch")

    def start(self) -> Children:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def by_root(self) -> dict[str, dict[str, tuple[int, int]]]:
        with self._lock:
            return {root: dict(shares) for root, shares in self._children.items() if shares}

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if ASSIGNMENT_LABEL in (meta.get("labels") or {}):
            return  # pinned, not split
        annotations = meta.get("annotations") or {}
        shares = {target: (spec, int(json.loads(annotations.get(STATUS + target) or "{}").get("readyReplicas") or 0))
                  for target, spec in shares_on(obj).items()}
        with self._lock:
            if kind == "DELETED":
                self._children.pop(meta["name"], None)
            else:
                self._children[meta["name"]] = shares

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                listed = self.rest.get(DEPLOYMENTS)
                with self._lock:
                    self._children.clear()
                for item in listed["items"]:
                    self._apply("ADDED", item)
                version = listed["metadata"]["resourceVersion"]
                for event in self._watch(version):
                    if event.get("type") == "ERROR":
                        break  # expired: list again
                    if event.get("type") != "BOOKMARK":
                        self._apply(event["type"], event["object"])
            except OSError:
                time.sleep(0.5)

    def _watch(self, version: str) -> Iterator[dict[str, Any]]:
        url = (f"{self.rest.server.url}{self.rest.prefix}{DEPLOYMENTS}?watch=1&resourceVersion={version}"
               "&timeoutSeconds=600")
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.rest.server.token}"})
        with urllib.request.urlopen(req, context=self.rest.server.ssl_context(), timeout=60) as resp:
            for line in resp:
                if self._stop.is_set():
                    return
                if line.strip():
                    yield json.loads(line)


def wait_until(done: Callable[[], bool], timeout: float, what: str, period: float = 0.1) -> float:
    started = time.perf_counter()
    while not done():
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"not within {timeout}s: {what}")
        time.sleep(period)
    return time.perf_counter() - started


def spread_over(children: Children, names: list[str], targets: list[str], *, ready: bool) -> Callable[[], bool]:
    """Every root has REPLICAS replicas over min(REPLICAS, targets) children (all Ready, if `ready`)."""
    def done() -> bool:
        now = children.by_root()
        for name in names:
            kids = now.get(name, {})
            if len(kids) != min(REPLICAS, len(targets)) or sum(s for s, _ in kids.values()) != REPLICAS:
                return False
            if ready and sum(r for _, r in kids.values()) != REPLICAS:
                return False
        return True
    return done


def moved_off(children: Children, names: list[str], lost: str, *, ready: bool,
              settled: dict[str, float] | None = None) -> Callable[[], bool]:
    """Every root's REPLICAS are on the other targets (and Ready there, if `ready`); `settled` records
    when each root was first seen so (its own failover time, for the spread between roots)."""
    def done() -> bool:
        now = children.by_root()
        missing = 0
        for name in names:
            elsewhere = [v for t, v in now.get(name, {}).items() if t != lost]
            if sum(s for s, _ in elsewhere) != REPLICAS or (
                    ready and sum(min(s, r) for s, r in elsewhere) != REPLICAS):
                missing += 1
                if settled is None:
                    return False
            elif settled is not None:
                settled.setdefault(name, time.perf_counter())
        return missing == 0
    return done


def create_roots(rest: Rest, names: list[str]) -> float:
    """Create the roots from a few threads (one at a time, the bench's own requests would be the slow part)."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda name: rest.create(DEPLOYMENTS, deployment(name, REPLICAS)), names))
    return time.perf_counter() - started


def spread_phase(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    kcp = KcpServer(tmp / "kcp", free_port())
    kcp.start()
    splitter = None
    children = None
    try:
        rest = Rest(kcp).at("bench-split")
        install_types(rest)
        targets = [f"cluster-{i:02d}" for i in range(args.targets)]
        for target in targets:
            create_sync_target(rest, target)
            set_ready(rest, target, True, allocatable=ALLOCATABLE)
        splitter = SplitterProcess(kcp, tmp / "splitter.log",
                                   ["--no-leader-elect", "--grace-period", str(args.grace_period),
                                    "--workers", str(args.workers), "--qps", "0"]).start()
        children = Children(rest).start()
        names = [f"app-{i:04d}" for i in range(args.deployments)]
        before = reconciles(splitter)
        started = time.perf_counter()
        created = create_roots(rest, names)
        wait_until(spread_over(children, names, targets, ready=False), args.timeout, "every root spread")
        seconds = time.perf_counter() - started
        done = reconciles(splitter) - before
        out: dict[str, Any] = {"seconds": round(seconds, 3), "create_seconds": round(created, 3),
                               "reconciles": int(done), "reconciles_per_second": round(done / seconds, 1)}
        lost = targets[0]
        before = reconciles(splitter)
        started = time.perf_counter()
        set_ready(rest, lost, False, allocatable=ALLOCATABLE)
        wait_until(moved_off(children, names, lost, ready=False), args.timeout + args.grace_period,
                   "replicas reassigned off the lost target")
        seconds = time.perf_counter() - started
        out["reassign"] = {"seconds": round(seconds, 3), "beyond_grace_seconds": round(seconds - args.grace_period, 3),
                           "reconciles": int(reconciles(splitter) - before)}
        return out
    finally:
        if children is not None:
            children.stop()
        if splitter is not None:
            splitter.stop()
        kcp.stop()


def _condition(target: dict[str, Any] | None, kind: str) -> str | None:
    for cond in ((target or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


def fleet_phase(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    kcp = KcpServer(tmp / "fleet-kcp", free_port())
    sim = KcpServer(tmp / "fleet-sim", free_port(), ["--clusters", str(args.fleet_clusters), "--nodes", "2",
                                                     "--ready-delay", "0.2"],
                    command=sim_cluster_command(), env=sim_cluster_env())
    started: list[KcpServer] = []
    controller = ClusterControllerProcess(kcp, tmp / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2",
        # ten syncers in one busy process on two cores miss an 8 s threshold now and then; the
        # lost cluster below is cut off, which makes it NotReady at once whatever the threshold
        "--heartbeat-threshold", "30", "--discovery-interval", "30",
        "--qps", "0"])  # its ten syncers share one client: unthrottled, as the splitter is
    splitter = None
    children = None
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        rest = Rest(kcp).at("bench-fleet")
        status, body = rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    yaml.safe_load(SYNC_TARGET_CRD.read_text()))
        assert status in (201, 409), (status, body)
        eventually(lambda: rest.request("GET", TARGETS)[0] == 200, "SyncTargets served", timeout=60)
        targets = [f"sim-{i}" for i in range(1, args.fleet_clusters + 1)]
        for target in targets:
            rest.create(TARGETS, {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                                  "metadata": {"name": target},
                                  "spec": {"kubeconfig": (sim.root / f"{target}.kubeconfig").read_text()}})
        eventually(lambda: all(_condition(rest.get(f"{TARGETS}/{t}"), "Ready") == "True" for t in targets),
                   "every SyncTarget Ready", timeout=180)
        eventually(lambda: rest.request("GET", DEPLOYMENTS)[0] == 200, "Deployments imported", timeout=120)
        splitter = SplitterProcess(kcp, tmp / "fleet-splitter.log",
                                   ["--no-leader-elect", "--grace-period", str(args.grace_period),
                                    "--workers", str(args.workers), "--qps", "0"]).start()
        children = Children(rest).start()
        names = [f"app-{i:04d}" for i in range(args.fleet_deployments)]
        begun = time.perf_counter()
        create_roots(rest, names)
        wait_until(spread_over(children, names, targets, ready=True), args.timeout, "every replica Ready")
        out: dict[str, Any] = {"clusters": len(targets), "deployments": len(names),
                               "spread_ready_seconds": round(time.perf_counter() - begun, 3)}
        # a settled fleet: only the cluster controller's heartbeats change anything, and they move nothing
        before, idle = reconciles(splitter), time.perf_counter()
        time.sleep(args.idle_seconds)
        out["idle_reconciles_per_second"] = round((reconciles(splitter) - before) / (time.perf_counter() - idle), 1)
        lost = targets[0]
        with refused_port() as port:
            cut_off = (sim.root / f"{lost}.kubeconfig").read_text().replace(f":{sim.port}", f":{port}")
            rest.patch(f"{TARGETS}/{lost}", {"spec": {"kubeconfig": cut_off}})
            cut = time.perf_counter()
            wait_until(lambda: _condition(rest.get(f"{TARGETS}/{lost}"), "Ready") == "False", 60, "NotReady")
            not_ready = time.perf_counter()
            written_at: dict[str, float] = {}
            ready_at: dict[str, float] = {}
            written_check = moved_off(children, names, lost, ready=False, settled=written_at)
            ready_check = moved_off(children, names, lost, ready=True, settled=ready_at)
            wait_until(lambda: written_check() & ready_check(), args.timeout + args.grace_period,
                       "every replica Ready off the lost cluster", period=0.05)
        (tmp / "fleet-splitter.metrics").write_text(splitter.metrics())

        def beyond_grace(at: dict[str, float]) -> dict[str, float]:
            times = sorted(t - not_ready - args.grace_period for t in at.values())
            return {"first": round(times[0], 3), "p50": round(times[len(times) // 2], 3), "last": round(times[-1], 3)}
        out["failover"] = {"not_ready_after_cut_seconds": round(not_ready - cut, 3),
                           "written_beyond_grace_seconds": beyond_grace(written_at),
                           "ready_beyond_grace_seconds": beyond_grace(ready_at)}
        return out
    finally:
        if children is not None:
            children.stop()
        if splitter is not None:
            splitter.stop()
        controller.stop()
        for server in reversed(started):
            server.stop()


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A port bound (so nobody else takes it) but never listening: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "deployments": args.deployments, "targets": args.targets, "replicas": REPLICAS,
                               "workers": args.workers, "grace_period": args.grace_period}
    with contextlib.ExitStack() as stack:
        if args.work_dir:
            tmp = Path(args.work_dir)
            tmp.mkdir(parents=True, exist_ok=True)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-split-")))
        if args.phase in ("all", "spread"):
            results["spread"] = spread_phase(args, tmp)
        if args.phase in ("all", "fleet"):
            results["fleet"] = fleet_phase(args, tmp)
    return results


def summary(results: dict[str, Any]) -> str:
    lines = []
    if "spread" in results:
        spread, reassign = results["spread"], results["spread"]["reassign"]
        lines += [
            f"splitter, API-driven targets: {results['deployments']} roots x {REPLICAS} replicas over "
            f"{results['targets']} targets, {results['workers']} workers",
            f"  spread:   {spread['seconds']} s to place every root ({spread['create_seconds']} s of it creating "
            f"them); {spread['reconciles']} reconciles, {spread['reconciles_per_second']} /s",
            f"  reassign: {reassign['seconds']} s from NotReady to every root's replicas written elsewhere "
            f"(grace {results['grace_period']} s + {reassign['beyond_grace_seconds']} s; {reassign['reconciles']}"
            " reconciles)"]
    if "fleet" in results:
        fleet = results["fleet"]
        failover = fleet["failover"]
        ready, written = failover["ready_beyond_grace_seconds"], failover["written_beyond_grace_seconds"]
        lines += [
            f"splitter, fleet (one kcp-sim-cluster --clusters {fleet['clusters']}, cluster controller in push mode): "
            f"{fleet['deployments']} roots x {REPLICAS} replicas",
            f"  spread:   {fleet['spread_ready_seconds']} s until every replica is Ready; then, settled, "
            f"{fleet['idle_reconciles_per_second']} reconciles/s while the SyncTargets heartbeat",
            f"  failover: grace {results['grace_period']} s + {ready['last']} s from NotReady until every replica is "
            f"Ready on the other clusters (roots Ready there at grace + {ready['first']} s first, "
            f"{ready['p50']} s median; written there at grace + {written['first']} / {written['p50']} / "
            f"{written['last']} s first / median / last; NotReady {failover['not_ready_after_cut_seconds']} "
            "s after the cluster was cut off)"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=("all", "spread", "fleet"), default="all")
    parser.add_argument("--deployments", type=int, default=1000, help="roots in the API-driven spread")
    parser.add_argument("--targets", type=int, default=10, help="SyncTargets in the API-driven spread")
    parser.add_argument("--fleet-deployments", type=int, default=100, help="roots on the simulated fleet")
    parser.add_argument("--fleet-clusters", type=int, default=10, help="simulated clusters in the fleet")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="how long the settled fleet is watched")
    parser.add_argument("--grace-period", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--work-dir", help="keep the processes' data and logs here (default: a temporary directory)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the processes started, as Ctrl-C does
    results = run(args)
    print(summary(results))
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"split-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
