"""The splitter acts in a workspace that binds its types (kcpcommon.identities): a consumer workspace binds the
compute workspace's `kubernetes` export (Deployments, under the export's identity) and `workload.kcp.io`
(SyncTargets, under another), registers a SyncTarget, and creates a Deployment. The splitter's wildcard
informers list the bound objects as `<plural>:<identity>` beside the CRD-served ones, so the root gets its
share on `east` and its status from it. Real kcp, kcp-sim-cluster, cluster controller (push) and splitter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from daemon_process import ClusterControllerProcess
from splitter_fixtures import SplitterProcess, shares_on
from syncer_fixtures import eventually, sim_cluster

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl

COMPUTE, CONSUMER = "compute", "bound-consumer"
CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"


@dataclass
class Env:
    kcp: KcpServer
    sim: KcpServer
    compute: Path  # kubeconfig of COMPUTE
    consumer: Path  # kubeconfig of CONSUMER


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("bound-types")
    kcp, sim = KcpServer(root / "kcp", free_port()), sim_cluster(root / "sim")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5",
        "--api-export-workspace", COMPUTE])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        splitter.start(wait_ready=False)
        yield Env(kcp, sim, cluster_kubeconfig(kcp, COMPUTE, COMPUTE), cluster_kubeconfig(kcp, CONSUMER, CONSUMER))
        assert splitter.stop() == 0, splitter.log_tail()
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        splitter.stop()
        controller.stop()
        for server in started:
            server.stop()


def kubectl(env: Env, kubeconfig: Path, *args: str, input_text: str | None = None, check: bool = True) -> str:
    return run_kubectl(env.kcp, *args, kubeconfig=kubeconfig, input_text=input_text, check=check,
                       timeout=120).stdout


def bind(env: Env, export: str) -> None:
    kubectl(env, env.consumer, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": export},
        "spec": {"reference": {"export": {"path": COMPUTE, "name": export}}}}))
    kubectl(env, env.consumer, "wait", f"apibinding/{export}", "--for=condition=Ready", "--timeout=30s")


def sync_target(name: str, env: Env) -> str:
    return json.dumps({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
                       "spec": {"kubeconfig": env.sim.kubeconfig.read_text()}})


def get(env: Env, kubeconfig: Path, *what: str) -> dict[str, Any] | None:
    out = run_kubectl(env.kcp, "get", *what, "-o", "json", kubeconfig=kubeconfig, check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def test_the_splitter_splits_a_deployment_of_a_workspace_that_binds_deployments(env: Env) -> None:
    # the compute workspace: its SyncTarget imports the kube types, its `kubernetes` export offers them
    kubectl(env, env.compute, "apply", "-f", str(CRD_FILE))
    eventually(lambda: run_kubectl(env.kcp, "get", "synctargets", kubeconfig=env.compute, check=False).returncode
               == 0, "SyncTargets served in the compute workspace")
    kubectl(env, env.compute, "apply", "-f", "-", input_text=sync_target("shared", env))
    kubectl(env, env.compute, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "kubernetes"}, "spec": {}}))
    eventually(lambda: ".deployments.apps" in kubectl(env, env.compute, "get", "apiexport", "kubernetes", "-o",
                                                      "jsonpath={.spec.latestResourceSchemas}", check=False),
               "the export offers Deployments", timeout=90)
    eventually(lambda: kubectl(env, env.compute, "get", "apiexport", "workload.kcp.io", "-o",
                               "jsonpath={.status.identityHash}", check=False), "workload.kcp.io exported")
    # the consumer binds both: no CRD of its own for Deployments or SyncTargets
    bind(env, "kubernetes")
    bind(env, "workload.kcp.io")
    for crd in ("deployments.apps", "synctargets.workload.kcp.io"):
        assert "NotFound" in run_kubectl(env.kcp, "get", "crd", crd, kubeconfig=env.consumer, check=False).stderr
    kubectl(env, env.consumer, "apply", "-f", "-", input_text=sync_target("east", env))
    kubectl(env, env.consumer, "wait", "synctarget/east", "--for=condition=Ready", "--timeout=90s")
    kubectl(env, env.consumer, "create", "deployment", "web", "--image=nginx", "--replicas=2")
    eventually(lambda: shares_on(get(env, env.consumer, "deployment", "web") or {}) == {"east": 2},
               "the splitter's share on east, written on the consumer's Deployment", timeout=60)
    root = eventually(lambda: (d := get(env, env.consumer, "deployment", "web"))
                      and (d.get("status") or {}).get("availableReplicas") == 2 and d,
                      "the root's status from its share: 2 available", timeout=120)
    assert root["status"]["replicas"] == 2
