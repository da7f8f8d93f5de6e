"""Seed 004's demo with every real process: kcp, two physical clusters (physical_fixtures: simulated, or real kube
1.20 control planes with agent Nodes under `make kube-e2e`), the cluster controller (push mode: it runs both
syncers) and the deployment splitter.

15 replicas become two shares of the one Deployment, each physical cluster runs its share, the syncers
bring their statuses up, and the root reads `15/15` in `kubectl get deployments` (the user's Deployments
and nothing else) while `kubectl rollout status` finishes. Every wait is on a condition, never a fixed sleep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from physical_fixtures import Physical
from splitter_fixtures import SplitterProcess, connect_targets, logical_cluster, pods_in_kcp, ready_shares
from syncer_fixtures import Rest, eventually

from kcp_process import (
    KcpServer,
    free_port,
    run_kubectl,
    sim_cluster_command,
    sim_cluster_env,
)
from kcpsyncer import downstream_namespace


@dataclass
class Demo:
    kcp: KcpServer
    east: Physical
    west: Physical
    small: KcpServer  # one simulated node with room for 4 pods of 250m
    kubeconfig: Path
    root: Path
    physical: Callable[[Path], Physical]  # another cluster of east's kind


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, physical: Callable[[Path], Physical]) -> Iterator[Demo]:
    root = tmp_path_factory.mktemp("splitter-demo")
    kcp = KcpServer(root / "kcp", free_port())
    east, west = physical(root / "east"), physical(root / "west")
    small = KcpServer(root / "small", free_port(), ["--nodes", "1", "--node-capacity", "cpu=1,memory=4Gi,pods=110",
                                                    "--ready-delay", "0.2"],
                      command=sim_cluster_command(), env=sim_cluster_env())
    started: list[KcpServer | Physical] = []
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8",
        "--discovery-interval", "5"])
    splitter: SplitterProcess | None = None
    try:
        for server in (kcp, east, west, small):
            server.start()
            started.append(server)
        controller.start()
        kubeconfig = logical_cluster(kcp, "demo")
        splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"]).start(wait_ready=False)
        yield Demo(kcp, east, west, small, kubeconfig, root, physical)
        assert splitter.stop() == 0, splitter.log_tail()
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        if splitter is not None:
            splitter.stop()
        controller.stop()
        for server in started:
            server.stop()


def ready_column(kcp: KcpServer, kubeconfig: Path) -> dict[str, str]:
    table = run_kubectl(kcp, "get", "deployments", kubeconfig=kubeconfig).stdout
    return {line.split()[0]: line.split()[1] for line in table.splitlines()[1:]}


WEB = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 15
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""


def test_seed_004_fifteen_replicas_over_two_clusters_read_15_of_15(demo: Demo) -> None:
    connect_targets(demo.kcp, demo.kubeconfig, {"east": demo.east, "west": demo.west})
    run_kubectl(demo.kcp, "apply", "-f", "-", input_text=WEB, kubeconfig=demo.kubeconfig)
    run_kubectl(demo.kcp, "rollout", "status", "deployment/web", "--timeout=180s", kubeconfig=demo.kubeconfig,
                timeout=200)
    final = eventually(lambda: (r := ready_column(demo.kcp, demo.kubeconfig)).get("web") == "15/15" and r,
                       "web 15/15")
    assert final == {"web": "15/15"}, final  # the user's one Deployment: no per-cluster objects beside it
    shares = eventually(lambda: (s := ready_shares(Rest(demo.kcp).at("demo"), "web")) and all(
        r.split("/")[0] == r.split("/")[1] for r in s.values()) and s, "each cluster's share ready")
    assert set(shares) == {"east", "west"}
    assert sum(int(ready.split("/")[1]) for ready in shares.values()) == 15
    # the replicas really run downstream: each physical cluster's deployment reports its share
    for physical, target in ((demo.east, "east"), (demo.west, "west")):
        share = int(shares[target].split("/")[1])
        out = run_kubectl(physical, "get", "deployments", "-A", "-o", "jsonpath={.items[*].status.readyReplicas}")
        assert out.stdout.split() == [str(share)], out.stdout


def test_replicas_the_small_cluster_has_no_room_for_run_on_the_big_one(demo: Demo) -> None:
    kubeconfig = logical_cluster(demo.kcp, "demo-capacity")
    connect_targets(demo.kcp, kubeconfig, {"big": demo.east, "small": demo.small})
    heavy = yaml.safe_load(WEB.replace("name: web", "name: heavy").replace("replicas: 15", "replicas: 10"))
    heavy["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    run_kubectl(demo.kcp, "apply", "-f", "-", input_text=yaml.safe_dump(heavy), kubeconfig=kubeconfig)
    run_kubectl(demo.kcp, "rollout", "status", "deployment/heavy", "--timeout=180s", kubeconfig=kubeconfig,
                timeout=200)
    eventually(lambda: ready_column(demo.kcp, kubeconfig).get("heavy") == "10/10", "10/10")
    shares = ready_shares(Rest(demo.kcp).at("demo-capacity"), "heavy")
    assert shares == {"small": "4/4", "big": "6/6"}, shares


def test_a_lost_cluster_s_replicas_run_on_the_other_until_it_comes_back(demo: Demo) -> None:
    flaky = demo.physical(demo.root / "flaky")
    flaky.start()
    try:
        kubeconfig = logical_cluster(demo.kcp, "demo-loss")
        connect_targets(demo.kcp, kubeconfig, {"steady": demo.east, "flaky": flaky})
        app = WEB.replace("name: web", "name: loss").replace("replicas: 15", "replicas: 6")
        run_kubectl(demo.kcp, "apply", "-f", "-", input_text=app, kubeconfig=kubeconfig)
        rest = Rest(demo.kcp).at("demo-loss")
        eventually(lambda: ready_column(demo.kcp, kubeconfig) == {"loss": "6/6"}
                   and ready_shares(rest, "loss") == {"flaky": "3/3", "steady": "3/3"}, "3/3 on each", timeout=120)
        assert flaky.stop() == 0
        # NotReady after the cluster controller's threshold, then the splitter's grace period; steady
        # grows to 6 first, and flaky's share goes once those are available (its copy stays on flaky, and
        # the flaky syncer's finalizer on the root, until that cluster is back and its syncer deletes the copy)
        eventually(lambda: ready_column(demo.kcp, kubeconfig) == {"loss": "6/6"}
                   and ready_shares(rest, "loss") == {"steady": "6/6"}, "all 6 on steady", timeout=120)
        flaky.start()
        eventually(lambda: ready_column(demo.kcp, kubeconfig) == {"loss": "6/6"}
                   and ready_shares(rest, "loss") == {"flaky": "3/3", "steady": "3/3"}, "back to 3/3", timeout=120)
    finally:
        flaky.stop()


def test_a_configmap_the_workload_uses_arrives_in_both_clusters_and_leaves_one_with_it(demo: Demo) -> None:
    kubeconfig = logical_cluster(demo.kcp, "demo-deps")
    connect_targets(demo.kcp, kubeconfig, {"east": demo.east, "west": demo.west})
    run_kubectl(demo.kcp, "create", "configmap", "web-config", "--from-literal=greeting=hello", kubeconfig=kubeconfig)
    app = yaml.safe_load(WEB.replace("name: web", "name: deps").replace("replicas: 15", "replicas: 2"))
    app["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "web-config"}}]
    run_kubectl(demo.kcp, "apply", "-f", "-", input_text=yaml.safe_dump(app), kubeconfig=kubeconfig)
    mapped = f"/api/v1/namespaces/{downstream_namespace('demo-deps', 'default')}/configmaps/web-config"
    for physical in (demo.east, demo.west):
        eventually(lambda physical=physical: (Rest(physical).get(mapped) or {}).get("data") == {"greeting": "hello"},
                   f"web-config in {physical.root.name}", timeout=90)
    run_kubectl(demo.kcp, "rollout", "status", "deployment/deps", "--timeout=180s", kubeconfig=kubeconfig,
                timeout=200)
    run_kubectl(demo.kcp, "scale", "deployment/deps", "--replicas=1", kubeconfig=kubeconfig)
    eventually(lambda: Rest(demo.west).get(mapped) is None, "web-config leaves west with the workload", timeout=90)
    assert Rest(demo.east).get(mapped) is not None


def test_the_pods_a_deployment_runs_in_two_clusters_show_in_kcp_and_a_delete_there_replaces_one(demo: Demo) -> None:
    kubeconfig = logical_cluster(demo.kcp, "demo-pods")
    connect_targets(demo.kcp, kubeconfig, {"east": demo.east, "west": demo.west})
    app = WEB.replace("name: web", "name: seen").replace("replicas: 15", "replicas: 4").replace("app: web", "app: seen")
    run_kubectl(demo.kcp, "apply", "-f", "-", input_text=app, kubeconfig=kubeconfig)
    pods = eventually(lambda: (p := pods_in_kcp(demo.kcp, kubeconfig, "app=seen")) and len(p) == 4
                      and all(status == "Running" for status, _ in p.values()) and p, "4 pods Running in kcp",
                      timeout=120)
    assert sorted(cluster for _, cluster in pods.values()) == ["east", "east", "west", "west"], pods
    # they are the physical clusters' own pods, under the user's namespace and names
    mapped = downstream_namespace("demo-pods", "default")
    for physical, name in ((demo.east, "east"), (demo.west, "west")):
        there = run_kubectl(physical, "get", "pods", "-n", mapped, "-l", "app=seen", "-o", "name").stdout.split()
        assert sorted(p.removeprefix("pod/") for p in there) == sorted(n for n, (_, c) in pods.items() if c == name)
    # `kubectl describe pod` through kcp shows the scheduler's and the kubelet's Events of the physical cluster
    first = sorted(pods)[0]
    # (waited for as Events: the container's `Started:` time shows before the kubelet's Event comes up)
    eventually(lambda: (out := run_kubectl(demo.kcp, "describe", "pod", first, kubeconfig=kubeconfig).stdout)
               and re.search(r"Normal +Scheduled ", out) and re.search(r"Normal +Started .* kubelet", out),
               "the pod's Events in kcp", timeout=60)
    # one restarted through kcp: gone downstream, a replacement comes up in kcp
    victim = sorted(pods)[0]
    run_kubectl(demo.kcp, "delete", "pod", victim, "--timeout=60s", kubeconfig=kubeconfig, timeout=70)
    after = eventually(lambda: (p := pods_in_kcp(demo.kcp, kubeconfig, "app=seen")) and len(p) == 4
                       and victim not in p and all(s == "Running" for s, _ in p.values()) and p,
                       "a replacement Running in kcp", timeout=120)
    assert len(set(after) - set(pods)) == 1, (pods, after)
    for physical in (demo.east, demo.west):
        there = run_kubectl(physical, "get", "pods", "-n", mapped, "-o", "name").stdout.split()
        assert f"pod/{victim}" not in there


AGENT = """apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  labels: {app: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: agent
        image: agent:1
        envFrom: [{configMapRef: {name: agent-config}}]
"""


def daemonset_status(kcp: KcpServer, kubeconfig: Path, name: str) -> dict[str, Any]:
    found = run_kubectl(kcp, "get", "daemonset", name, "-o", "json", kubeconfig=kubeconfig, check=False)
    return dict(json.loads(found.stdout).get("status") or {}) if found.returncode == 0 else {}


def test_a_daemonset_runs_on_every_node_of_every_cluster_and_rollout_status_waits_for_all_of_them(
        demo: Demo) -> None:
    flaky = demo.physical(demo.root / "ds-flaky")
    flaky.start()
    try:
        kubeconfig = logical_cluster(demo.kcp, "demo-ds")
        clusters = {"east": demo.east, "west": demo.west, "flaky": flaky}
        connect_targets(demo.kcp, kubeconfig, clusters)
        nodes = {name: len((Rest(physical).get("/api/v1/nodes") or {}).get("items") or [])
                 for name, physical in clusters.items()}
        everywhere = sum(nodes.values())
        eventually(lambda: run_kubectl(demo.kcp, "get", "daemonsets", kubeconfig=kubeconfig,
                                       check=False).returncode == 0, "DaemonSets imported into kcp", timeout=90)
        run_kubectl(demo.kcp, "create", "configmap", "agent-config", "--from-literal=level=debug",
                    kubeconfig=kubeconfig)
        run_kubectl(demo.kcp, "apply", "-f", "-", input_text=AGENT, kubeconfig=kubeconfig)
        run_kubectl(demo.kcp, "rollout", "status", "daemonset/agent", "--timeout=180s", kubeconfig=kubeconfig,
                    timeout=200)
        status = daemonset_status(demo.kcp, kubeconfig, "agent")
        assert (status["desiredNumberScheduled"], status["numberReady"], status["updatedNumberScheduled"]) == (
            everywhere, everywhere, everywhere), status
        # one copy per cluster, one pod per node there; its ConfigMap went along; kcp shows every pod
        mapped = downstream_namespace("demo-ds", "default")
        for name, physical in clusters.items():
            there = run_kubectl(physical, "get", "pods", "-n", mapped, "-l", "app=agent", "-o", "json").stdout
            assert len({p["spec"]["nodeName"] for p in json.loads(there)["items"]}) == nodes[name], name
            assert Rest(physical).get(f"/api/v1/namespaces/{mapped}/configmaps/agent-config") is not None, name
        pods = eventually(lambda: (p := pods_in_kcp(demo.kcp, kubeconfig, "app=agent")) and len(p) == everywhere
                          and p, "every node's pod in kcp", timeout=90)
        assert sorted(cluster for _, cluster in pods.values()) == sorted(
            name for name, count in nodes.items() for _ in range(count))
        # an update rolls on every cluster, and rollout status waits for all of them
        run_kubectl(demo.kcp, "set", "image", "daemonset/agent", "agent=agent:2", kubeconfig=kubeconfig)
        run_kubectl(demo.kcp, "rollout", "status", "daemonset/agent", "--timeout=180s", kubeconfig=kubeconfig,
                    timeout=200)
        for name, physical in clusters.items():
            copy = Rest(physical).get(f"/apis/apps/v1/namespaces/{mapped}/daemonsets/agent") or {}
            assert copy["spec"]["template"]["spec"]["containers"][0]["image"] == "agent:2", name
            assert (copy.get("status") or {}).get("updatedNumberScheduled") == nodes[name], name
        # a lost cluster keeps its copy: its nodes are still desired, none of its pods counts as ready
        assert flaky.stop() == 0
        lost = eventually(lambda: (s := daemonset_status(demo.kcp, kubeconfig, "agent")).get("numberReady") ==
                          everywhere - nodes["flaky"] and s, "flaky's pods not ready in kcp", timeout=120)
        assert lost["desiredNumberScheduled"] == everywhere and lost["numberUnavailable"] == nodes["flaky"], lost
        labels = json.loads(run_kubectl(demo.kcp, "get", "daemonset", "agent", "-o", "json",
                                        kubeconfig=kubeconfig).stdout)["metadata"]["labels"]
        assert labels.get("state.workload.kcp.io/flaky") == "Sync", labels
        flaky.start()
        eventually(lambda: daemonset_status(demo.kcp, kubeconfig, "agent").get("numberReady") == everywhere,
                   "flaky's pods ready again", timeout=120)
    finally:
        flaky.stop()
