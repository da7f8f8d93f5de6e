"""kcp-deployment-splitter end to end: a kcp-apiserver and the splitter process, nothing else.

The tests play the cluster controller (SyncTargets' Ready and allocatable) and the syncers
(each share's status annotation on the root) through the kcp API, which is all the splitter sees. Each test works in a
logical cluster of its own; every wait polls a condition with a generous deadline.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from splitter_fixtures import (
    DEPLOYMENTS,
    STATE,
    SplitterProcess,
    deployment,
    event_with,
    replicas_of,
    report,
    set_ready,
    shares_on,
)
from syncer_fixtures import Rest, crd, create_sync_target, eventually, install_types

from kcp_process import KcpServer, cluster_kubeconfig, free_port, kubectl_binary, run_kubectl
from kcpcommon.sharding import owns

GRACE = 3  # seconds: the splitter's --grace-period and --capacity-grace-period here


def core_crd(plural: str, kind: str) -> dict[str, Any]:
    """A core-group type as the cluster controller imports it (kcp names those `<plural>.core`)."""
    definition = crd("", plural, kind)
    definition["metadata"]["name"] = f"{plural}.core"
    return definition


PDB_CRD = crd("policy", "poddisruptionbudgets", "PodDisruptionBudget")
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def install_core_types(rest: Rest) -> None:
    """Services, PVCs, StatefulSets and PodDisruptionBudgets, as imported from physical clusters."""
    for definition in (core_crd("services", "Service"), core_crd("persistentvolumeclaims", "PersistentVolumeClaim"),
                       crd("apps", "statefulsets", "StatefulSet"), PDB_CRD):
        status, body = rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", definition)
        assert status in (201, 409), (status, body)
    eventually(lambda: rest.request("GET", "/api/v1/namespaces/default/services")[0] == 200, "Services served")


@pytest.fixture(scope="module")
def splitter(kcp: KcpServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplitterProcess]:
    install_types(Rest(kcp).at("splitter-e2e"))  # so the wildcard informers find the types at once
    install_core_types(Rest(kcp).at("splitter-e2e"))
    process = SplitterProcess(kcp, tmp_path_factory.mktemp("splitter") / "splitter.log",
                              ["--no-leader-elect", "--grace-period", str(GRACE),
                               "--capacity-grace-period", str(GRACE), "--log-level", "debug"]).start()
    yield process
    assert process.stop() == 0, process.log_tail()


def fleet(kcp: KcpServer, *targets: str, allocatable: dict[str, dict[str, str]] | None = None,
          cluster: str = "") -> Rest:
    """A fresh logical cluster (`cluster`, or a random one) with the types installed and `targets` Ready."""
    rest = Rest(kcp).at(cluster or f"split-{uuid.uuid4().hex[:8]}")
    install_types(rest)
    for target in targets:
        create_sync_target(rest, target)
        extra = {"allocatable": allocatable[target]} if allocatable and target in allocatable else {}
        set_ready(rest, target, True, **extra)
    return rest


def root_status(rest: Rest, name: str) -> dict:
    return rest.get(f"{DEPLOYMENTS}/{name}").get("status") or {}


def condition(rest: Rest, name: str, type_: str) -> dict:
    return next((c for c in root_status(rest, name).get("conditions") or [] if c["type"] == type_), {})


def kubeconfig_for(kcp: KcpServer, rest: Rest) -> Path:
    return cluster_kubeconfig(kcp, rest.prefix.removeprefix("/clusters/"), uuid.uuid4().hex[:6])


def test_fifteen_replicas_split_over_two_clusters_and_their_status_adds_up_to_15_of_15(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    root = rest.create(DEPLOYMENTS, deployment("web", 15))
    split = eventually(lambda: replicas_of(rest, "web") == {"east": 8, "west": 7}, "web split 8/7")
    assert split
    placed = rest.get(f"{DEPLOYMENTS}/web")
    assert placed["metadata"]["uid"] == root["metadata"]["uid"]
    assert {k: v for k, v in placed["metadata"]["labels"].items() if k.startswith(STATE)} == {
        f"{STATE}east": "Sync", f"{STATE}west": "Sync"}
    assert placed["spec"] == root["spec"]  # the user's spec is the user's: the shares are in annotations
    assert placed["metadata"]["generation"] == 1
    # "split 15 replicas: east 8, west 7" (or, when the splitter saw west become Ready only after the root,
    # "split 15 replicas: east 15" then "spread 15 replicas: east 8, west 7")
    event_with(rest, "web", "15 replicas: east 8, west 7")
    assert condition(rest, "web", "Available").get("status") != "True"
    for target in ("east", "west"):
        report(rest, "web", target)
    eventually(lambda: root_status(rest, "web").get("readyReplicas") == 15, "root 15 ready")
    kubeconfig = kubeconfig_for(kcp, rest)
    table = run_kubectl(kcp, "get", "deployments", kubeconfig=kubeconfig).stdout
    rows = {line.split()[0]: line.split()[1] for line in table.splitlines()[1:]}
    assert rows == {"web": "15/15"}, table  # the user's Deployments, and nothing else
    run_kubectl(kcp, "rollout", "status", "deployment/web", "--timeout=60s", kubeconfig=kubeconfig)
    metrics = splitter.metrics()
    assert 'kcp_deployment_splitter_decisions_total{reason="Split"}' in metrics
    assert "kcp_deployment_splitter_reconcile_time_seconds" in metrics


def test_a_template_update_rolls_every_share_and_rollout_status_waits_for_all_of_them(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    rest.create(DEPLOYMENTS, deployment("app", 4))
    eventually(lambda: len(replicas_of(rest, "app")) == 2, "two shares")
    for target in ("east", "west"):
        report(rest, "app", target)
    eventually(lambda: root_status(rest, "app").get("observedGeneration") == 1 and
               root_status(rest, "app").get("availableReplicas") == 4, "root observed and available")
    rest.patch(f"{DEPLOYMENTS}/app", {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx:2"}]}}}})
    kubeconfig = kubeconfig_for(kcp, rest)
    rollout = subprocess.Popen([kubectl_binary(), "--kubeconfig", str(kubeconfig), "rollout", "status",
                                "deployment/app", "--timeout=120s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        report(rest, "app", "east")  # east rolled out, west has not seen the new spec yet
        eventually(lambda: "west" in condition(rest, "app", "Progressing").get("message", ""),
                   "Progressing names the lagging cluster")
        assert root_status(rest, "app")["observedGeneration"] == 1
        assert rollout.poll() is None, rollout.stdout.read() if rollout.stdout else ""
        report(rest, "app", "west")
        assert rollout.wait(90) == 0
        assert root_status(rest, "app")["observedGeneration"] == 2
    finally:
        if rollout.poll() is None:
            rollout.kill()


def test_a_lost_cluster_gives_its_replicas_to_the_others_after_the_new_share_is_available_and_gets_them_back(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    rest.create(DEPLOYMENTS, deployment("db", 15))
    eventually(lambda: replicas_of(rest, "db") == {"east": 8, "west": 7}, "split")
    report(rest, "db", "east")
    report(rest, "db", "west")
    set_ready(rest, "west", False)
    eventually(lambda: replicas_of(rest, "db") == {"east": 15, "west": 7}, "east grows first, west kept")
    event_with(rest, "db", "moved 7 replicas from west: NotReady for")
    report(rest, "db", "east")
    eventually(lambda: replicas_of(rest, "db") == {"east": 15}, "west's share goes once east is available")
    eventually(lambda: root_status(rest, "db").get("availableReplicas") == 15, "15 available on east")
    set_ready(rest, "west", True)
    eventually(lambda: replicas_of(rest, "db") == {"east": 15, "west": 7}, "west grows back first")
    report(rest, "db", "west")
    eventually(lambda: replicas_of(rest, "db") == {"east": 8, "west": 7}, "back to 8/7")


def test_with_no_ready_cluster_the_root_says_so_and_the_shares_stay(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    rest.create(DEPLOYMENTS, deployment("api", 3))
    eventually(lambda: replicas_of(rest, "api") == {"east": 2, "west": 1}, "split")
    set_ready(rest, "east", False)
    set_ready(rest, "west", False)
    failure = eventually(lambda: condition(rest, "api", "ReplicaFailure") or None, "ReplicaFailure condition")
    assert failure["reason"] == "NoSchedulableSyncTarget" and "stay on east, west" in failure["message"]
    assert replicas_of(rest, "api") == {"east": 2, "west": 1}
    set_ready(rest, "east", True)
    eventually(lambda: not condition(rest, "api", "ReplicaFailure"), "condition cleared")


def test_a_new_ready_cluster_gets_a_share_a_cordoned_one_keeps_it_and_an_evicted_one_gives_it_back(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east")
    rest.create(DEPLOYMENTS, deployment("svc", 6))
    eventually(lambda: replicas_of(rest, "svc") == {"east": 6}, "all on east")
    report(rest, "svc", "east")
    create_sync_target(rest, "west")
    set_ready(rest, "west", True)
    eventually(lambda: replicas_of(rest, "svc") == {"east": 6, "west": 3}, "west grows first")
    report(rest, "svc", "west")
    eventually(lambda: replicas_of(rest, "svc") == {"east": 3, "west": 3}, "respread 3/3")
    # cordon: what west holds stays, a new Deployment goes to east only
    rest.patch("/apis/workload.kcp.io/v1alpha1/synctargets/west", {"spec": {"unschedulable": True}})
    rest.create(DEPLOYMENTS, deployment("later", 4))
    eventually(lambda: replicas_of(rest, "later") == {"east": 4}, "the new Deployment avoids the cordoned west")
    assert replicas_of(rest, "svc") == {"east": 3, "west": 3}
    # evict: west's share moves to east
    rest.patch("/apis/workload.kcp.io/v1alpha1/synctargets/west",
               {"spec": {"evictAfter": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}})
    eventually(lambda: replicas_of(rest, "svc")["east"] == 6, "east takes west's share")
    event_with(rest, "svc", "moved 3 replicas from west: evicted after")


def test_scaling_the_root_rescales_the_shares(kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    rest.create(DEPLOYMENTS, deployment("scale", 4))
    eventually(lambda: replicas_of(rest, "scale") == {"east": 2, "west": 2}, "2/2")
    rest.patch(f"{DEPLOYMENTS}/scale", {"spec": {"replicas": 9}})
    eventually(lambda: replicas_of(rest, "scale") == {"east": 5, "west": 4}, "5/4")
    rest.patch(f"{DEPLOYMENTS}/scale", {"spec": {"replicas": 1}})
    eventually(lambda: replicas_of(rest, "scale") == {"east": 1}, "1 on east, west's share gone")


def test_the_placement_annotation_restricts_and_weighs_and_pinned_deployments_are_left_alone(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west", "north")
    rest.create(DEPLOYMENTS, deployment("w", 15, **{"splitter.kcp.io/placement": "east=2,west=3"}))
    eventually(lambda: replicas_of(rest, "w") == {"east": 6, "west": 9}, "6/9 by weight, none on north")
    pinned = deployment("pinned", 5)
    pinned["metadata"]["labels"]["workloads.kcp.io/cluster"] = "north"
    rest.create(DEPLOYMENTS, pinned)
    rest.create(DEPLOYMENTS, deployment("bad", 2, **{"splitter.kcp.io/placement": "east=x"}))
    failure = eventually(lambda: condition(rest, "bad", "ReplicaFailure") or None, "InvalidPlacement")
    assert failure["reason"] == "InvalidPlacement"
    assert replicas_of(rest, "bad") == {}
    assert replicas_of(rest, "pinned") == {}
    assert "status" not in rest.get(f"{DEPLOYMENTS}/pinned") or not rest.get(f"{DEPLOYMENTS}/pinned")["status"]


def test_replicas_a_cluster_has_no_room_for_go_where_there_is_room(kcp: KcpServer,
                                                                   splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "big", "small", allocatable={"big": {"cpu": "64", "pods": "110"},
                                                  "small": {"cpu": "2", "pods": "110"}})
    sized = deployment("heavy", 10)
    sized["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    rest.create(DEPLOYMENTS, sized)
    eventually(lambda: replicas_of(rest, "heavy") == {"big": 6, "small": 4}, "small holds 4 (2 cpu / 500m)")
    # pods that stay Unschedulable: all created, some never available, for the capacity grace period
    rest.create(DEPLOYMENTS, deployment("light", 10))
    eventually(lambda: replicas_of(rest, "light") == {"big": 5, "small": 5}, "5/5")
    report(rest, "light", "big")
    report(rest, "light", "small", ready=2)
    eventually(lambda: replicas_of(rest, "light") == {"big": 8, "small": 2}, "3 move to big")
    event_with(rest, "light", "moved 3 replicas from small: it runs 2 of 5")


def test_a_disruption_budget_keeps_the_old_cluster_s_replicas_while_the_new_one_runs_fewer_than_it_needs(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west", allocatable={"west": {"cpu": "64", "pods": "2"}})
    install_types(rest, PDB_CRD)  # a SyncTarget imported poddisruptionbudgets.policy
    rest.create(PDBS, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard"},
                       "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "guarded"}}}})
    rest.create(DEPLOYMENTS, deployment("guarded", 4, **{"splitter.kcp.io/placement": "east"}))
    eventually(lambda: replicas_of(rest, "guarded") == {"east": 4}, "all on east")
    report(rest, "guarded", "east")
    rest.patch(f"{DEPLOYMENTS}/guarded", {"metadata": {"annotations": {"splitter.kcp.io/placement": "west"}}})
    eventually(lambda: replicas_of(rest, "guarded") == {"east": 4, "west": 4}, "west grows first")
    report(rest, "guarded", "west", ready=2)  # west has room for 2 pods: its share is as available as it gets
    # without the budget east's share would go now, leaving 2 available; minAvailable 3 keeps 1 there
    eventually(lambda: replicas_of(rest, "guarded") == {"east": 1, "west": 4}, "east keeps 1 for the budget")
    event_with(rest, "guarded", "would violate the pod's disruption budget \"guard\"")
    eventually(lambda: "Kept 1 replicas (1 on east)" in condition(rest, "guarded", "Progressing").get("message", ""),
               "Progressing names the budget holding east")
    report(rest, "guarded", "east")  # its syncer reports the share at its new size: the splitter sums it, keeps it
    eventually(lambda: root_status(rest, "guarded").get("availableReplicas") == 3, "3 available: 1 east, 2 west")
    assert replicas_of(rest, "guarded") == {"east": 1, "west": 4}
    assert "disruption budget" in condition(rest, "guarded", "Progressing")["message"]
    rest.delete(f"{PDBS}/guard")  # no budget: the move completes, as it would have at once without one
    eventually(lambda: replicas_of(rest, "guarded") == {"west": 4}, "east's share goes once the budget is gone")


def test_hand_edits_of_the_shares_are_repaired_and_the_user_s_own_edits_are_kept(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    rest.create(DEPLOYMENTS, deployment("fix", 4))
    eventually(lambda: replicas_of(rest, "fix") == {"east": 2, "west": 2}, "split")
    rest.patch(f"{DEPLOYMENTS}/fix", {"metadata": {
        "labels": {f"{STATE}west": None, "team": "blue"},
        "annotations": {"experimental.spec-diff.workload.kcp.io/east": '[{"op":"replace","path":"/replicas","value":9}]'}}})
    eventually(lambda: replicas_of(rest, "fix") == {"east": 2, "west": 2}, "the shares put back")
    assert rest.get(f"{DEPLOYMENTS}/fix")["metadata"]["labels"]["team"] == "blue"
    # `kubectl replace` of the user's manifest (a PUT without kcp's keys) keeps the shares: no copy is unassigned
    manifest = deployment("fix", 4)
    manifest["metadata"]["resourceVersion"] = rest.get(f"{DEPLOYMENTS}/fix")["metadata"]["resourceVersion"]
    status, replaced = rest.request("PUT", f"{DEPLOYMENTS}/fix", manifest)
    assert status == 200, replaced
    assert shares_on(replaced) == {"east": 2, "west": 2} and "team" not in replaced["metadata"]["labels"]
    assert rest.delete(f"{DEPLOYMENTS}/fix") == 200
    eventually(lambda: rest.request("GET", f"{DEPLOYMENTS}/fix")[0] == 404, "the root goes, and its shares with it")


def placed_on(rest: Rest, path: str) -> set[str]:
    labels = (rest.get(path) or {}).get("metadata", {}).get("labels") or {}
    return {k.removeprefix("state.workload.kcp.io/") for k, v in labels.items()
            if k.startswith("state.workload.kcp.io/") and v == "Sync"}


def test_dependencies_follow_the_workload_to_every_cluster_and_leave_with_it_unless_still_used(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    install_core_types(rest)
    rest.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "web-config"}, "data": {"a": "1"}})
    rest.create("/api/v1/namespaces/default/secrets", {"metadata": {"name": "web-tls"}, "stringData": {"k": "v"}})
    rest.create("/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "web-sa"}})
    rest.create("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "unused"}})
    rest.create("/api/v1/namespaces/default/services", {"apiVersion": "v1", "kind": "Service",
                                                         "metadata": {"name": "web"},
                                                         "spec": {"selector": {"app": "dep"}}})
    root = deployment("dep", 2)
    pod = root["spec"]["template"]["spec"]
    pod["serviceAccountName"] = "web-sa"
    pod["containers"][0]["envFrom"] = [{"configMapRef": {"name": "web-config"}}]
    pod["volumes"] = [{"name": "tls", "secret": {"secretName": "web-tls"}}]
    rest.create(DEPLOYMENTS, root)
    eventually(lambda: replicas_of(rest, "dep") == {"east": 1, "west": 1}, "split 1/1")
    for path in ("/api/v1/namespaces/default/configmaps/web-config", "/api/v1/namespaces/default/secrets/web-tls",
                 "/api/v1/namespaces/default/serviceaccounts/web-sa", "/api/v1/namespaces/default/services/web"):
        eventually(lambda path=path: placed_on(rest, path) == {"east", "west"}, f"{path} on east and west")
    assert placed_on(rest, "/api/v1/namespaces/default/configmaps/unused") == set()
    # a pinned workload on west also mounts the Secret: it stays there when dep leaves west
    pinned = deployment("pinned-user", 1)
    pinned["metadata"]["labels"]["workloads.kcp.io/cluster"] = "west"
    pinned["spec"]["template"]["spec"]["volumes"] = [{"name": "tls", "secret": {"secretName": "web-tls"}}]
    rest.create(DEPLOYMENTS, pinned)
    rest.patch(f"{DEPLOYMENTS}/dep", {"spec": {"replicas": 1}})
    eventually(lambda: replicas_of(rest, "dep") == {"east": 1}, "dep only on east")
    eventually(lambda: placed_on(rest, "/api/v1/namespaces/default/configmaps/web-config") == {"east"},
               "the ConfigMap leaves west with the workload")
    assert placed_on(rest, "/api/v1/namespaces/default/secrets/web-tls") == {"east", "west"}
    # the Service stays where a pod of its namespace may call it by name (pinned-user on west), and goes with it
    assert placed_on(rest, "/api/v1/namespaces/default/services/web") == {"east", "west"}
    rest.delete(f"{DEPLOYMENTS}/pinned-user")
    eventually(lambda: placed_on(rest, "/api/v1/namespaces/default/services/web") == {"east"},
               "the Service leaves west with the last workload there")


def assigned(rest: Rest, path: str) -> str | None:
    return ((rest.get(path) or {}).get("metadata", {}).get("labels") or {}).get("workloads.kcp.io/cluster")


def namespace_condition(rest: Rest, name: str) -> dict[str, Any]:
    namespace = rest.get(f"/api/v1/namespaces/{name}") or {}
    return next((c for c in (namespace.get("status") or {}).get("conditions") or []
                 if c["type"] == "NamespaceScheduled"), {})


def test_other_objects_follow_their_namespace_to_one_cluster_which_moves_when_it_is_lost(
        kcp: KcpServer, splitter: SplitterProcess) -> None:
    rest = fleet(kcp, "east", "west")
    install_core_types(rest)
    status, body = rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                crd("apps", "replicasets", "ReplicaSet"))
    assert status in (201, 409), (status, body)
    eventually(lambda: rest.request("GET", "/apis/apps/v1/namespaces/default/replicasets")[0] == 200,
               "ReplicaSets served")
    for name, labels in (("apps", {}), ("manual", {"scheduling.kcp.io/disabled": "true"})):
        rest.create("/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"replicas": 1}}
    rest.create("/apis/apps/v1/namespaces/apps/statefulsets", sts)
    rest.create("/apis/apps/v1/namespaces/apps/replicasets",  # a person's own ReplicaSet (no Deployment's)
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "frontend"}, "spec": {"replicas": 1}})
    rest.create("/api/v1/namespaces/apps/configmaps", {"metadata": {"name": "loose"}})
    pinned = {"metadata": {"name": "mine", "labels": {"workloads.kcp.io/cluster": "nowhere"}}}
    rest.create("/api/v1/namespaces/apps/configmaps", pinned)
    rest.create("/api/v1/namespaces/manual/configmaps", {"metadata": {"name": "loose"}})
    first = eventually(lambda: assigned(rest, "/api/v1/namespaces/apps"), "namespace apps scheduled")
    assert namespace_condition(rest, "apps")["status"] == "True"
    for path in ("/apis/apps/v1/namespaces/apps/statefulsets/db", "/api/v1/namespaces/apps/configmaps/loose",
                 "/apis/apps/v1/namespaces/apps/replicasets/frontend"):
        eventually(lambda path=path: assigned(rest, path) == first, f"{path} follows its namespace to {first}")
    assert assigned(rest, "/api/v1/namespaces/apps/configmaps/mine") == "nowhere"
    assert assigned(rest, "/api/v1/namespaces/manual") is None
    assert assigned(rest, "/api/v1/namespaces/manual/configmaps/loose") is None
    other = "west" if first == "east" else "east"
    set_ready(rest, first, False)
    eventually(lambda: assigned(rest, "/api/v1/namespaces/apps") == other, "moved after the grace period")
    eventually(lambda: assigned(rest, "/apis/apps/v1/namespaces/apps/statefulsets/db") == other, "objects follow")
    set_ready(rest, other, False)
    unschedulable = eventually(lambda: (c := namespace_condition(rest, "apps")).get("status") == "False" and c,
                               "NamespaceScheduled=False")
    assert unschedulable["reason"] == "Unschedulable" and first in unschedulable["message"]
    assert assigned(rest, "/apis/apps/v1/namespaces/apps/statefulsets/db") == other  # stays where it is


def test_two_replicas_elect_one_leader_and_the_standby_takes_over_after_kill_9(
        tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port())
    server.start()
    elected: list[SplitterProcess] = []
    try:
        rest = fleet(server, "east", "west")
        flags = ["--leader-elect", "--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
                 "--leader-elect-retry-period", "0.5"]
        elected = [SplitterProcess(server, tmp_path / f"splitter-{i}.log", flags).start(wait_ready=False)
                   for i in range(2)]
        eventually(lambda: all(p.healthy() for p in elected), "both replicas serve /healthz")
        rest.create(DEPLOYMENTS, deployment("one", 2))
        eventually(lambda: replicas_of(rest, "one") == {"east": 1, "west": 1}, "split by the leader")

        def acting() -> list[SplitterProcess]:
            return [p for p in elected if p.alive() and 'reason="Split"} 1.0' in p.metrics()]
        leaders = eventually(acting, "one replica counted the decision")
        assert len(leaders) == 1
        leader = leaders[0]
        standby = next(p for p in elected if p is not leader)
        assert 'reason="Split"} 1.0' not in standby.metrics()
        leader.kill()
        rest.create(DEPLOYMENTS, deployment("two", 2))
        eventually(lambda: replicas_of(rest, "two") == {"east": 1, "west": 1}, "split by the new leader", timeout=90)
        assert 'reason="Split"} 1.0' in standby.metrics()
    finally:
        for process in elected:
            process.stop()
        server.stop()


# a 3 s lease, so a handover takes seconds rather than client-go's 15; a renew deadline close to it, so a
# leader slowed down by a busy machine keeps its lease
FAST_ELECTION = ["--leader-elect", "--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2.5",
                 "--leader-elect-retry-period", "0.5"]
SPLIT = {"east": 1, "west": 1}


def lease_holder(rest: Rest, lease: str) -> str:
    """The holder identity of a leader election Lease in `admin` ("" while free or missing)."""
    body = rest.get(f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{lease}")
    return str(((body or {}).get("spec") or {}).get("holderIdentity") or "")


def test_two_shards_of_two_replicas_each_lead_at_once_and_a_killed_shard_leader_hands_over(tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port())
    server.start()
    processes: dict[int, list[SplitterProcess]] = {}
    try:
        admin = Rest(server)
        names = [f"shard-{uuid.uuid4().hex[:8]}" for _ in range(16)]
        tenant = {shard: fleet(server, "east", "west", cluster=next(n for n in names if owns(n, shard, 2)))
                  for shard in (0, 1)}
        processes = {shard: [SplitterProcess(server, tmp_path / f"splitter-{shard}-{replica}.log", [
            *FAST_ELECTION, "--shards", "2", "--shard-index", str(shard)]).start(wait_ready=False)
            for replica in (0, 1)] for shard in (0, 1)}
        everyone = processes[0] + processes[1]
        eventually(lambda: all(p.healthy() for p in everyone), "all four replicas serve /healthz")
        for rest in tenant.values():
            rest.create(DEPLOYMENTS, deployment("one", 2))
        for shard, rest in tenant.items():  # with one Lease for both shards, one tenant's would stay unsplit
            eventually(lambda rest=rest: replicas_of(rest, "one") == SPLIT, f"shard {shard}'s Deployment split")

        def leader(shard: int) -> SplitterProcess | None:
            holder = lease_holder(admin, f"kcp-deployment-splitter-shard-{shard}")
            return next((p for p in processes[shard] if p.holds(holder)), None)
        leaders = {shard: eventually(lambda shard=shard: leader(shard), f"shard {shard}'s leader") for shard in (0, 1)}
        assert lease_holder(admin, "kcp-deployment-splitter") == ""  # no Lease shared by the shards

        killed = leaders[0]
        standby = next(p for p in processes[0] if p is not killed)
        killed.kill()  # kill -9: no release, the standby waits the lease out
        for rest in tenant.values():
            rest.create(DEPLOYMENTS, deployment("two", 2))
        eventually(lambda: leader(0) is standby, "shard 0's standby took the lease")
        eventually(lambda: replicas_of(tenant[0], "two") == SPLIT, "split by shard 0's new leader")
        eventually(lambda: replicas_of(tenant[1], "two") == SPLIT, "split by shard 1's leader, unaffected")
        assert leader(1) in processes[1]
        assert 'reason="Split"} 1.0' in standby.metrics()  # the standby did the split, nobody else in shard 0
    finally:
        for process in processes.get(0, []) + processes.get(1, []):
            process.stop()
        server.stop()
