"""A logical cluster whose workloads run on SyncTargets and come back mirrored into kcp (pods, claims, events,
ReplicaSets): the tenant and the one-cluster push-mode fleet the debug-through-kcp suites share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from daemon_process import ClusterControllerProcess
from syncer_fixtures import eventually, sim_cluster

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl

CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"


def tenant(kcp: KcpServer, name: str, physical: dict[str, KcpServer]) -> Path:
    """Logical cluster `name` with a SyncTarget per physical cluster (Ready once a syncer runs for it)."""
    kubeconfig = cluster_kubeconfig(kcp, name, name)
    run_kubectl(kcp, "apply", "-f", str(CRD_FILE), kubeconfig=kubeconfig)
    eventually(lambda: run_kubectl(kcp, "get", "synctargets", kubeconfig=kubeconfig, check=False).returncode == 0,
               "SyncTargets served")
    for target, server in physical.items():
        run_kubectl(kcp, "apply", "-f", "-", kubeconfig=kubeconfig, input_text=yaml.safe_dump({
            "apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": target},
            "spec": {"kubeconfig": server.kubeconfig.read_text()}}))
    return kubeconfig


@dataclass
class OneClusterFleet:
    kcp: KcpServer
    kubeconfig: Path  # logical cluster `tenant`
    controller: ClusterControllerProcess
    east: KcpServer  # the physical cluster


@contextmanager
def one_cluster_fleet(root: Path, workloads: str) -> Iterator[OneClusterFleet]:
    """kcp, one sim cluster `east` as a Ready SyncTarget of logical cluster `tenant` (push mode), and
    `workloads` applied there once StatefulSets (hence the apps types) are imported. The controller must
    exit 0 on SIGTERM."""
    kcp = KcpServer(root / "kcp", free_port())
    east = sim_cluster(root / "east")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, east):
            server.start()
            started.append(server)
        controller.start()
        kubeconfig = tenant(kcp, "tenant", {"east": east})
        run_kubectl(kcp, "wait", "synctarget/east", "--for", "condition=Ready", "--timeout=90s",
                    kubeconfig=kubeconfig, timeout=100)
        eventually(lambda: run_kubectl(kcp, "get", "statefulsets", kubeconfig=kubeconfig, check=False).returncode
                   == 0, "StatefulSets imported", timeout=90)
        run_kubectl(kcp, "apply", "-f", "-", kubeconfig=kubeconfig, input_text=workloads)
        yield OneClusterFleet(kcp, kubeconfig, controller, east)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()
