"""One syncer per physical cluster (issue 25): a SyncTarget registered once in a compute workspace serves every
team workspace placed on it. Two teams bind the compute workspace's `kubernetes` export; the test labels a
namespace of each as a Placement would (the splitter's part, by hand), and the SyncTarget's one push syncer in
the cluster controller carries both teams' `default/web` to the simulated cluster, apart, and their status back.
Unplacing one team takes its objects off the cluster and leaves the other's. Real kcp, kcp-sim-cluster,
cluster controller and kubectl."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from daemon_process import ClusterControllerProcess
from syncer_fixtures import eventually, sim_cluster

from kcp_process import KcpServer, cluster_kubeconfig, free_port, run_kubectl
from kcpcommon.keys import ASSIGNMENT_LABEL, PLACED, placed_label, sync_target_key
from kcpsyncer.names import SYNC_TARGET_KEY_ANNOTATION, downstream_namespace

COMPUTE, TARGET = "compute-placed", "shared"
TEAM_A, TEAM_B, TEAM_C = "team-placed-a", "team-placed-b", "team-placed-c"
PLACED_LABEL = placed_label(COMPUTE, TARGET)
CRD = Path(__file__).parents[2] / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {workloads.kcp.io/cluster: shared}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"""


@dataclass
class Env:
    kcp: KcpServer
    sim: KcpServer
    controller: ClusterControllerProcess
    compute: Path
    teams: dict[str, Path]  # kubeconfig per team workspace


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("placed-workspaces")
    kcp, sim = KcpServer(root / "kcp", free_port()), sim_cluster(root / "sim")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        env = Env(kcp, sim, controller, cluster_kubeconfig(kcp, COMPUTE, COMPUTE),
                  {team: cluster_kubeconfig(kcp, team, team) for team in (TEAM_A, TEAM_B, TEAM_C)})
        register_shared_cluster(env)
        yield env
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def kubectl(env: Env, kubeconfig: Path, *args: str, input_text: str | None = None, check: bool = True) -> str:
    return run_kubectl(env.kcp, *args, kubeconfig=kubeconfig, input_text=input_text, check=check).stdout


def on_sim(env: Env, *args: str) -> str:
    """kubectl against the physical cluster; "" when it fails (not found)."""
    result = run_kubectl(env.sim, *args, check=False)
    return result.stdout if result.returncode == 0 else ""


def metric(env: Env, series: str) -> list[str]:
    """The /metrics lines of `series` for this SyncTarget."""
    return [line for line in env.controller.metrics().splitlines()
            if line.startswith(series + "{") and f'sync_target="{TARGET}"' in line]


def placed_gauge(env: Env) -> float | None:
    for line in metric(env, "kcp_syncer_placed_workspaces"):
        if f'logical_cluster="{COMPUTE}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def push_syncers_started(env: Env) -> int:
    """How many times the controller started a push syncer for the SyncTarget (its JSON log)."""
    lines = [json.loads(line) for line in env.controller.log_path.read_text().splitlines() if line.startswith("{")]
    return sum(1 for line in lines if line.get("logger") == "kcp-cluster-controller.push"
               and line.get("event") == "syncer starting" and line.get("sync_target") == TARGET)


def stopped_serving(env: Env) -> list[str]:
    """The workspaces whose engines the syncer stopped, having drained them (its JSON log)."""
    lines = [json.loads(line) for line in env.controller.log_path.read_text().splitlines() if line.startswith("{")]
    return [line["workspace"] for line in lines if line.get("logger") == "kcpsyncer.placed"
            and str(line.get("event")).startswith("stopped serving a workspace")]


def register_shared_cluster(env: Env) -> None:
    """The admin's part: the SyncTarget once, in the compute workspace, and its `kubernetes` export."""
    kubectl(env, env.compute, "apply", "-f", str(CRD))
    eventually(lambda: run_kubectl(env.kcp, "get", "synctargets", kubeconfig=env.compute, check=False).returncode
               == 0, "SyncTargets served in the compute workspace")
    kubectl(env, env.compute, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": TARGET},
        "spec": {"kubeconfig": env.sim.kubeconfig.read_text()}}))
    kubectl(env, env.compute, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "kubernetes"}, "spec": {}}))
    offered = eventually(lambda: kubectl(env, env.compute, "get", "apiexport", "kubernetes", "-o",
                                         "jsonpath={.spec.latestResourceSchemas}", check=False),
                         "the export offers the imported types", timeout=90)
    assert ".deployments.apps" in offered, offered
    kubectl(env, env.compute, "wait", f"synctarget/{TARGET}", "--for=condition=Ready", "--timeout=90s")


def bind_and_place(env: Env, team: str) -> None:
    """A team binds the export; its `default` namespace is placed on the shared cluster, with a ConfigMap and
    a Deployment assigned to it (what a Placement and the namespace rule would write)."""
    config = env.teams[team]
    kubectl(env, config, "apply", "-f", "-", input_text=json.dumps({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "kubernetes"},
        "spec": {"reference": {"export": {"path": COMPUTE, "name": "kubernetes"}}}}))
    kubectl(env, config, "wait", "apibinding/kubernetes", "--for=condition=Ready", "--timeout=30s")
    eventually(lambda: run_kubectl(env.kcp, "get", "namespace", "default", kubeconfig=config,
                                   check=False).returncode == 0, f"{team}'s default namespace")
    kubectl(env, config, "label", "namespace", "default", f"{ASSIGNMENT_LABEL}={TARGET}", f"{PLACED_LABEL}={PLACED}")
    kubectl(env, config, "create", "configmap", "web", "--namespace", "default", f"--from-literal=team={team}")
    kubectl(env, config, "label", "configmap", "web", "--namespace", "default", f"{ASSIGNMENT_LABEL}={TARGET}")
    kubectl(env, config, "apply", "-f", "-", input_text=DEPLOYMENT)


def test_one_syncer_serves_every_workspace_placed_on_its_cluster(env: Env) -> None:
    for team in (TEAM_A, TEAM_B):
        bind_and_place(env, team)
    mapped = {team: downstream_namespace(team, "default") for team in (TEAM_A, TEAM_B)}
    assert mapped[TEAM_A] != mapped[TEAM_B]
    for team, namespace in mapped.items():  # both teams' default/web, apart on the one cluster
        data = eventually(lambda ns=namespace: on_sim(env, "get", "configmap", "web", "-n", ns, "-o",
                                                      "jsonpath={.data.team}"), f"{team}'s ConfigMap downstream")
        assert data == team
        eventually(lambda ns=namespace: on_sim(env, "get", "deployment", "web", "-n", ns), f"{team}'s Deployment down")
        made = json.loads(on_sim(env, "get", "namespace", namespace, "-o", "json"))["metadata"]["annotations"]
        assert made[SYNC_TARGET_KEY_ANNOTATION] == sync_target_key(COMPUTE, TARGET)  # by the compute's SyncTarget
    for team, config in [(t, env.teams[t]) for t in (TEAM_A, TEAM_B)]:  # each team's status comes back to it,
        kubectl(env, config, "wait", "deployment/web", "--namespace", "default",
                "--for=jsonpath={.status.availableReplicas}=1", "--timeout=90s")
        eventually(lambda c=config: kubectl(env, c, "get", "pods", "--namespace", "default", "-o", "name"),
                   f"{team}'s pod mirrored into its workspace")  # and its pod is mirrored up
    # a team's pod's log through kcp: the compute workspace's SyncTarget's tunnel carries it (the team has none)
    pod = kubectl(env, env.teams[TEAM_A], "get", "pods", "--namespace", "default", "-o", "name").split()[0]
    logs = run_kubectl(env.kcp, "logs", pod, "--namespace", "default", "--tail", "3", kubeconfig=env.teams[TEAM_A],
                       check=False)
    assert logs.returncode == 0 and logs.stdout.strip(), logs.stderr
    # one syncer for the SyncTarget: the compute workspace's push syncer, serving both teams
    eventually(lambda: placed_gauge(env) == 2, "the syncer serves two placed workspaces")
    beating = metric(env, "kcp_syncer_last_heartbeat_timestamp_seconds")
    assert len(beating) == 1 and f'logical_cluster="{COMPUTE}"' in beating[0], beating
    assert push_syncers_started(env) == 1
    # team B's Placement goes: its namespace and objects lose their labels; B's objects leave the cluster
    config_b = env.teams[TEAM_B]
    kubectl(env, config_b, "label", "namespace", "default", f"{ASSIGNMENT_LABEL}-", f"{PLACED_LABEL}-")
    kubectl(env, config_b, "label", "configmap,deployment", "web", "--namespace", "default", f"{ASSIGNMENT_LABEL}-")
    eventually(lambda: not on_sim(env, "get", "configmap", "web", "-n", mapped[TEAM_B])
               and not on_sim(env, "get", "deployment", "web", "-n", mapped[TEAM_B]),
               "team B's objects gone downstream")
    eventually(lambda: placed_gauge(env) == 1, "team B's engine stopped once nothing of it is left downstream")
    assert not on_sim(env, "get", "namespace", mapped[TEAM_B], "-o", "jsonpath={.status.phase}").startswith(
        "Active")  # cleaned up (gone, or going) before the engine stopped
    assert kubectl(env, config_b, "get", "pods", "--namespace", "default", "-o", "name") == ""  # no stale mirrors
    assert kubectl(env, env.teams[TEAM_A], "get", "pods", "--namespace", "default", "-o", "name").startswith("pod/web-")
    assert on_sim(env, "get", "configmap", "web", "-n", mapped[TEAM_A], "-o", "jsonpath={.data.team}") == TEAM_A
    assert on_sim(env, "get", "deployment", "web", "-n", mapped[TEAM_A])
    assert kubectl(env, env.teams[TEAM_B], "get", "configmap", "web", "--namespace", "default", "-o",
                   "jsonpath={.data.team}") == TEAM_B  # unplaced, not deleted, in kcp


def test_a_workspace_unplaced_while_the_syncer_was_down_is_drained_when_it_comes_back(env: Env) -> None:
    """No placed namespace tells the syncer about team C any more: its namespace on the cluster does."""
    bind_and_place(env, TEAM_C)
    mapped = downstream_namespace(TEAM_C, "default")
    eventually(lambda: on_sim(env, "get", "deployment", "web", "-n", mapped), "team C's Deployment downstream")
    assert env.controller.stop() == 0, env.controller.log_tail(60)
    config = env.teams[TEAM_C]
    kubectl(env, config, "label", "namespace", "default", f"{ASSIGNMENT_LABEL}-", f"{PLACED_LABEL}-")
    kubectl(env, config, "label", "configmap,deployment", "web", "--namespace", "default", f"{ASSIGNMENT_LABEL}-")
    assert on_sim(env, "get", "configmap", "web", "-n", mapped)  # left behind while no syncer ran
    env.controller.start()
    eventually(lambda: not on_sim(env, "get", "configmap", "web", "-n", mapped)
               and not on_sim(env, "get", "deployment", "web", "-n", mapped), "team C's objects gone downstream",
               timeout=90)
    eventually(lambda: not on_sim(env, "get", "namespace", mapped, "-o", "jsonpath={.status.phase}").startswith(
        "Active"), "team C's namespace cleaned up")
    eventually(lambda: TEAM_C in stopped_serving(env), "team C's engine stopped once it drained")
