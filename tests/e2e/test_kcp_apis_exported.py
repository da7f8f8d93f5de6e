"""kcp's own APIs as exports (issue 24): `kcp-cluster-controller --api-export-workspace compute` publishes the
SyncTarget and Location APIs from `compute` (APIExports `workload.kcp.io` and `scheduling.kcp.io`). A team's
workspace binds them instead of holding the CRDs, registers a simulated cluster as a SyncTarget, and runs a
Deployment there; a Location it binds counts the SyncTarget. Real kcp, kcp-sim-cluster and controller."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from daemon_process import ClusterControllerProcess
from syncer_fixtures import eventually, sim_cluster

from kcp_process import KcpServer, cluster_kubeconfig, free_port, run_kubectl

COMPUTE, TEAM = "compute", "team-exported"


@dataclass
class Env:
    kcp: KcpServer
    sim: KcpServer
    team: Path  # kubeconfig of TEAM
    compute: Path  # kubeconfig of COMPUTE


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("kcp-apis-exported")
    kcp, sim = KcpServer(root / "kcp", free_port()), sim_cluster(root / "sim")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5",
        "--api-export-workspace", COMPUTE])
    started: list[KcpServer] = []
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        yield Env(kcp, sim, cluster_kubeconfig(kcp, TEAM, TEAM), cluster_kubeconfig(kcp, COMPUTE, COMPUTE))
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def kubectl(env: Env, kubeconfig: Path, *args: str, input_text: str | None = None, check: bool = True) -> str:
    return run_kubectl(env.kcp, *args, kubeconfig=kubeconfig, input_text=input_text, check=check).stdout


def test_a_workspace_that_binds_kcp_s_apis_runs_workloads_without_their_crds(env: Env) -> None:
    identity = eventually(lambda: kubectl(env, env.compute, "get", "apiexport", "workload.kcp.io", "-o",
                                          "jsonpath={.status.identityHash}", check=False), "the export's identity")
    for export in ("workload.kcp.io", "scheduling.kcp.io"):
        kubectl(env, env.team, "apply", "-f", "-", input_text=json.dumps({
            "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": export},
            "spec": {"reference": {"export": {"path": COMPUTE, "name": export}}}}))
        kubectl(env, env.team, "wait", f"apibinding/{export}", "--for=condition=Ready", "--timeout=30s")
    assert "NotFound" in run_kubectl(env.kcp, "get", "crd", "synctargets.workload.kcp.io", kubeconfig=env.team,
                                     check=False).stderr  # bound, not installed
    kubectl(env, env.team, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
        "metadata": {"name": "east", "labels": {"region": "eu"}},
        "spec": {"kubeconfig": env.sim.kubeconfig.read_text()}}))
    kubectl(env, env.team, "wait", "synctarget/east", "--for=condition=Ready", "--timeout=90s")
    listed = json.loads(run_kubectl(env.kcp, "get", "--raw",
                                    f"/clusters/*/apis/workload.kcp.io/v1alpha1/synctargets:{identity}").stdout)
    assert [(t["metadata"]["annotations"]["kcp.io/cluster"], t["metadata"]["name"]) for t in listed["items"]] == [
        (TEAM, "east")]  # stored under the export's identity
    eventually(lambda: run_kubectl(env.kcp, "get", "deployments", kubeconfig=env.team, check=False).returncode == 0,
               "Deployments imported into the team's workspace", timeout=90)
    kubectl(env, env.team, "create", "deployment", "web", "--image=nginx", "--replicas=2")
    kubectl(env, env.team, "label", "deployment", "web", "workloads.kcp.io/cluster=east")
    kubectl(env, env.team, "wait", "deployment/web", "--for=jsonpath={.status.availableReplicas}=2", "--timeout=90s")
    kubectl(env, env.team, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Location", "metadata": {"name": "eu"},
        "spec": {"resource": {"group": "workload.kcp.io", "version": "v1alpha1", "resource": "synctargets"},
                 "instanceSelector": {"matchLabels": {"region": "eu"}}}}))
    kubectl(env, env.team, "wait", "location/eu", "--for=jsonpath={.status.availableInstances}=1", "--timeout=30s")


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: IMAGE, ports: [{containerPort: 80}]}]
"""


def test_a_compute_workspace_shares_its_workload_apis_with_kube_s_semantics(env: Env) -> None:
    """The compute workspace's `kubernetes` export offers the types its SyncTargets import; a team binds it and
    serves Deployments as kube does (defaults, strategic merge patch, validation) with no CRD of its own."""
    crd = Path(__file__).parents[2] / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
    kubectl(env, env.compute, "apply", "-f", str(crd))
    eventually(lambda: run_kubectl(env.kcp, "get", "synctargets", kubeconfig=env.compute, check=False).returncode
               == 0, "SyncTargets served in the compute workspace")
    kubectl(env, env.compute, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": "shared"},
        "spec": {"kubeconfig": env.sim.kubeconfig.read_text()}}))
    kubectl(env, env.compute, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "kubernetes"}, "spec": {}}))
    offered = eventually(lambda: kubectl(env, env.compute, "get", "apiexport", "kubernetes", "-o",
                                         "jsonpath={.spec.latestResourceSchemas}", check=False),
                         "the export offers the imported types", timeout=90)
    assert ".deployments.apps" in offered and ".services.core" in offered
    consumer = cluster_kubeconfig(env.kcp, "consumer-of-kubernetes", "consumer")
    kubectl(env, consumer, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "kubernetes"},
        "spec": {"reference": {"export": {"path": COMPUTE, "name": "kubernetes"}}}}))
    kubectl(env, consumer, "wait", "apibinding/kubernetes", "--for=condition=Ready", "--timeout=30s")
    assert "NotFound" in run_kubectl(env.kcp, "get", "crd", "deployments.apps", kubeconfig=consumer,
                                     check=False).stderr
    kubectl(env, consumer, "apply", "-f", "-", input_text=DEPLOYMENT.replace("IMAGE", "nginx:1.26"))
    kubectl(env, consumer, "apply", "-f", "-", input_text=DEPLOYMENT.replace("IMAGE", "nginx:1.27"))  # a patch
    kubectl(env, consumer, "set", "env", "deployment/web", "MODE=shared")  # strategic merge patch, not 415
    stored = json.loads(kubectl(env, consumer, "get", "deployment", "web", "-o", "json"))
    assert stored["spec"]["strategy"] == {"type": "RollingUpdate",
                                          "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert stored["spec"]["revisionHistoryLimit"] == 10  # kube's defaults
    (container,) = stored["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["env"]) == ("nginx:1.27", [{"name": "MODE", "value": "shared"}])
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    refused = run_kubectl(env.kcp, "scale", "deployment", "web", "--replicas=-1", kubeconfig=consumer, check=False)
    assert refused.returncode == 1
    refused = run_kubectl(env.kcp, "patch", "deployment", "web", "-p", '{"spec":{"replicas":-1}}',
                          kubeconfig=consumer, check=False)
    assert 'The Deployment "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0' \
        in refused.stderr, refused.stderr
