"""Benchmark of shared compute (issue 25; not a test): many workspaces on one set of physical clusters.

Everything real: kcp, one `kcp-sim-cluster --clusters C --nodes N` (default 10 clusters of 3 nodes: with 2, the
110 pods a node takes are too few for the ~13 workspaces x 20 pods the Placements' hash puts on the busiest
cluster, and its last pods stay Pending), the cluster controller in push mode (one
syncer per cluster, with `--api-export-workspace compute` publishing `scheduling.kcp.io`) and the splitter. The
admin's part, once: in workspace `compute` the C SyncTargets, one Location selecting them all and the APIExport
`kubernetes`, waited for until it offers Deployments. Then W workspaces (`team-<i>`, flat logical clusters, as
kcp-admin) each bind `kubernetes` and `scheduling.kcp.io`, write a Placement of every namespace on that Location
and create D Deployments of R replicas in `default`, from a few threads over REST.

Figures:
- seconds from the first request of the first workspace until every root Deployment in every workspace has
  `status.availableReplicas == R` (and every share on it too: its `experimental.status.workload.kcp.io/<T>`
  availableReplicas equals its `experimental.spec-diff.workload.kcp.io/<T>` replicas), followed with one wildcard
  list and watch of the bound type (`/clusters/*/apis/apps/v1/deployments:<identityHash>`), not by polling each
  workspace; with when the first, median and last workspace got there;
- one syncer per cluster: the cluster controller's `kcp_syncer_placed_workspaces` per SyncTarget of `compute`
  and its heartbeat series (one per cluster);
- RSS (and CPU seconds) of each process before the workspaces and after all are available, and the cluster
  controller's RSS growth divided by the objects its syncers hold on the clusters at the end (every downstream
  object carrying the syncer owner label, namespaces included: what the engines keep in their caches);
- the cluster controller's open connections to kcp and to the sim (each placed workspace's engine opens its own
  watches), and the watches each server counts (`apiserver_registered_watchers`);
- then (unless `--no-decommission`) decommissioning a cluster carrying many workspaces: the SyncTarget whose
  cluster holds the most roots' shares gets `spec.evictAfter` = now and the splitter moves every workspace's
  namespaces and Deployments off it, make-before-break. Every 100 ms the watch's roots give the lowest available
  replicas / spec.replicas (and how many roots fell below replicas - maxUnavailable, kube's default 25% rounded
  down); evict -> replaced is when the last replacement share (on another target) became available, evict -> empty
  when the physical cluster holds nothing of the syncers' (owner label, `kcp-<hash>` namespaces and their content)
  and the SyncTarget's `status.servedWorkspaces` is 0. Issue 25 wants empty < 60 s after replaced for 50
  Deployments; the cluster is listed every ~0.3 s, and the timeline says which kind of object went last. Beside
  them the SyncTarget's own `status.eviction` (Evicted at), and where the time went: per moved Deployment its
  replacement share seen on the root in kcp, its copy made and complete on its cluster, the share available in kcp,
  its old share removed from the root and that copy gone from the evicted cluster (first look without it); the
  splitter's and syncers' work queues (adds, mean wait and work); each process's CPU during the move.

A root's shares are on the root itself (deployment-splitter's README, "Names"): per SyncTarget T the label
`state.workload.kcp.io/<T>: Sync`, the spec diff giving T's replicas and the status annotation T's syncer writes.
Until splitter-shares the bench followed child Deployments `D--<T>` (labels `splitter.kcp.io/root`,
`workloads.kcp.io/cluster`); now the watch sees only roots and reads their shares. The JSON keys that named children
name shares: `old_child_gone_from_kcp_s` is `old_share_gone_from_kcp_s` (the share removed from the root: label,
diff and status at once); `old_deleting_after_replacement_available_s` and `old_gone_after_deleting_s` are gone (a
share has no deleting phase: no syncer finalizer holds it), `old_copy_gone_from_cluster_s` and
`old_copy_gone_after_removed_s` are new (the evicted cluster's copy, from its listing every ~0.3 s); the other keys
keep their names with "child" read as "share".

Prints a summary and writes bench/results/compute-<time>.json.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import json
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Self

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from daemon_process import ClusterControllerProcess  # noqa: E402
from splitter_fixtures import DEPLOYMENTS, TARGETS, SplitterProcess, available_shares, shares_on  # noqa: E402
from syncer_fixtures import Rest, eventually  # noqa: E402

from kcp_process import KcpServer, ServedFromRoot, free_port, sim_cluster_command, sim_cluster_env  # noqa: E402

COMPUTE = "compute"
EVICTED_PATIENCE = 60.0  # seconds after the cluster is empty to wait for its SyncTarget to say Evicted
CONTROLLER_DIR = REPO / "services/cluster-controller/kcp_cluster_controller"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
LOCATIONS = "/apis/scheduling.kcp.io/v1alpha1/locations"
PLACEMENTS = "/apis/scheduling.kcp.io/v1alpha1/placements"
EXPORTS = "/apis/apis.kcp.io/v1alpha1/apiexports"
BINDINGS = "/apis/apis.kcp.io/v1alpha1/apibindings"
ASSIGNMENT_LABEL = "workloads.kcp.io/cluster"
OWNER_LABEL = "syncer.kcp.io/owner"
POOL = {"bench": "shared-compute"}
# what the engines sync down and keep in their downstream caches, counted on the clusters at the end
DOWNSTREAM = {"namespaces": "/api/v1/namespaces", "deployments": "/apis/apps/v1/deployments",
              "configmaps": "/api/v1/configmaps", "secrets": "/api/v1/secrets",
              "serviceaccounts": "/api/v1/serviceaccounts", "services": "/api/v1/services",
              "replicasets": "/apis/apps/v1/replicasets", "pods": "/api/v1/pods"}


# --- processes: RSS, CPU, connections -------------------------------------------------------------------------


def _status_kib(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """utime + stime, from /proc (clock ticks of 10 ms)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / 100.0


def etcd_child(pid: int) -> int | None:
    """The etcd a server started (kcp-apiserver and kcp-sim-cluster run their own unless given --etcd-servers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        with contextlib.suppress(FileNotFoundError):
            if b"etcd" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0]:
                return int(child)
    return None


def processes(kcp: KcpServer, sim: KcpServer, controller: ClusterControllerProcess,
              splitter: SplitterProcess) -> dict[str, int]:
    assert kcp.process and sim.process and controller.process and splitter.process
    found = {"kcp-apiserver": kcp.process.pid, "cluster-controller": controller.process.pid,
             "splitter": splitter.process.pid, "sim-cluster": sim.process.pid}
    for name, pid in (("kcp-etcd", kcp.process.pid), ("sim-etcd", sim.process.pid)):
        child = etcd_child(pid)
        if child is not None:
            found[name] = child
    return found


def snapshot(pids: dict[str, int]) -> dict[str, dict[str, float]]:
    return {name: {"rss_mib": round(_status_kib(pid) / 1024, 1), "cpu_seconds": cpu_seconds(pid)}
            for name, pid in pids.items()}


def _sockets(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = str(fd.readlink())
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def connections(pid: int, ports: dict[str, int]) -> dict[str, int]:
    """The process's established TCP connections to each of `ports` (by name), from /proc/<pid>/fd and
    /proc/<pid>/net/tcp{,6}: with HTTP/1.1 each open watch holds one."""
    inodes = _sockets(pid)
    counts = dict.fromkeys(ports, 0)
    by_port = {port: name for name, port in ports.items()}
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        for line in path.read_text().splitlines()[1:] if path.exists() else []:
            cols = line.split()
            remote_port, state, inode = int(cols[2].rsplit(":", 1)[1], 16), cols[3], cols[9]
            if state == "01" and inode in inodes and remote_port in by_port:  # 01: ESTABLISHED
                counts[by_port[remote_port]] += 1
    return counts


def metrics_text(server: ServedFromRoot) -> str:
    req = urllib.request.Request(f"{server.url}/metrics", headers={"Authorization": f"Bearer {server.token}"})
    with urllib.request.urlopen(req, context=server.ssl_context(), timeout=30) as resp:
        return str(resp.read().decode())


def metric_sum(text: str, name: str, labels: str = "") -> float:
    """Sum of the samples of `name` whose label set contains `labels` (a substring such as `direction="down"`)."""
    total = 0.0
    for match in re.finditer(rf"^{name}(?:\{{([^}}]*)\}})? (\S+)$", text, re.M):
        if labels in (match.group(1) or ""):
            total += float(match.group(2))
    return total


# --- progress: every Deployment of every workspace, from one wildcard list and watch ---------------------------


class Share(NamedTuple):
    """A root's share on one SyncTarget as the watch last saw it on the root: its spec diff's replicas and the
    availableReplicas of the status annotation its target's syncer wrote."""

    replicas: int
    available: int
    seen_at: float  # perf_counter when the watch first saw the share on the root
    ready_at: float | None  # perf_counter when available first reached replicas (> 0) since it last fell short


class Seen(NamedTuple):
    """One Deployment as the watch last saw it."""

    root: bool  # not pinned (no assignment label): the splitter splits it
    spec: int  # spec.replicas
    available: int  # status.availableReplicas
    shares: dict[str, Share]  # SyncTarget -> its share (state label Sync and a spec diff)
    ready_at: float | None  # perf_counter when available first reached spec (> 0) since it last fell short
    seen_at: float  # perf_counter when the watch first saw it
    deleting_at: float | None  # perf_counter when the watch first saw its deletionTimestamp


class Background(abc.ABC):
    """A daemon thread running `_run` until `stop` (which waits for it when `joins`)."""

    joins = True

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    @abc.abstractmethod
    def _run(self) -> None:
        """The sampler's loop, until `self._stop` is set."""

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self.joins:
            self._thread.join()


class Deployments(Background):
    """(workspace, name) -> what the watch last saw, for every Deployment of the bound type; when each one it saw
    went away (`gone_at`), and when each share it saw on a root was removed from it (`share_gone_at`)."""

    def __init__(self, kcp: KcpServer, path: str) -> None:
        self.kcp, self.path = kcp, path
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], Seen] = {}
        self.gone_at: dict[tuple[str, str], float] = {}
        self.last_seen: dict[tuple[str, str], Seen] = {}  # of those gone
        self.share_gone_at: dict[tuple[str, str, str], float] = {}  # (workspace, name, target) -> when removed
        self.last_share: dict[tuple[str, str, str], Share] = {}  # of those removed
        self.done_at: dict[str, float] = {}  # workspace -> when all its roots were first seen available
        self.relists = 0
        super().__init__("bench-watch")

    joins = False  # its watch may be blocked reading: the daemon thread ends with the bench

    def state(self) -> dict[tuple[str, str], Seen]:
        with self._lock:
            return dict(self._seen)

    @staticmethod
    def _ready_since(ready: bool, before: float | None, now: float) -> float | None:
        return (before if before is not None else now) if ready else None

    def _seen_now(self, key: tuple[str, str], obj: dict[str, Any], before: Seen | None, now: float) -> Seen:
        """What `obj` says now; a share `before` had that it lacks was removed from the root now (under the lock)."""
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        spec = int((obj.get("spec") or {}).get("replicas") or 0)
        available = int((obj.get("status") or {}).get("availableReplicas") or 0)
        ready_at = self._ready_since(spec > 0 and available >= spec, before.ready_at if before else None, now)
        deleting_at = (before.deleting_at if before is not None and before.deleting_at is not None else now) \
            if meta.get("deletionTimestamp") else None
        old = before.shares if before is not None else {}
        up = available_shares(obj)
        shares = {}
        for target, replicas in shares_on(obj).items():
            was = old.get(target)
            shares[target] = Share(replicas, up.get(target, 0), was.seen_at if was is not None else now,
                                   self._ready_since(replicas > 0 and up.get(target, 0) >= replicas,
                                                     was.ready_at if was is not None else None, now))
            self.share_gone_at.pop((*key, target), None)
        self._shares_gone(key, {t: s for t, s in old.items() if t not in shares}, now)
        return Seen(ASSIGNMENT_LABEL not in labels, spec, available, shares, ready_at,
                    before.seen_at if before is not None else now, deleting_at)

    def _shares_gone(self, key: tuple[str, str], gone: dict[str, Share], now: float) -> None:
        for target, share in gone.items():
            self.share_gone_at[(*key, target)], self.last_share[(*key, target)] = now, share

    @staticmethod
    def _key(obj: dict[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return (meta.get("annotations") or {}).get("kcp.io/cluster", ""), meta.get("name", "")

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        key, now = self._key(obj), time.perf_counter()
        with self._lock:
            if kind == "DELETED":
                last = self._seen.pop(key, None)
                if last is not None:
                    self.gone_at[key], self.last_seen[key] = now, last
                    self._shares_gone(key, last.shares, now)
            else:
                self._seen[key] = self._seen_now(key, obj, self._seen.get(key), now)
                self.gone_at.pop(key, None)

    def _relisted(self, items: list[dict[str, Any]]) -> None:
        """The list replaces what was seen at once (a sampler never sees half of it); what it lacks went away."""
        now = time.perf_counter()
        with self._lock:
            fresh = {}
            for item in items:
                key = self._key(item)
                fresh[key] = self._seen_now(key, item, self._seen.get(key), now)
            for key in self._seen.keys() - fresh.keys():
                self.gone_at[key], self.last_seen[key] = now, self._seen[key]
                self._shares_gone(key, self._seen[key].shares, now)
            self._seen = fresh

    def _request(self, query: str, timeout: float) -> Any:
        req = urllib.request.Request(f"{self.kcp.url}{self.path}{query}",
                                     headers={"Authorization": f"Bearer {self.kcp.token}"})
        return urllib.request.urlopen(req, context=self.kcp.ssl_context(), timeout=timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with self._request("", 60) as resp:
                    listed = json.loads(resp.read())
                self.relists += 1
                self._relisted(listed["items"])
                version = listed["metadata"]["resourceVersion"]
                with self._request(f"?watch=1&resourceVersion={version}&timeoutSeconds=600", 120) as resp:
                    for line in resp:
                        if self._stop.is_set():
                            return
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        if event.get("type") == "ERROR":
                            break  # expired: list again
                        if event.get("type") != "BOOKMARK":
                            self._apply(event["type"], event["object"])
            except (OSError, ValueError):
                time.sleep(0.5)


def all_available(deployments: Deployments, workspaces: list[str], per_workspace: int,
                  replicas: int) -> Callable[[], bool]:
    """Every workspace has its roots, each available with `replicas`, with shares each available as its spec diff
    asks (the status annotation its syncer wrote); records when each workspace first got there."""
    def done() -> bool:
        by_ws: dict[str, list[Seen]] = {}
        for (ws, _), value in deployments.state().items():
            by_ws.setdefault(ws, []).append(value)
        now = time.perf_counter()
        for ws in workspaces:
            items = by_ws.get(ws, [])
            roots = [d for d in items if d.root]
            if len(roots) == per_workspace and all(d.available == replicas and d.shares for d in roots) and \
                    all(s.available == s.replicas for d in roots for s in d.shares.values()):
                deployments.done_at.setdefault(ws, now)
        return len(deployments.done_at) == len(workspaces)
    return done


def stuck(deployments: Deployments, workspaces: list[str]) -> str:
    """The workspaces not available yet and the SyncTargets their shares are on (a cluster whose nodes are full
    keeps the pods Pending: Placements do not weigh capacity yet, so raise --nodes)."""
    where: dict[str, set[str]] = {}
    for (ws, _), seen in deployments.state().items():
        if ws not in deployments.done_at:
            where.setdefault(ws, set()).update(seen.shares)
    late = [ws for ws in workspaces if ws not in deployments.done_at]
    return ", ".join(f"{ws} (on {', '.join(sorted(where.get(ws, ()))) or 'nothing yet'})" for ws in late)


def wait_until(done: Callable[[], bool], timeout: float, what: str, period: float = 0.5,
               tick: Callable[[], None] | None = None) -> float:
    started = time.perf_counter()
    while not done():
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"not within {timeout}s: {what}")
        if tick is not None:
            tick()
        time.sleep(period)
    return time.perf_counter() - started


# --- the admin's part and the teams' ----------------------------------------------------------------------------


def compute_workspace(rest: Rest, sim: KcpServer, clusters: int) -> str:
    """SyncTargets, one Location of them all, the `kubernetes` export offering Deployments; its identity hash."""
    for file in ("synctarget-crd.yaml", "location-crd.yaml"):
        status, body = rest.request("POST", CRDS, yaml.safe_load((CONTROLLER_DIR / file).read_text()))
        assert status in (201, 409), (status, body)
    eventually(lambda: rest.request("GET", LOCATIONS)[0] == 200 and rest.request("GET", TARGETS)[0] == 200,
               "SyncTargets and Locations served", timeout=60)
    targets = [f"sim-{i}" for i in range(1, clusters + 1)]
    for target in targets:
        rest.create(TARGETS, {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                              "metadata": {"name": target, "labels": POOL},
                              "spec": {"kubeconfig": (sim.root / f"{target}.kubeconfig").read_text()}})
    rest.create(LOCATIONS, {"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Location",
                            "metadata": {"name": "everywhere", "labels": POOL},
                            "spec": {"instanceSelector": {"matchLabels": POOL}}})
    rest.create(EXPORTS, {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                          "metadata": {"name": "kubernetes"}, "spec": {}})

    def ready(target: str) -> bool:
        conditions = ((rest.get(f"{TARGETS}/{target}") or {}).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    eventually(lambda: all(ready(t) for t in targets), "every SyncTarget Ready", timeout=180)

    def offered() -> str | None:
        export = rest.get(f"{EXPORTS}/kubernetes") or {}
        schemas = (export.get("spec") or {}).get("latestResourceSchemas") or []
        identity = (export.get("status") or {}).get("identityHash")
        return identity if identity and any(s.endswith(".deployments.apps") for s in schemas) else None
    return eventually(offered, "the export offers Deployments", timeout=120)


def binding(export: str) -> dict[str, Any]:
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": export},
            "spec": {"reference": {"export": {"path": COMPUTE, "name": export}}}}


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}}


def retry(call: Callable[[], tuple[int, Any]], what: str, timeout: float = 120.0) -> None:
    """A create retried while its type is not served yet (404) or kcp is briefly unwilling (429, 5xx)."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = call()
        if status in (200, 201, 409):
            return
        if status not in (404, 429, 500, 503, 504) or time.monotonic() > deadline:
            raise SystemExit(f"{what}: {status} {body}")
        time.sleep(0.5)


def workspace(kcp: KcpServer, name: str, deployments: int, replicas: int, clusters_per_namespace: int,
              patience: float) -> float:
    """One team's part, as kcp-admin: two bindings, a Placement, the Deployments; seconds spent. The Placement and
    Deployments are retried until their bindings serve them (under load that takes minutes: `patience`)."""
    started = time.perf_counter()
    rest = Rest(kcp).at(name)
    for export in ("kubernetes", "scheduling.kcp.io"):
        retry(partial(rest.request, "POST", BINDINGS, binding(export)), f"{name}: bind {export}")
    placement = {"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Placement", "metadata": {"name": "all"},
                 "spec": {"locationWorkspace": COMPUTE, "locationSelectors": [{"matchLabels": POOL}],
                          "namespaceSelector": {}, "numberOfClusters": clusters_per_namespace}}
    retry(partial(rest.request, "POST", PLACEMENTS, placement), f"{name}: Placement", patience)
    for i in range(deployments):
        retry(partial(rest.request, "POST", DEPLOYMENTS, deployment(f"app-{i:02d}", replicas)),
              f"{name}: Deployment {i}", patience)
    return time.perf_counter() - started


def downstream_objects(sim: KcpServer) -> dict[str, int]:
    """Objects the syncers own on the clusters (the owner label), over every cluster, by resource."""
    rest = Rest(sim)
    counts = {}
    for resource, path in DOWNSTREAM.items():
        status, body = rest.request("GET", f"/clusters/*{path}?labelSelector={OWNER_LABEL}")
        counts[resource] = len(body["items"]) if status == 200 else -1
    return counts


# --- decommissioning one cluster --------------------------------------------------------------------------------


def carried(state: dict[tuple[str, str], Seen]) -> dict[str, set[tuple[str, str]]]:
    """SyncTarget -> the roots (workspace, name) with a share on it."""
    on: dict[str, set[tuple[str, str]]] = {}
    for key, seen in state.items():
        for target in seen.shares if seen.root else ():
            on.setdefault(target, set()).add(key)
    return on


def replaced(state: dict[tuple[str, str], Seen], moving: set[tuple[str, str]], target: str,
             since: float) -> float | None:
    """When the last replacement share became available, once every root in `moving` is available with no share
    left on `target` (None before that)."""
    last = since
    for key in moving:
        root = state.get(key)
        if root is None or root.available < root.spec or not root.shares or target in root.shares:
            return None
        for share in root.shares.values():
            if share.ready_at is None:
                return None
            last = max(last, share.ready_at)
    return last


def upstream_of(obj: dict[str, Any]) -> tuple[str, str]:
    """The (workspace, name) in kcp a syncer's downstream copy stands for."""
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    return notes.get("syncer.kcp.io/upstream-cluster", ""), notes.get("syncer.kcp.io/upstream-name", "")


def held_on(cluster: Rest, copies: set[tuple[str, str]] | None = None) -> dict[str, int]:
    """What of the syncers' is on one physical cluster, by resource: objects with the owner label or in a namespace
    a syncer made (`kcp-<hash>`, the pods and ReplicaSets the cluster's controllers make there included), and those
    namespaces (`terminating`: how many of them are being finalized). The Deployments' upstream (workspace, name)
    go into `copies` (unchanged if the list failed)."""
    counts = {}
    for resource, path in DOWNSTREAM.items():
        status, body = cluster.request("GET", path)
        if status != 200:
            counts[resource] = -1
            continue
        mine = [o for o in body["items"] if OWNER_LABEL in ((o.get("metadata") or {}).get("labels") or {})
                or str((o.get("metadata") or {}).get("namespace" if resource != "namespaces" else "name") or "")
                .startswith("kcp-")]
        counts[resource] = len(mine)
        if resource == "deployments" and copies is not None:
            copies.clear()
            copies.update(upstream_of(o) for o in mine)
        if resource == "namespaces":
            counts["terminating"] = sum(1 for o in mine if o["metadata"].get("deletionTimestamp"))
    return counts


def served(compute: Rest, target: str) -> tuple[int, str, int | None]:
    """The SyncTarget's servedWorkspaces, and the splitter's word on its eviction (phase, Deployments left)."""
    status = (compute.get(f"{TARGETS}/{target}") or {}).get("status") or {}
    eviction = status.get("eviction") or {}
    return int(status.get("servedWorkspaces") or 0), str(eviction.get("phase") or ""), eviction.get("deployments")


class Availability(Background):
    """Every 100 ms, from the watch: each root's lowest available replicas during the move."""

    def __init__(self, deployments: Deployments, period: float = 0.1) -> None:
        self.deployments, self.period = deployments, period
        self.lowest: dict[tuple[str, str], tuple[int, int]] = {}  # root -> (available, spec) at its lowest ratio
        self.samples = 0
        super().__init__("bench-availability")

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.perf_counter()
            for key, seen in self.deployments.state().items():
                if seen.root and seen.spec > 0:
                    low = self.lowest.get(key)
                    if low is None or seen.available * low[1] < low[0] * seen.spec:
                        self.lowest[key] = (seen.available, seen.spec)
            self.samples += 1
            self._stop.wait(max(0.0, self.period - (time.perf_counter() - began)))

    def below(self) -> list[tuple[str, str]]:
        """Roots that dipped below spec - maxUnavailable (kube's default: 25% of spec, rounded down)."""
        return sorted(key for key, (available, spec) in self.lowest.items() if available < spec - spec // 4)

    def min_ratio(self) -> float:
        return min((a / s for a, s in self.lowest.values()), default=1.0)


def spread(values: list[float]) -> dict[str, float] | None:
    """first / median / last of some seconds."""
    values = sorted(values)
    return {"first": round(values[0], 1), "p50": round(values[len(values) // 2], 1),
            "last": round(values[-1], 1)} if values else None


def queues(text: str) -> dict[str, dict[str, float]]:
    """Per work queue (its `name` label): adds, seconds waited and worked (sums) and items taken, from /metrics."""
    out: dict[str, dict[str, float]] = {}
    for series, field in (("workqueue_adds_total", "adds"), ("workqueue_queue_duration_seconds_sum", "waited"),
                          ("workqueue_queue_duration_seconds_count", "taken"),
                          ("workqueue_work_duration_seconds_sum", "worked")):
        for name, value in re.findall(rf'^{series}\{{name="([^"]+)"\}} (\S+)$', text, re.M):
            out.setdefault(name, {})[field] = float(value)
    return out


def queue_delta(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]],
                group: Callable[[str], str] = lambda name: name) -> dict[str, dict[str, float]]:
    """What each queue (or group of queues) did between two readings: adds, mean wait and mean work (seconds)."""
    sums: dict[str, dict[str, float]] = {}
    for name, now in after.items():
        then = before.get(name, {})
        into = sums.setdefault(group(name), dict.fromkeys(("adds", "waited", "taken", "worked"), 0.0))
        for field in into:
            into[field] += now.get(field, 0.0) - then.get(field, 0.0)
    return {name: {"adds": int(d["adds"]), "mean_wait_s": round(d["waited"] / d["taken"], 2) if d["taken"] else 0.0,
                   "mean_work_s": round(d["worked"] / d["taken"], 3) if d["taken"] else 0.0}
            for name, d in sorted(sums.items()) if d["adds"] or d["taken"]}


class QueuePeaks(Background):
    """Every second: the deepest each of the splitter's work queues got."""

    def __init__(self, splitter: SplitterProcess) -> None:
        self.splitter = splitter
        self.peaks: dict[str, float] = {}
        super().__init__("bench-queues")

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for name, depth in re.findall(r'^workqueue_depth\{name="([^"]+)"\} (\S+)$', self.splitter.metrics(), re.M):
                self.peaks[name] = max(self.peaks.get(name, 0.0), float(depth))


def downstream_times(sim: KcpServer, targets: list[str],
                     since: float) -> dict[tuple[str, str, str], tuple[float | None, float | None]]:
    """(workspace, name, SyncTarget) of each Deployment the syncers hold on those targets' clusters -> seconds after
    `since` (wall clock) when its copy was made there and when its rollout completed there (Progressing
    NewReplicaSetAvailable); the clusters stamp whole seconds. One list per cluster: a simulated cluster's objects
    carry no `kcp.io/cluster`, so a wildcard list would not say whose copy is whose."""
    times: dict[tuple[str, str, str], tuple[float | None, float | None]] = {}
    for target in targets:
        status, body = Rest(sim).at(target).request("GET", f"/apis/apps/v1/deployments?labelSelector={OWNER_LABEL}")
        for item in body["items"] if status == 200 else []:
            meta = item["metadata"]
            done = next((c.get("lastUpdateTime") for c in (item.get("status") or {}).get("conditions") or []
                         if c.get("type") == "Progressing" and c.get("reason") == "NewReplicaSetAvailable"), None)
            made, complete = parse_stamp(meta.get("creationTimestamp")), parse_stamp(done)
            times[(*upstream_of(item), target)] = (round(made - since, 1) if made is not None else None,
                                                    round(complete - since, 1) if complete is not None else None)
    return times


def parse_stamp(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()


def decommission(args: argparse.Namespace, kcp: KcpServer, sim: KcpServer, watcher: Deployments,
                 splitter: SplitterProcess, controller: ClusterControllerProcess,
                 pids: dict[str, int]) -> dict[str, Any]:
    """Evict the SyncTarget carrying the most roots' shares (`spec.evictAfter` now) and follow the move: the
    replacement shares' availability from the watch, the cluster's emptying by listing it, servedWorkspaces; and
    where the time went: each moved root's replacement share seen, available, its old share removed from the root
    and its copy gone from the evicted cluster, the splitter's and the syncers' queues, each process's CPU."""
    compute = Rest(kcp).at(COMPUTE)
    state = watcher.state()
    on = carried(state)
    target = max(sorted(on), key=lambda t: len(on[t]))
    moving = on[target]
    cluster = Rest(sim).at(target)
    out: dict[str, Any] = {"target": target, "deployments_moved": len(moving),
                           "workspaces_moved": len({ws for ws, _ in moving}),
                           "deployments_per_target": {t: len(on[t]) for t in sorted(on)},
                           "served_workspaces_before": served(compute, target)[0]}
    copies: set[tuple[str, str]] = set()  # the roots with a copy on the evicted cluster at the last look
    out["held_before"] = held_on(cluster, copies)
    out["copies_before"] = len(moving & copies)  # the moved roots whose copy the first look found there
    copy_gone_at: dict[tuple[str, str], float] = {}  # moved root -> the first look its copy was not there
    cc_before, split_before = controller.metrics(), queues(splitter.metrics())
    cpu_before = snapshot(pids)
    sampler, peaks = Availability(watcher).start(), QueuePeaks(splitter).start()
    begun, begun_wall = time.perf_counter(), time.time()
    evict_after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    compute.patch(f"{TARGETS}/{target}", {"spec": {"evictAfter": evict_after}})
    timeline: list[dict[str, Any]] = []  # the cluster's emptying, one entry per look
    replaced_at = empty_at = evicted_at = None
    try:  # after empty, up to a minute more for the SyncTarget to say Evicted
        while replaced_at is None or empty_at is None or (
                evicted_at is None and time.perf_counter() - empty_at < EVICTED_PATIENCE):
            if time.perf_counter() - begun > args.timeout:
                out["timed_out"] = True
                break
            if replaced_at is None:
                replaced_at = replaced(watcher.state(), moving, target, begun)
            looked = time.perf_counter()
            held = held_on(cluster, copies)
            listed = time.perf_counter()
            if held.get("deployments", -1) >= 0:
                for key in moving - copies:
                    copy_gone_at.setdefault(key, looked)
            serving, phase, left = served(compute, target)
            timeline.append({"at": round(looked - begun, 2), "served_workspaces": serving, **held,
                             "eviction_phase": phase, "eviction_deployments": left,
                             "list_s": round(listed - looked, 2), "get_s": round(time.perf_counter() - listed, 2)})
            if empty_at is None and serving == 0 and not any(held.values()):
                empty_at = time.perf_counter()
            if evicted_at is None and phase == "Evicted":
                evicted_at = time.perf_counter()
            time.sleep(0.2)
    finally:
        sampler.stop()
        peaks.stop()
    cpu_after, cc_after = snapshot(pids), controller.metrics()
    state = watcher.state()
    down = downstream_times(sim, sorted({t for key in moving if key in state for t in state[key].shares}),
                            begun_wall)

    def after(at: float | None) -> float | None:
        return round(at - begun, 1) if at is not None else None
    # each moved root: its replacement share seen on the root in kcp, its copy made on that share's cluster and
    # complete there, the share available in kcp (the status annotation); its old share removed from the root (the
    # splitter's break: label, diff and status at once) and its copy gone from the evicted cluster (that syncer)
    roots: dict[str, dict[str, float | None]] = {}
    for ws, root in sorted(moving):
        seen = state.get((ws, root))
        new = [(t, s) for t, s in (seen.shares.items() if seen is not None else ()) if t != target]
        row: dict[str, float | None] = {}
        if new:  # with numberOfClusters > 1, the share that came last
            to, share = max(new, key=lambda ts: ts[1].seen_at)
            made, complete = down.get((ws, root, to), (None, None))
            row = {"replacement_seen": after(share.seen_at), "replacement_made_downstream": made,
                   "replacement_complete_downstream": complete, "replacement_available": after(share.ready_at)}
        row["old_gone"] = after(watcher.share_gone_at.get((ws, root, target)))
        row["old_copy_gone"] = after(copy_gone_at.get((ws, root)))
        roots[f"{ws}/{root}"] = row

    def column(field: str) -> list[float]:
        return [v for r in roots.values() if (v := r.get(field)) is not None]

    def gaps(later: str, earlier: str) -> list[float]:  # per root, where both are known
        return [b - a for r in roots.values() if (a := r.get(earlier)) is not None and (b := r.get(later)) is not None]

    def zero_at(field: str) -> float | None:  # when the timeline first shows none of `field` left
        return next((look["at"] for look in timeline if look.get(field) == 0), None)
    timeline = [look for look in timeline if empty_at is None or look["at"] <= empty_at - begun + 1 or
                look is timeline[-1]]  # the looks for Evicted after empty say nothing new
    out.update({
        "evict_after": evict_after,
        "evict_to_replaced_s": round(replaced_at - begun, 1) if replaced_at else None,
        "evict_to_empty_s": round(empty_at - begun, 1) if empty_at else None,
        "empty_after_replaced_s": round(empty_at - replaced_at, 1) if replaced_at and empty_at else None,
        # the splitter's word (status.eviction.phase): Evicted once nothing is assigned and no workspace is served
        "evict_to_evicted_phase_s": round(evicted_at - begun, 1) if evicted_at else None,
        "eviction_phases": list(dict.fromkeys(look["eviction_phase"] for look in timeline if look["eviction_phase"])),
        "replacement_seen_s": spread(column("replacement_seen")),
        "replacement_available_s": spread(column("replacement_available")),
        "old_share_gone_from_kcp_s": spread(column("old_gone")),
        "old_copy_gone_from_cluster_s": spread(column("old_copy_gone")),
        # per root: replacement available after it appeared; old share removed after its replacement was available
        "replacement_made_available_in_s": spread(gaps("replacement_available", "replacement_seen")),
        "old_gone_after_replacement_available_s": spread(gaps("old_gone", "replacement_available")),
        # the replacement's way: synced down after the splitter made it, complete on the cluster, its status up
        "made_downstream_after_seen_s": spread(gaps("replacement_made_downstream", "replacement_seen")),
        "complete_downstream_after_made_s": spread(gaps("replacement_complete_downstream",
                                                        "replacement_made_downstream")),
        "available_in_kcp_after_complete_s": spread(gaps("replacement_available", "replacement_complete_downstream")),
        # the old share's way: the splitter removes it from the root once the replacement is available, then the
        # evicted target's syncer deletes its copy (the cluster listed every ~0.3 s)
        "old_copy_gone_after_removed_s": spread(gaps("old_copy_gone", "old_gone")),
        "cluster_zero_at_s": {field: zero_at(field) for field in ("deployments", "replicasets", "pods", "configmaps",
                                                                  "serviceaccounts", "namespaces",
                                                                  "served_workspaces")},
        "cluster_look_seconds": spread([look["list_s"] + look["get_s"] for look in timeline]),
        "min_available_ratio": round(sampler.min_ratio(), 3),
        "roots_below_max_unavailable": len(sampler.below()),
        "roots_below_example": [f"{ws}/{name}" for ws, name in sampler.below()[:5]],
        "availability_samples": sampler.samples,
        "synced_down_writes": int(metric_sum(cc_after, "kcp_syncer_synced_objects_total", 'direction="down"')
                                  - metric_sum(cc_before, "kcp_syncer_synced_objects_total", 'direction="down"')),
        "syncer_errors": int(metric_sum(cc_after, "kcp_syncer_errors_total")
                             - metric_sum(cc_before, "kcp_syncer_errors_total")),
        "splitter_queues": queue_delta(split_before, queues(splitter.metrics())),
        "splitter_queue_peaks": peaks.peaks,
        # the syncers' queues, one per (workspace, SyncTarget): those of the evicted target and all the others
        "syncer_queues": queue_delta(queues(cc_before), queues(cc_after), lambda name: (
            "evicted target" if name.endswith(f":{target}") else "other targets") if name.startswith("syncer:")
            else name),
        "cpu_seconds": {name: round(cpu_after[name]["cpu_seconds"] - cpu_before[name]["cpu_seconds"], 1)
                        for name in pids},
        "held_after": timeline[-1] if timeline else None,
        "timeline": timeline,
        "roots": roots,
    })
    return out


# --- the run ----------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    kcp = KcpServer(tmp / "kcp", free_port())
    sim = KcpServer(tmp / "sim", free_port(), ["--clusters", str(args.clusters), "--nodes", str(args.nodes),
                                                "--ready-delay", "0.2"],
                    command=sim_cluster_command(), env=sim_cluster_env())
    controller = ClusterControllerProcess(kcp, tmp / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2",
        "--heartbeat-threshold", "30", "--discovery-interval", "30", "--api-export-workspace", COMPUTE,
        "--qps", "0"])
    splitter = SplitterProcess(kcp, tmp / "splitter.log", ["--no-leader-elect", "--qps", "0"])
    started: list[Any] = []
    watcher = None
    out: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "workspaces": args.workspaces, "deployments_per_workspace": args.deployments,
                           "replicas": args.replicas, "clusters": args.clusters, "nodes_per_cluster": args.nodes,
                           "clusters_per_namespace": args.clusters_per_namespace, "concurrency": args.concurrency}
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        started.append(controller)
        splitter.start()
        started.append(splitter)
        identity = compute_workspace(Rest(kcp).at(COMPUTE), sim, args.clusters)
        pids = processes(kcp, sim, controller, splitter)
        time.sleep(args.settle_seconds)  # what the processes hold once idle, not mid-start
        before = snapshot(pids)
        links_before = connections(pids["cluster-controller"], {"kcp": kcp.port, "sim": sim.port})
        watchers_before = {"kcp": int(metric_sum(metrics_text(kcp), "apiserver_registered_watchers")),
                           "sim": int(metric_sum(metrics_text(sim), "apiserver_registered_watchers"))}
        watcher = Deployments(kcp, f"/clusters/*/apis/apps/v1/deployments:{identity}").start()
        names = [f"team-{i:03d}" for i in range(args.workspaces)]
        peaks = {"controller_workqueue_depth": 0.0, "splitter_workqueue_depth": 0.0}
        last_peek = [0.0]

        def peek() -> None:  # the queues' depth every few seconds: where the work waits
            if time.perf_counter() - last_peek[0] < 5:
                return
            last_peek[0] = time.perf_counter()
            for key, process in (("controller_workqueue_depth", controller), ("splitter_workqueue_depth", splitter)):
                peaks[key] = max(peaks[key], metric_sum(process.metrics(), "workqueue_depth"))

        begun = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            spent = list(pool.map(lambda ws: workspace(kcp, ws, args.deployments, args.replicas,
                                                       args.clusters_per_namespace, args.timeout), names))
        created = time.perf_counter() - begun
        try:
            wait_until(all_available(watcher, names, args.deployments, args.replicas), args.timeout,
                       "every Deployment available", tick=peek)
        except SystemExit as exc:
            raise SystemExit(f"{exc}; not available: {stuck(watcher, names)}") from None
        total = time.perf_counter() - begun
        finished = sorted(t - begun for t in watcher.done_at.values())
        after = snapshot(pids)
        cc_metrics = controller.metrics()
        (tmp / "controller.metrics").write_text(cc_metrics)
        placed = {m[0]: float(m[1]) for m in re.findall(
            rf'kcp_syncer_placed_workspaces\{{logical_cluster="{COMPUTE}",sync_target="([^"]+)"\}} (\S+)', cc_metrics)}
        beats = re.findall(r'kcp_syncer_last_heartbeat_timestamp_seconds\{logical_cluster="([^"]+)",'
                           r'sync_target="([^"]+)"', cc_metrics)
        down = downstream_objects(sim)
        held = sum(v for v in down.values() if v > 0)
        synced = max(0, down["deployments"]) + max(0, down["namespaces"])  # what the engines wrote down and keep
        grown = after["cluster-controller"]["rss_mib"] - before["cluster-controller"]["rss_mib"]
        kcp_text, sim_text = metrics_text(kcp), metrics_text(sim)
        out.update({
            "seconds_to_all_available": round(total, 1),
            "create_seconds": round(created, 1),
            "workspace_create_seconds_p50": round(statistics.median(spent), 2),
            "workspace_available_seconds": {"first": round(finished[0], 1),
                                            "p50": round(finished[len(finished) // 2], 1),
                                            "last": round(finished[-1], 1)},
            "deployments_seen": len(watcher.state()), "watch_relists": watcher.relists,
            "placed_workspaces": placed, "placed_workspaces_sum": sum(placed.values()),
            "heartbeat_series": len(beats),
            "synced_down_writes": int(metric_sum(cc_metrics, "kcp_syncer_synced_objects_total", 'direction="down"')),
            "synced_up_writes": int(metric_sum(cc_metrics, "kcp_syncer_synced_objects_total", 'direction="up"')),
            "syncer_errors": int(metric_sum(cc_metrics, "kcp_syncer_errors_total")),
            "downstream_objects": down, "downstream_objects_total": held,
            "controller_rss_growth_mib": round(grown, 1),
            "controller_rss_per_placed_workspace_mib": round(grown / len(names), 2),
            "controller_rss_per_synced_down_object_kib": round(grown * 1024 / synced, 1) if synced else None,
            "controller_rss_per_downstream_object_kib": round(grown * 1024 / held, 1) if held else None,
            "rss_before": before, "rss_after": after,
            "cpu_seconds_during": {name: round(after[name]["cpu_seconds"] - before[name]["cpu_seconds"], 1)
                                   for name in pids},
            "controller_connections_before": links_before,
            "controller_connections": connections(pids["cluster-controller"], {"kcp": kcp.port, "sim": sim.port}),
            "registered_watchers_before": watchers_before,
            "registered_watchers": {"kcp": int(metric_sum(kcp_text, "apiserver_registered_watchers")),
                                    "sim": int(metric_sum(sim_text, "apiserver_registered_watchers"))},
            **{f"peak_{k}": v for k, v in peaks.items()},
        })
        # the bench's own wildcard watch is one of kcp's
        out["watches_per_placed_workspace"] = {
            side: round((out["registered_watchers"][side] - watchers_before[side] - (side == "kcp")) / len(names), 1)
            for side in ("kcp", "sim")}
        out["problems"] = [problem for problem, bad in (
            (f"{len(beats)} heartbeat series, not {args.clusters}", len(beats) != args.clusters),
            (f"{out['placed_workspaces_sum']:.0f} placed workspaces, not {len(names) * args.clusters_per_namespace}",
             out["placed_workspaces_sum"] != len(names) * args.clusters_per_namespace),
            (f"{out['syncer_errors']} syncer errors", out["syncer_errors"] > 0)) if bad]
        if args.decommission:
            gone = out["decommission"] = decommission(args, kcp, sim, watcher, splitter, controller, pids)
            out["problems"] += [problem for problem, bad in (
                (f"only {gone['deployments_moved']} Deployments on the busiest cluster, not "
                 f"{args.decommission_deployments}: raise --workspaces or lower --clusters",
                 gone["deployments_moved"] < args.decommission_deployments),
                (f"decommissioning {gone['target']} did not finish within {args.timeout}s",
                 bool(gone.get("timed_out"))),
                (f"{gone['syncer_errors']} syncer errors while decommissioning", gone["syncer_errors"] > 0),
                (f"{gone['roots_below_max_unavailable']} Deployments below replicas - maxUnavailable while moving",
                 gone["roots_below_max_unavailable"] > 0),
                (f"the cluster emptied {gone['empty_after_replaced_s']} s after the last replacement, not < 60 s",
                 (gone["empty_after_replaced_s"] or 0) >= 60)) if bad]
        return out
    finally:
        if watcher is not None:
            watcher.stop()
        for process in reversed(started):
            process.stop()


def summary(r: dict[str, Any]) -> str:
    procs = ", ".join(f"{name} {r['rss_before'][name]['rss_mib']} -> {r['rss_after'][name]['rss_mib']} MiB "
                      f"({r['cpu_seconds_during'][name]} cpu-s)" for name in r["rss_after"])
    ws = r["workspace_available_seconds"]
    down = ", ".join(f"{k} {v}" for k, v in r["downstream_objects"].items())
    links, before_links = r["controller_connections"], r["controller_connections_before"]
    before_w, per = r["registered_watchers_before"], r["watches_per_placed_workspace"]
    return "\n".join([
        f"shared compute: {r['workspaces']} workspaces x {r['deployments_per_workspace']} Deployments x "
        f"{r['replicas']} replicas on {r['clusters']} sim clusters of {r['nodes_per_cluster']} nodes "
        f"(numberOfClusters {r['clusters_per_namespace']}, "
        f"{r['concurrency']} creating threads)",
        f"  all available: {r['seconds_to_all_available']} s from the first request ({r['create_seconds']} s of it "
        f"creating; a workspace's requests {r['workspace_create_seconds_p50']} s median); workspaces available "
        f"first / median / last at {ws['first']} / {ws['p50']} / {ws['last']} s",
        f"  one syncer per cluster: {r['heartbeat_series']} heartbeat series; placed workspaces per SyncTarget "
        f"{sorted(int(v) for v in r['placed_workspaces'].values())} (sum {int(r['placed_workspaces_sum'])})",
        f"  synced: {r['synced_down_writes']} writes down, {r['synced_up_writes']} up, {r['syncer_errors']} errors; "
        f"held downstream (owner label): {down} = {r['downstream_objects_total']}",
        f"  cluster controller: +{r['controller_rss_growth_mib']} MiB RSS = "
        f"{r['controller_rss_per_placed_workspace_mib']} MiB per placed workspace, "
        f"{r['controller_rss_per_synced_down_object_kib']} KiB per object synced down (Deployments + namespaces), "
        f"{r['controller_rss_per_downstream_object_kib']} KiB per object held downstream (owner label)",
        f"  watches: the cluster controller's connections to kcp {before_links['kcp']} -> {links['kcp']}, to the "
        f"sim {before_links['sim']} -> {links['sim']}; watches registered on kcp {before_w['kcp']} -> "
        f"{r['registered_watchers']['kcp']}, on the sim {before_w['sim']} -> {r['registered_watchers']['sim']} "
        f"({per['kcp']} on kcp and {per['sim']} on the sim per placed workspace); peak work-queue depth "
        f"{r['peak_controller_workqueue_depth']:.0f} (splitter {r['peak_splitter_workqueue_depth']:.0f})",
        f"  RSS before -> after (CPU during): {procs}",
        *decommission_summary(r.get("decommission")),
        *(f"  PROBLEM: {problem}" for problem in r["problems"])])


def decommission_summary(d: dict[str, Any] | None) -> list[str]:
    if d is None:
        return []

    def span(key: str) -> str:
        v = d[key]
        return f"{v['first']} / {v['p50']} / {v['last']} s" if v else "none"
    zero = ", ".join(f"{k} {v}" for k, v in d["cluster_zero_at_s"].items())
    before = ", ".join(f"{k} {v}" for k, v in d["held_before"].items())
    peaks = d["splitter_queue_peaks"]
    queues = ", ".join(f"{name} {q['adds']} ({q['mean_wait_s']} / {q['mean_work_s']}, {peaks.get(name, 0):.0f})"
                       for name, q in d["splitter_queues"].items())
    syncers = ", ".join(f"{name} {q['adds']} adds ({q['mean_wait_s']} / {q['mean_work_s']} s)"
                        for name, q in d["syncer_queues"].items())
    cpu = ", ".join(f"{name} {v}" for name, v in d["cpu_seconds"].items())
    return [
        f"  decommission: evictAfter now on {d['target']} (of Deployments per SyncTarget "
        f"{sorted(d['deployments_per_target'].values())}): {d['deployments_moved']} Deployments of "
        f"{d['workspaces_moved']} workspaces moved ({d['served_workspaces_before']} served workspaces; held there: "
        f"{before})",
        f"    evict -> replaced {d['evict_to_replaced_s']} s, evict -> empty {d['evict_to_empty_s']} s, "
        f"empty after replaced {d['empty_after_replaced_s']} s (target < 60 s); the SyncTarget said "
        f"{' -> '.join(d['eviction_phases']) or 'nothing'} (status.eviction), Evicted at "
        f"{d['evict_to_evicted_phase_s']} s",
        f"    availability every 100 ms ({d['availability_samples']} samples): min available / replicas "
        f"{d['min_available_ratio']}, {d['roots_below_max_unavailable']} Deployments below replicas - "
        f"maxUnavailable",
        f"    where the time goes (s after evict, first / median / last): replacement share on the root "
        f"{span('replacement_seen_s')}, available {span('replacement_available_s')}, old share removed from the "
        f"root {span('old_share_gone_from_kcp_s')}, its copy gone from the cluster "
        f"{span('old_copy_gone_from_cluster_s')}; per Deployment: its replacement available after it appeared "
        f"{span('replacement_made_available_in_s')}, its old share removed after the replacement was available "
        f"{span('old_gone_after_replacement_available_s')}",
        f"    a replacement's way (s): synced down after it appeared {span('made_downstream_after_seen_s')}, rollout "
        f"complete on its cluster after that {span('complete_downstream_after_made_s')} (whole-second stamps), "
        f"available in kcp after that {span('available_in_kcp_after_complete_s')}; the old share's copy gone "
        f"from the cluster after the share was removed {span('old_copy_gone_after_removed_s')}",
        f"    the cluster listed every {span('cluster_look_seconds')} (+0.2 s): none left at {zero}; "
        f"{d['synced_down_writes']} writes down, {d['syncer_errors']} syncer errors",
        f"    splitter queues (adds, mean wait / work s, peak depth): {queues}",
        f"    syncer queues: {syncers}",
        f"    CPU seconds during the move ({d['evict_to_empty_s']} s): {cpu}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=100)
    parser.add_argument("--deployments", type=int, default=10, help="Deployments per workspace")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--clusters", type=int, default=10, help="simulated clusters (SyncTargets)")
    parser.add_argument("--nodes", type=int, default=3,
                        help="nodes per simulated cluster, 110 pods each: Placements spread workspaces by hash, not "
                             "by capacity, so at the default sizes one cluster gets up to ~13 workspaces (260 pods)")
    parser.add_argument("--clusters-per-namespace", type=int, default=1, help="the Placements' numberOfClusters")
    parser.add_argument("--concurrency", type=int, default=8, help="workspaces created at a time")
    parser.add_argument("--settle-seconds", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1200.0)
    parser.add_argument("--no-decommission", dest="decommission", action="store_false",
                        help="skip the last phase: evicting the SyncTarget that carries the most Deployments")
    parser.add_argument("--decommission-deployments", type=int, default=50,
                        help="the evicted cluster should carry at least this many Deployments (a PROBLEM if fewer: "
                             "at the default sizes the busiest of 10 clusters carries ~100)")
    parser.add_argument("--work-dir", help="keep the processes' data and logs here (default: a temporary directory)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the processes started, as Ctrl-C does
    with contextlib.ExitStack() as stack:
        if args.work_dir:
            tmp = Path(args.work_dir)
            tmp.mkdir(parents=True, exist_ok=True)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-compute-")))
        results = run(args, tmp)
    print(summary(results))
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"compute-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
