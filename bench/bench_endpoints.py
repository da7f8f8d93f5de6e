"""Benchmark of multi-cluster Services (issue 26; not a test): how fast a pod's endpoint reaches another cluster.

Everything real: kcp, three `kcp-sim-cluster`s on one simulated flat network (`one`, `two`, `three`: apart pod
ranges, each the others' `--network-peers`), the cluster controller in push mode (a syncer per cluster) and the
deployment splitter. In one workspace: a Deployment `callee` pinned to `one` behind a Service `callee`, and a
Deployment `caller` pinned to `three`, so the Service is on both and `three` holds kcp's remote EndpointSlice of
`one`'s pods (deployment-splitter's README, "Multi-cluster Services").

The load: `callee` scaled up by `--step` replicas every `--period` seconds (default 10 every 0.1 s: 100 pod
changes per second) to `--pods`, then down to 0 at the same rate. Two watches in this process, so one clock:
`one`'s pods (when each address first shows Ready) and `three`'s EndpointSlices (when each address first shows
there ready; when it leaves, or turns not ready). Figures, in seconds:
- appear: pod Ready on `one` -> its endpoint ready in `three`'s slice (issue 26 wants p99 < 2 s at 100 changes/s);
- leave: pod going on `one` (deletionTimestamp, or gone) -> its endpoint not ready or gone in `three`'s slice;
- CPU seconds of each process over the load.

Prints a summary and writes bench/results/endpoints-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from daemon_process import ClusterControllerProcess  # noqa: E402
from splitter_fixtures import WITH_ENDPOINT_SLICES, SplitterProcess, connect_targets, logical_cluster  # noqa: E402
from syncer_fixtures import Rest, eventually  # noqa: E402

from kcp_process import KcpServer, ServedFromRoot, free_port, sim_cluster_command, sim_cluster_env  # noqa: E402
from kcpsyncer import downstream_namespace  # noqa: E402

NETWORKS = {"one": "10.64.0.0/14", "two": "10.68.0.0/14", "three": "10.72.0.0/14"}
WORKSPACE = "bench"
MAPPED = downstream_namespace(WORKSPACE, "default")
MANAGED_BY = "endpointslice.kubernetes.io/managed-by=endpointslice.workload.kcp.io"


class Watch(threading.Thread):
    """A list and watch of one path on one server; `on(kind, obj, now)` for each object (a list's as MODIFIED)."""

    def __init__(self, server: ServedFromRoot, path: str, on: Callable[[str, dict[str, Any], float], None]) -> None:
        super().__init__(name=f"watch {path}", daemon=True)
        self.server, self.path, self.on = server, path, on
        self.stop = threading.Event()

    def _open(self, query: str, timeout: float) -> Any:
        sep = "&" if "?" in self.path else "?"
        req = urllib.request.Request(f"{self.server.url}{self.path}{sep}{query}",
                                     headers={"Authorization": f"Bearer {self.server.token}"})
        return urllib.request.urlopen(req, context=self.server.ssl_context(), timeout=timeout)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with self._open("limit=0", 60) as resp:
                    listed = json.loads(resp.read())
                now = time.perf_counter()
                for item in listed.get("items") or []:
                    self.on("MODIFIED", item, now)
                version = listed["metadata"]["resourceVersion"]
                with self._open(f"watch=1&resourceVersion={version}&timeoutSeconds=600", 120) as resp:
                    for line in resp:
                        if self.stop.is_set():
                            return
                        event = json.loads(line) if line.strip() else {}
                        if event.get("type") == "ERROR":
                            break
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            self.on(event["type"], event["object"], time.perf_counter())
            except (OSError, ValueError):
                time.sleep(0.2)


class Times:
    """When each address did what, first: Ready on `one`, going on `one`, ready in `three`'s slice, left it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready: dict[str, float] = {}
        self.going: dict[str, float] = {}
        self.listed: dict[str, float] = {}
        self.unlisted: dict[str, float] = {}
        self._in_slice: set[str] = set()

    def pod(self, kind: str, pod: dict[str, Any], now: float) -> None:
        status = pod.get("status") or {}
        ip = status.get("podIP")
        if not ip:
            return
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        with self.lock:
            if kind == "DELETED" or (pod.get("metadata") or {}).get("deletionTimestamp"):
                if ip in self.ready:
                    self.going.setdefault(ip, now)
            elif ready:
                self.ready.setdefault(ip, now)

    def endpoint_slice(self, kind: str, slice_: dict[str, Any], now: float) -> None:
        ready = set() if kind == "DELETED" else {
            e["addresses"][0] for e in slice_.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")}
        with self.lock:
            for ip in ready - self._in_slice:
                self.listed.setdefault(ip, now)
            for ip in self._in_slice - ready:
                if ip in self.listed:
                    self.unlisted.setdefault(ip, now)
            self._in_slice = ready


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"n": len(values), "p50": round(statistics.median(ordered), 3), "p90": round(pick(0.9), 3),
            "p99": round(pick(0.99), 3), "max": round(ordered[-1], 3)}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def deployment(name: str, replicas: int, pinned: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name, "workloads.kcp.io/cluster": pinned}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx:1",
                                                           "ports": [{"name": "http", "containerPort": 8080}]}]}}}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=600)
    parser.add_argument("--step", type=int, default=10)
    parser.add_argument("--period", type=float, default=0.1)
    parser.add_argument("--nodes", type=int, default=8)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-endpoints-"))
    kcp = KcpServer(root / "kcp", free_port())
    sims = {name: KcpServer(root / name, free_port(),
                            ["--name", name, "--nodes", str(args.nodes), "--ready-delay", "0.2", "--pod-network",
                             network, "--network-peers", ",".join(f"{p}={root / p / 'admin.kubeconfig'}"
                                                                  for p in NETWORKS if p != name)],
                            command=sim_cluster_command(), env=sim_cluster_env())
            for name, network in NETWORKS.items()}
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8"])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect"])
    started: list[Any] = []
    watches: list[Watch] = []
    try:
        for server in (kcp, *sims.values()):
            server.start()
            started.append(server)
        controller.start()
        started.append(controller)
        splitter.start(wait_ready=False)
        started.append(splitter)
        kubeconfig = logical_cluster(kcp, WORKSPACE)
        connect_targets(kcp, kubeconfig, sims, WITH_ENDPOINT_SLICES)
        rest = Rest(kcp).at(WORKSPACE)
        eventually(lambda: rest.get("/apis/discovery.k8s.io/v1/endpointslices") is not None,
                   "EndpointSlices imported into kcp", timeout=120)
        rest.create("/apis/apps/v1/namespaces/default/deployments", deployment("caller", 1, "three"))
        rest.create("/apis/apps/v1/namespaces/default/deployments", deployment("callee", 1, "one"))
        rest.create("/api/v1/namespaces/default/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "callee"},
            "spec": {"selector": {"app": "callee"}, "ports": [{"port": 80, "targetPort": "http"}]}})
        times = Times()
        watches = [Watch(sims["one"], f"/api/v1/namespaces/{MAPPED}/pods?labelSelector=app%3Dcallee", times.pod),
                   Watch(sims["three"], f"/apis/discovery.k8s.io/v1/namespaces/{MAPPED}/endpointslices"
                                        f"?labelSelector={MANAGED_BY}", times.endpoint_slice)]
        for watch in watches:
            watch.start()
        eventually(lambda: len(times.listed) >= 1, "the first endpoint of one on three", timeout=180)
        pids = {name: proc.process.pid for name, proc in (("kcp", kcp), ("controller (syncers)", controller),
                                                          ("splitter", splitter), *sims.items())
                if proc.process is not None}
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        began = time.perf_counter()
        path = "/apis/apps/v1/namespaces/default/deployments/callee"
        for phase in (range(args.step, args.pods + 1, args.step), range(args.pods - args.step, -1, -args.step)):
            start = time.perf_counter()
            for step, replicas in enumerate(phase):  # one write per period: `step` pods come (or go) each time
                time.sleep(max(0.0, start + step * args.period - time.perf_counter()))
                rest.patch(path, {"spec": {"replicas": replicas}})
            if phase.step > 0:
                eventually(lambda: len(times.ready) >= args.pods, "every pod Ready on one", timeout=300)
        load_s = time.perf_counter() - began
        eventually(lambda: set(times.ready) <= set(times.unlisted) | {ip for ip in times.ready
                                                                      if ip not in times.listed},
                   "every endpoint gone from three", timeout=300)
        cpu = {name: round(cpu_seconds(pid) - cpu_before[name], 1) for name, pid in pids.items()}
    finally:
        for watch in watches:
            watch.stop.set()
        for proc in reversed(started):
            proc.stop()
    appear = [times.listed[ip] - at for ip, at in times.ready.items() if ip in times.listed]
    leave = [times.unlisted[ip] - at for ip, at in times.going.items() if ip in times.unlisted]
    result = {"pods": args.pods, "changes_per_s": round(args.step / args.period), "load_s": round(load_s, 1),
              "appear_s": percentiles(appear), "leave_s": percentiles(leave),
              "never_listed": len([ip for ip in times.ready if ip not in times.listed]), "cpu_s": cpu}
    out = REPO / "bench" / "results" / f"endpoints-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"endpoint propagation, pod on one -> EndpointSlice on three, {result['changes_per_s']} pod changes/s, "
          f"{args.pods} pods up then down in {result['load_s']} s:")
    for name in ("appear_s", "leave_s"):
        print(f"  {name[:-2]:7} {result[name]}")
    print(f"  pods never listed on three: {result['never_listed']}")
    print(f"  CPU seconds: {cpu}")
    print(f"  -> {out}")


if __name__ == "__main__":
    main()
