"""Multi-cluster Services through kcp with every real process: kcp, three simulated clusters on one flat network
(apart pod ranges, each the others' `--network-peers`), the cluster controller (push mode) and the splitter.

A Service whose pods run in several clusters gets, in each cluster it is on, EndpointSlices for the others' pods
(kcp's remote endpoints, kept from the syncers' mirrors of the pods). A pod's `wget` of the Service goes over the
simulated data plane (kcp-sim-cluster's api/network.py): an address is answered only by a pod that really runs
there, in whichever cluster, and the answer names the pod and the cluster. So a stale endpoint is a failed
request, and a move that drops traffic shows as failures in the sampler. Every wait is on a condition.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from splitter_fixtures import (
    WITH_ENDPOINT_SLICES,
    SplitterProcess,
    connect_targets,
    logical_cluster,
    pods_in_kcp,
    replicas_of,
)
from syncer_fixtures import Rest, eventually, sim_cluster

from kcp_process import KcpServer, free_port, run_kubectl
from kcpsyncer import downstream_namespace

NETWORKS = {"east": "10.64.0.0/14", "west": "10.68.0.0/14", "north": "10.72.0.0/14"}
WORKSPACE = "mesh"
MAPPED = downstream_namespace(WORKSPACE, "default")


@dataclass
class Mesh:
    kcp: KcpServer
    clusters: dict[str, KcpServer]
    kubeconfig: Path  # the workspace's, through kcp


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    root = tmp_path_factory.mktemp("mesh")
    kcp = KcpServer(root / "kcp", free_port())
    clusters = {name: sim_cluster(root / name, "--name", name, "--pod-network", network, "--network-peers",
                                  ",".join(f"{peer}={root / peer / 'admin.kubeconfig'}" for peer in NETWORKS
                                           if peer != name))
                for name, network in NETWORKS.items()}
    started: list[KcpServer] = []
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8",
        "--discovery-interval", "5"])
    splitter: SplitterProcess | None = None
    try:
        for server in (kcp, *clusters.values()):
            server.start()
            started.append(server)
        controller.start()
        splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"]).start(
            wait_ready=False)
        kubeconfig = logical_cluster(kcp, WORKSPACE)
        connect_targets(kcp, kubeconfig, dict(clusters), WITH_ENDPOINT_SLICES)
        eventually(lambda: run_kubectl(kcp, "get", "endpointslices", kubeconfig=kubeconfig,
                                       check=False).returncode == 0, "EndpointSlices imported into kcp", timeout=90)
        yield Mesh(kcp, clusters, kubeconfig)
        assert splitter.stop() == 0, splitter.log_tail()
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        if splitter is not None:
            splitter.stop()
        controller.stop()
        for server in started:
            server.stop()


def app(name: str, replicas: int, *, placement: str = "", pinned: str = "", pre_stop: int = 0) -> str:
    """A Deployment serving on 8080 (a preStop sleep keeps a going pod serving, the zero-downtime recipe)."""
    container: dict = {"name": "main", "image": "nginx:1", "ports": [{"name": "http", "containerPort": 8080}]}
    if pre_stop:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(pre_stop)]}}}
    meta: dict = {"name": name, "labels": {"app": name}}
    if placement:
        meta["annotations"] = {"splitter.kcp.io/placement": placement}
    if pinned:
        meta["labels"]["workloads.kcp.io/cluster"] = pinned
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                    "template": {"metadata": {"labels": {"app": name}},
                                                 "spec": {"containers": [container]}}}})


def serve(mesh: Mesh, name: str, replicas: int, **options: str | int) -> None:
    run_kubectl(mesh.kcp, "apply", "-f", "-", input_text=app(name, replicas, **options),  # type: ignore[arg-type]
                kubeconfig=mesh.kubeconfig)
    run_kubectl(mesh.kcp, "expose", "deployment", name, "--port=80", "--target-port=http",
                kubeconfig=mesh.kubeconfig)


def running_on(mesh: Mesh, selector: str) -> dict[str, str]:
    """pod -> cluster, for the Running pods kcp shows."""
    return {pod: cluster for pod, (status, cluster) in pods_in_kcp(mesh.kcp, mesh.kubeconfig, selector).items()
            if status == "Running"}


def ready_endpoints(cluster: KcpServer, service: str) -> int:
    """The ready endpoints a cluster routes `service` to: its own EndpointSlices' and kcp's remote ones."""
    listing = Rest(cluster).get(f"/apis/discovery.k8s.io/v1/namespaces/{MAPPED}/endpointslices"
                                f"?labelSelector=kubernetes.io/service-name={service}") or {}
    return sum(1 for s in listing.get("items") or [] for e in s.get("endpoints") or []
               if (e.get("conditions") or {}).get("ready") is not False)


def call(cluster: KcpServer, pod: str, url: str) -> tuple[int, str]:
    """A pod's `wget` of `url`, exec'd on its cluster: (exit code, the answer or the error)."""
    done = run_kubectl(cluster, "exec", "-n", MAPPED, pod, "--", "wget", "-qO-", url, check=False, timeout=30)
    return done.returncode, (done.stdout or done.stderr).strip()


def test_a_call_from_a_pod_in_one_cluster_reaches_endpoints_in_all_three_and_through_kcp_too(mesh: Mesh) -> None:
    serve(mesh, "front", 3)
    pods = eventually(lambda: (p := running_on(mesh, "app=front")) and sorted(p.values()) == sorted(NETWORKS)
                      and p, "one front pod Running on each cluster", timeout=150)
    caller = next(pod for pod, cluster in pods.items() if cluster == "east")
    east = mesh.clusters["east"]
    eventually(lambda: ready_endpoints(east, "front") == 3, "east routes front to all three pods", timeout=90)
    answers = {call(east, caller, "http://front")[1] for _ in range(30)}
    assert answers == {f"pod={pod} cluster={cluster}" for pod, cluster in pods.items()}, answers
    # a user does the same through kcp, without any cluster's kubeconfig
    done = run_kubectl(mesh.kcp, "exec", caller, "--", "wget", "-qO-", "http://front.default.svc.cluster.local",
                       kubeconfig=mesh.kubeconfig)
    assert done.stdout.strip() in answers
    failed = run_kubectl(mesh.kcp, "exec", caller, "--", "wget", "-qO-", "http://nothing-here",
                         kubeconfig=mesh.kubeconfig, check=False)
    assert failed.returncode != 0 and "bad address 'nothing-here'" in failed.stderr


def remote_endpoints(cluster: KcpServer, service: str) -> dict[str, set[str]]:
    """source cluster -> the ready addresses of kcp's EndpointSlices for `service` in a cluster."""
    listing = Rest(cluster).get(f"/apis/discovery.k8s.io/v1/namespaces/{MAPPED}/endpointslices"
                                f"?labelSelector=kubernetes.io/service-name={service},"
                                f"endpointslice.kubernetes.io/managed-by=endpointslice.workload.kcp.io") or {}
    found: dict[str, set[str]] = {}
    for item in listing.get("items") or []:
        source = item["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"]
        found.setdefault(source, set()).update(
            e["addresses"][0] for e in item.get("endpoints") or [] if (e.get("conditions") or {}).get("ready"))
    return found


def pod_ips(cluster: KcpServer, selector: str) -> set[str]:
    listing = Rest(cluster).get(f"/api/v1/namespaces/{MAPPED}/pods?labelSelector={selector}") or {}
    return {p["status"]["podIP"] for p in listing.get("items") or []
            if (p.get("status") or {}).get("podIP") and not p["metadata"].get("deletionTimestamp")}


def test_each_cluster_holds_the_others_endpoints_and_a_service_is_wherever_its_callers_are(mesh: Mesh) -> None:
    clusters = mesh.clusters
    serve(mesh, "web", 3)
    # redis runs on east only (as a guestbook's redis-master would), its callers everywhere
    serve(mesh, "redis", 1, placement="east")

    def spread() -> bool:
        ips = {name: pod_ips(cluster, "app=web") for name, cluster in clusters.items()}
        if sorted(len(v) for v in ips.values()) != [1, 1, 1]:
            return False
        return all(remote_endpoints(cluster, "web") == {o: ips[o] for o in clusters if o != name}
                   for name, cluster in clusters.items())

    eventually(spread, "each cluster holds the other two clusters' web endpoints", timeout=150)
    redis_ip = eventually(lambda: pod_ips(clusters["east"], "app=redis"), "redis running on east", timeout=90)
    for name in ("west", "north"):  # the Service is where its callers are, its endpoint where redis runs
        cluster = clusters[name]
        eventually(lambda cluster=cluster: Rest(cluster).get(f"/api/v1/namespaces/{MAPPED}/services/redis"),
                   f"Service redis on {name}", timeout=90)
        eventually(lambda cluster=cluster: remote_endpoints(cluster, "redis") == {"east": redis_ip},
                   f"redis's endpoint from east on {name}", timeout=90)
    assert remote_endpoints(clusters["east"], "redis") == {}  # east has its own
    # pods come and go: the other clusters' slices follow
    run_kubectl(mesh.kcp, "scale", "deployment/web", "--replicas=6", kubeconfig=mesh.kubeconfig)
    eventually(lambda: remote_endpoints(clusters["north"], "web") == {
                   o: pod_ips(clusters[o], "app=web") for o in ("east", "west")}
               and sum(len(v) for v in remote_endpoints(clusters["north"], "web").values()) == 4,
               "north holds the 4 endpoints of east and west", timeout=150)
    # the Service goes: so do its slices, in kcp and in every cluster
    run_kubectl(mesh.kcp, "delete", "service", "web", kubeconfig=mesh.kubeconfig)
    for name, cluster in clusters.items():
        eventually(lambda cluster=cluster: remote_endpoints(cluster, "web") == {},
                   f"web's remote endpoints gone from {name}", timeout=90)


@dataclass
class Sampler:
    """Calls a Service from one pod every 100 ms (one call at a time) and counts what a cluster routes it to."""

    cluster: KcpServer
    pod: str
    service: str
    results: list[tuple[float, int, str, int]] = field(default_factory=list)  # (time, code, answer, endpoints)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            code, answer = call(self.cluster, self.pod, f"http://{self.service}")
            self.results.append((began, code, answer, ready_endpoints(self.cluster, self.service)))
            self._stop.wait(max(0.0, 0.1 - (time.monotonic() - began)))

    def stop(self) -> list[tuple[float, int, str, int]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        return self.results


def test_moving_a_workload_between_clusters_fails_no_request_and_never_leaves_it_without_endpoints(
        mesh: Mesh) -> None:
    east = mesh.clusters["east"]
    serve(mesh, "caller", 1, pinned="east")
    serve(mesh, "api", 4, placement="east,west", pre_stop=5)
    rest = Rest(mesh.kcp).at(WORKSPACE)
    eventually(lambda: replicas_of(rest, "api") == {"east": 2, "west": 2}
               and sorted(running_on(mesh, "app=api").values()) == ["east", "east", "west", "west"],
               "api 2/2 on east and west", timeout=150)
    caller = eventually(lambda: next(iter(running_on(mesh, "app=caller")), None), "the caller Running", timeout=90)
    eventually(lambda: ready_endpoints(east, "api") == 4, "east routes api to its 2 pods and west's 2", timeout=90)
    sampler = Sampler(east, caller, "api").start()
    try:
        eventually(lambda: len(sampler.results) >= 10, "the sampler calling", timeout=60)
        rest.patch("/apis/apps/v1/namespaces/default/deployments/api",
                   {"metadata": {"annotations": {"splitter.kcp.io/placement": "east,north"}}})
        eventually(lambda: replicas_of(rest, "api") == {"east": 2, "north": 2}
                   and sorted(running_on(mesh, "app=api").values()) == ["east", "east", "north", "north"]
                   and not (Rest(mesh.clusters["west"]).get(
                       f"/api/v1/namespaces/{MAPPED}/pods?labelSelector=app=api") or {}).get("items"),
                   "api moved from west to north", timeout=180)
        eventually(lambda: ready_endpoints(east, "api") == 4 and any("cluster=north" in a for _, c, a, _ in
                                                                    sampler.results[-5:] if c == 0),
                   "east routes api to north's pods", timeout=90)
    finally:
        results = sampler.stop()
    print(f"sampler: {len(results)} calls over {results[-1][0] - results[0][0]:.1f} s, endpoints "
          f"{min(n for *_, n in results)}..{max(n for *_, n in results)}")
    failures = [(round(t - results[0][0], 1), a) for t, c, a, _ in results if c != 0]
    assert not failures, f"{len(failures)} of {len(results)} calls failed during the move: {failures[:5]}"
    assert min(n for *_, n in results) > 0, "a moment with no ready endpoint"
    answered_from = {a.split("cluster=")[-1] for _, _, a, _ in results}
    assert answered_from == {"east", "west", "north"}, answered_from
