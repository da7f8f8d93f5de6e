"""A real Kubernetes 1.20 control plane (kube_fixtures' `kube`) as a physical cluster of kcp: `make kube-e2e`.

kcp is the session's kcp-apiserver, with `python -m kcp_cluster_controller --syncer-mode push` against it and a
newest-release kcp-sim-cluster next to the real cluster (pull mode: a kcp and controller of its own). Each test
works in a logical cluster of its own.
The real cluster has no nodes at first: its controllers create ReplicaSets and Pods, and the Pods stay Pending.
The last test gives it nodes (`kcp-sim-cluster agent`) and runs the splitter: seed 004's 15/15 over both clusters.
Marked real_kube: pytest.ini leaves these out of `make test`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from kube_fixtures import KubeControlPlane, kube
from splitter_fixtures import SplitterProcess, logical_cluster, ready_shares
from syncer_fixtures import ASSIGNMENT_LABEL, Rest, eventually, sim_cluster, syncer_env
from test_cluster_controller import assert_confined_to_its_own_namespaces, installed_syncer
from test_sim_agent import AgentProcess

from kcp_process import KcpServer, free_port, run_kubectl
from kcpsyncer import downstream_namespace

pytestmark = pytest.mark.real_kube
__all__ = ["kube"]  # the fixture, imported so that pytest finds it

ST_PATH = "/apis/workload.kcp.io/v1alpha1/synctargets"
PATIENCE = 90.0  # seconds: the real control plane and kcp share two cores with other work


@dataclass
class Env:
    kcp: KcpServer
    kube: KubeControlPlane
    newest: KcpServer  # kcp-sim-cluster at the newest release it serves
    root: Path


@pytest.fixture(scope="module")
def env(kcp: KcpServer, kube: KubeControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("real-kube")
    newest = sim_cluster(root / "newest")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5"])
    newest.start()
    try:
        controller.start()
        yield Env(kcp, kube, newest, root)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        newest.stop()


def register(kcp: KcpServer, kubeconfig: Path, name: str, physical: KubeControlPlane | KcpServer, *,
             ready: bool = True, resources: list[str] | None = None) -> None:
    """A SyncTarget whose spec.kubeconfig is the physical cluster's admin kubeconfig (and, with `ready`, Ready)."""
    target = {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
              "spec": {"kubeconfig": physical.kubeconfig.read_text(), **({"resources": resources} if resources else {})}}
    run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(target), kubeconfig=kubeconfig)
    if ready:
        run_kubectl(kcp, "wait", f"synctarget/{name}", "--for", "condition=Ready", f"--timeout={int(PATIENCE)}s",
                    kubeconfig=kubeconfig, timeout=PATIENCE + 10)


def condition(rest: Rest, name: str, type_: str) -> dict[str, Any]:
    for cond in ((rest.get(f"{ST_PATH}/{name}") or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def explains(env: Env, kubeconfig: Path, field_path: str) -> bool:
    return run_kubectl(env.kcp, "explain", field_path, kubeconfig=kubeconfig, check=False).returncode == 0


def test_the_real_cluster_becomes_a_ready_synctarget_in_push_mode(env: Env) -> None:
    kubeconfig = logical_cluster(env.kcp, "real-push")
    register(env.kcp, kubeconfig, "kube", env.kube)
    rest = Rest(env.kcp).at("real-push")
    status = rest.get(f"{ST_PATH}/kube")["status"]
    assert {"deployments.apps", "services", "jobs.batch"} <= set(status["importedResources"]), status
    assert condition(rest, "kube", "APIsImported")["status"] == "True"
    assert condition(rest, "kube", "SyncerReady")["status"] == "True"
    assert status.get("lastSyncerHeartbeatTime")
    assert not status.get("capacity", {}).get("pods"), "no Nodes, no capacity"


def test_a_real_cluster_serving_none_of_the_synced_types_is_not_ready(env: Env) -> None:
    """The heartbeat alone does not make Ready: with every import failing the SyncTarget can sync nothing."""
    kubeconfig = logical_cluster(env.kcp, "real-unserved")
    register(env.kcp, kubeconfig, "kube", env.kube, ready=False,
             resources=["widgets.example.com", "gadgets.example.org"])
    rest = Rest(env.kcp).at("real-unserved")
    ready = eventually(lambda: (c := condition(rest, "kube", "Ready")).get("reason") == "ImportsFailed" and c,
                       "Ready=False ImportsFailed", timeout=PATIENCE)
    assert ready["status"] == "False"
    assert "widgets.example.com" in ready["message"] and "gadgets.example.org" in ready["message"], ready
    assert condition(rest, "kube", "APIsImported")["reason"] == "ImportsFailed"


def test_kcp_serves_deployments_with_the_real_clusters_1_20_schema(env: Env) -> None:
    kubeconfig = logical_cluster(env.kcp, "real-schema")
    register(env.kcp, kubeconfig, "kube", env.kube)
    resources = run_kubectl(env.kcp, "api-resources", "-o", "name", kubeconfig=kubeconfig).stdout.split()
    assert {"deployments.apps", "statefulsets.apps", "jobs.batch"} <= set(resources)
    assert explains(env, kubeconfig, "deployment.spec.template.spec.setHostnameAsFQDN")  # 1.19 added it
    # 1.23 added the pod's `os`, 1.27 containers' resizePolicy: kube 1.20's schema has neither
    assert not explains(env, kubeconfig, "deployment.spec.template.spec.os")
    assert not explains(env, kubeconfig, "deployment.spec.template.spec.containers.resizePolicy")


def test_negotiation_with_a_newest_sim_serves_the_real_clusters_subset(env: Env) -> None:
    kubeconfig = logical_cluster(env.kcp, "real-neg")
    register(env.kcp, kubeconfig, "newest", env.newest)
    assert explains(env, kubeconfig, "deployment.spec.template.spec.containers.resizePolicy")  # the newest alone
    register(env.kcp, kubeconfig, "kube", env.kube)
    rest = Rest(env.kcp).at("real-neg")

    def lacking() -> list[str]:
        fields = (rest.get(f"{ST_PATH}/kube").get("status") or {}).get("incompatibleFields") or {}
        return list(fields.get("deployments.apps") or [])

    eventually(lambda: "spec.template.spec.containers[*].resizePolicy" in lacking(),
               "the real cluster named as lacking resizePolicy", timeout=PATIENCE)
    assert "spec.template.spec.os" in lacking()
    imported = condition(rest, "kube", "APIsImported")
    assert (imported["status"], imported["reason"]) == ("False", "IncompatibleSchema"), imported
    eventually(lambda: not explains(env, kubeconfig, "deployment.spec.template.spec.containers.resizePolicy"),
               "kcp serves the lowest common denominator", timeout=PATIENCE)
    assert explains(env, kubeconfig, "deployment.spec.template.spec.setHostnameAsFQDN")


def test_a_deployment_syncs_down_the_real_controllers_make_pods_and_status_comes_up(env: Env) -> None:
    kubeconfig = logical_cluster(env.kcp, "real-sync")
    register(env.kcp, kubeconfig, "kube", env.kube)
    up, down = Rest(env.kcp).at("real-sync"), Rest(env.kube)  # type: ignore[arg-type]
    up.create("/apis/apps/v1/namespaces/default/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {ASSIGNMENT_LABEL: "kube"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.19"}]}}}})
    namespace = downstream_namespace("real-sync", "default")
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    synced = eventually(lambda: down.get(path), "the Deployment in the real cluster", timeout=PATIENCE)
    assert synced["spec"]["replicas"] == 3

    def pods() -> list[dict[str, Any]]:
        return list(down.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3Dweb")["items"])

    replica_sets = eventually(lambda: down.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"],
                              "the real deployment controller's ReplicaSet", timeout=PATIENCE)
    assert replica_sets[0]["metadata"]["ownerReferences"][0]["name"] == "web"
    eventually(lambda: len(pods()) == 3, "three Pods from the real replicaset controller", timeout=PATIENCE)
    # no Nodes: the real scheduler leaves them Pending, Unschedulable
    eventually(lambda: all(any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                               for c in (p.get("status") or {}).get("conditions") or []) for p in pods()),
               "the Pods Unschedulable", timeout=PATIENCE)
    assert {p["status"]["phase"] for p in pods()} == {"Pending"}

    def upstream_status() -> dict[str, Any]:
        return dict(up.get("/apis/apps/v1/namespaces/default/deployments/web").get("status") or {})

    status = eventually(lambda: (s := upstream_status()).get("updatedReplicas") == 3 and s,
                        "the real cluster's status in kcp", timeout=PATIENCE)
    assert (status["replicas"], status.get("readyReplicas", 0), status["unavailableReplicas"]) == (3, 0, 3)

    assert up.delete("/apis/apps/v1/namespaces/default/deployments/web") == 200
    eventually(lambda: down.get(path) is None, "the Deployment deleted in the real cluster", timeout=PATIENCE)
    eventually(lambda: not pods(), "its Pods collected by the real garbage collector", timeout=PATIENCE)


@pytest.fixture
def pull_kcp(env: Env) -> Iterator[KcpServer]:
    """A kcp of its own (one cluster controller per kcp) with a `--syncer-mode pull` controller."""
    kcp = KcpServer(env.root / "pull-kcp", free_port())
    controller = ClusterControllerProcess(kcp, env.root / "pull-controller.log", [
        "--syncer-mode", "pull", "--no-leader-elect", "--heartbeat-interval", "2"])
    kcp.start()
    try:
        controller.start()
        yield kcp
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        kcp.stop()


def test_pull_mode_installs_the_syncer_into_the_real_cluster_under_real_rbac(env: Env, pull_kcp: KcpServer) -> None:
    kubeconfig = logical_cluster(pull_kcp, "real-pull")
    register(pull_kcp, kubeconfig, "kube", env.kube, ready=False)
    up, down = Rest(pull_kcp).at("real-pull"), Rest(env.kube)  # type: ignore[arg-type]
    workdir = env.root / "pulled-syncer"
    command = installed_syncer(env.kube, "kube", workdir)  # type: ignore[arg-type]
    namespace = next(ns["metadata"]["name"] for ns in down.get("/api/v1/namespaces")["items"]
                     if (ns["metadata"].get("labels") or {}).get("workload.kcp.io/sync-target") == "kube")
    # no Nodes: the real scheduler leaves the syncer's pod Pending, and the SyncTarget says it is not running
    pods = eventually(lambda: down.get(f"/api/v1/namespaces/{namespace}/pods")["items"], "the syncer's Pod",
                      timeout=PATIENCE)
    assert pods[0]["status"]["phase"] == "Pending"
    assert condition(up, "kube", "SyncerReady").get("status") != "True"

    # its downstream identity is the installed ServiceAccount's token, held to the installed ClusterRole
    cluster_kubeconfig_path = workdir / "cluster.kubeconfig"
    assert yaml.safe_load(cluster_kubeconfig_path.read_text())["users"][0]["user"]["token"] != env.kube.token
    denied = run_kubectl(env.kube, "get", "roles", "-n", "kube-system", kubeconfig=cluster_kubeconfig_path,
                         check=False)  # type: ignore[arg-type]
    assert denied.returncode != 0 and "forbidden" in denied.stderr, denied.stderr
    # no Secret outside its own namespaces: kube 1.20's controllers keep their tokens in kube-system
    tokens = eventually(lambda: down.get("/api/v1/namespaces/kube-system/secrets")["items"],
                        "the controllers' token Secrets in kube-system", timeout=PATIENCE)
    for argv in (["get", "secret", tokens[0]["metadata"]["name"], "-n", "kube-system"],
                 ["get", "secrets", "--all-namespaces"]):
        denied = run_kubectl(env.kube, *argv, kubeconfig=cluster_kubeconfig_path, check=False)  # type: ignore[arg-type]
        assert denied.returncode != 0 and "forbidden" in denied.stderr, (argv, denied.stderr)

    with open(env.root / "pulled-syncer.log", "ab") as log:  # run as a process what the pod would run
        syncer = subprocess.Popen(command, stdout=log, stderr=log, env=syncer_env(), start_new_session=True)
    try:
        run_kubectl(pull_kcp, "wait", "synctarget/kube", "--for", "condition=Ready", f"--timeout={int(PATIENCE)}s",
                    kubeconfig=kubeconfig, timeout=PATIENCE + 10)
        up.create("/api/v1/namespaces/default/configmaps", {
            "metadata": {"name": "pulled", "labels": {ASSIGNMENT_LABEL: "kube"}}, "data": {"a": "1"}})
        mapped = f"/api/v1/namespaces/{downstream_namespace('real-pull', 'default')}/configmaps/pulled"
        assert eventually(lambda: down.get(mapped), "the ConfigMap synced down by the pulled syncer",
                          timeout=PATIENCE)["data"] == {"a": "1"}
        # no namespaced type beyond its own namespaces: kube's own RBAC refuses it (403)
        assert_confined_to_its_own_namespaces(env.kube, cluster_kubeconfig_path,  # type: ignore[arg-type]
                                              downstream_namespace("real-pull", "default"))
        # Secrets are its in the namespaces it made (a RoleBinding from the controller), watched one by one
        up.create("/api/v1/namespaces/default/secrets", {
            "metadata": {"name": "pulled", "labels": {ASSIGNMENT_LABEL: "kube"}}, "stringData": {"b": "2"}})
        secret = f"/api/v1/namespaces/{downstream_namespace('real-pull', 'default')}/secrets/pulled"
        assert eventually(lambda: down.get(secret), "the Secret synced down by the pulled syncer",
                          timeout=PATIENCE)["data"] == {"b": "Mg=="}
        # a change downstream is seen by its per-namespace watch and undone
        down.patch(secret, {"data": {"b": "Mw=="}})
        eventually(lambda: down.get(secret)["data"] == {"b": "Mg=="}, "the downstream edit undone", timeout=PATIENCE)
    finally:
        syncer.terminate()
        syncer.wait(30)
    run_kubectl(pull_kcp, "delete", "synctarget", "kube", "--timeout=90s", kubeconfig=kubeconfig, timeout=100)
    eventually(lambda: (ns := down.get(f"/api/v1/namespaces/{namespace}")) is None
               or ns["metadata"].get("deletionTimestamp"), "the installed syncer removed", timeout=PATIENCE)


@pytest.fixture
def nodes_and_splitter(env: Env) -> Iterator[AgentProcess]:
    """Three simulated Nodes in the real cluster (kcp-sim-cluster's agent: the real scheduler binds pods to them,
    the agent runs them), removed afterwards; and the deployment splitter against kcp."""
    agent = AgentProcess(env.kube.kubeconfig, env.root / "agent.log", [
        "--nodes", "3", "--ready-delay", "0.5", "--node-name-prefix", AGENT_PREFIX, "--delete-nodes-on-exit"])
    splitter = SplitterProcess(env.kcp, env.root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"])
    try:
        agent.start()
        eventually(agent.ready, "the agent's Nodes registered with their Leases", timeout=PATIENCE)
        splitter.start(wait_ready=False)
        yield agent
        assert splitter.stop() == 0, splitter.log_tail()
        assert agent.stop() == 0, agent.log_tail()
    finally:
        splitter.stop()
        agent.stop()


AGENT_PREFIX = "kube-agent-node-"
WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 15
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.19"}]}
"""


def test_fifteen_replicas_split_over_the_real_cluster_and_a_sim_read_15_of_15(
        env: Env, nodes_and_splitter: AgentProcess) -> None:
    kubeconfig = logical_cluster(env.kcp, "real-split")
    register(env.kcp, kubeconfig, "newest", env.newest)
    register(env.kcp, kubeconfig, "kube", env.kube)
    eventually(lambda: run_kubectl(env.kcp, "get", "deployments", kubeconfig=kubeconfig, check=False).returncode == 0,
               "Deployments imported into kcp", timeout=PATIENCE)
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=WEB, kubeconfig=kubeconfig)
    run_kubectl(env.kcp, "rollout", "status", "deployment/web", "--timeout=180s", kubeconfig=kubeconfig, timeout=200)

    def ready_column() -> dict[str, str]:
        table = run_kubectl(env.kcp, "get", "deployments", kubeconfig=kubeconfig).stdout
        return {line.split()[0]: line.split()[1] for line in table.splitlines()[1:]}

    final = eventually(lambda: (r := ready_column()).get("web") == "15/15" and r, "web 15/15", timeout=PATIENCE)
    assert final == {"web": "15/15"}, final  # the user's one Deployment, no per-cluster objects beside it
    shares = eventually(lambda: (s := ready_shares(Rest(env.kcp).at("real-split"), "web")) and all(  # type: ignore[arg-type]
        r.split("/")[0] == r.split("/")[1] for r in s.values()) and s, "each cluster's share ready", timeout=PATIENCE)
    assert set(shares) == {"kube", "newest"}, shares
    share = int(shares["kube"].split("/")[1])
    assert 0 < share < 15, shares
    # the real deployment controller's copy of the Deployment runs the share, its pods on the agent's Nodes
    namespace = downstream_namespace("real-split", "default")
    down = Rest(env.kube)  # type: ignore[arg-type]
    real = down.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert (real["status"]["readyReplicas"], real["status"]["availableReplicas"]) == (share, share), real["status"]
    pods = down.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
    assert len(pods) == share and all(p["spec"]["nodeName"].startswith(AGENT_PREFIX) for p in pods)
    assert {p["status"]["phase"] for p in pods} == {"Running"}
