"""Shared compute (issue 25), end to end with real processes: kcp, one kcp-sim-cluster serving three clusters, the
cluster controller (push mode) and the deployment splitter.

An admin registers the three clusters once, as SyncTargets of the compute workspace (two regions), groups them in
Locations `eu` and `us`, and offers the workload APIs as the APIExport `kubernetes`. Three teams, each a user
with its own workspace: A may bind both Locations, B only `eu`, C none. A and B bind the APIs, place their
namespaces with a Placement and run Deployments without any cluster's kubeconfig; C's binding is refused and its
Placement says why. A then moves its namespace from `eu` to `us` by changing its Placement's selector: the
Deployment's available replicas, sampled every 100 ms, never drop below `replicas - maxUnavailable`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from compute_fixtures import COMPUTE, CONTROLLER, apply, bind_role, binding, compute_fleet, kubeconfig, kubectl
from daemon_process import ClusterControllerProcess
from splitter_fixtures import available_shares
from syncer_fixtures import eventually

from kcp_process import KcpServer, run_kubectl
from kcpsyncer import DEFAULT_RESOURCES

USERS = {"alice-token": ("alice", "team-a"), "bob-token": ("bob", "team-b"), "carol-token": ("carol", "team-c")}
TEAMS = {"a": "alice-token", "b": "bob-token", "c": "carol-token"}
REGIONS = {"eu-1": "eu", "eu-2": "eu", "us-1": "us"}


@dataclass
class Env:
    kcp: KcpServer
    sim: KcpServer
    controller: ClusterControllerProcess
    admin: dict[str, Path]  # workspace -> kcp-admin's kubeconfig there
    team: dict[str, Path]  # team -> its user's kubeconfig in its workspace


def placement(name: str, region: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"locationWorkspace": COMPUTE, "namespaceSelector": {}}
    if region:
        spec["locationSelectors"] = [{"matchLabels": {"region": region}}]
    return {"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Placement", "metadata": {"name": name},
            "spec": spec}


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "strategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with compute_fleet(tmp_path_factory.mktemp("shared-compute"), USERS, len(REGIONS)) as fleet:
        kcp = fleet.kcp
        admin = {ws: kubeconfig(kcp, ws, f"admin-{ws}") for ws in (COMPUTE, "team-a", "team-b", "team-c")}
        team = {t: kubeconfig(kcp, f"team-{t}", f"user-{t}", token) for t, token in TEAMS.items()}
        yield Env(kcp, fleet.sim, fleet.controller, admin, team)


@pytest.fixture(scope="module")
def compute(env: Env) -> Env:
    """The admin's part: SyncTargets, Locations, the `kubernetes` export, who may bind what, each team's admin."""
    compute = env.admin[COMPUTE]
    for file in ("synctarget-crd.yaml", "location-crd.yaml"):
        kubectl(env, compute, "apply", "-f", str(CONTROLLER / file))
    eventually(lambda: run_kubectl(env.kcp, "get", "locations", kubeconfig=compute, check=False).returncode == 0,
               "Locations served in the compute workspace")
    fleet = env.sim.root
    apply(env, compute, *({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                           "metadata": {"name": name, "labels": {"region": region}},
                           "spec": {"kubeconfig": (fleet / f"sim-{i}.kubeconfig").read_text(),
                                    "resources": [*DEFAULT_RESOURCES, "poddisruptionbudgets.policy"]}}
                          for i, (name, region) in enumerate(REGIONS.items(), start=1)))
    apply(env, compute, *({"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Location",
                           "metadata": {"name": region, "labels": {"region": region}},
                           "spec": {"instanceSelector": {"matchLabels": {"region": region}}}}
                          for region in ("eu", "us")))
    apply(env, compute, {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                         "metadata": {"name": "kubernetes"}, "spec": {}})
    apply(env, compute, *bind_role("bind-workloads-a", "apis.kcp.io", "apiexports", ["kubernetes"], "team-a"),
          *bind_role("bind-workloads-b", "apis.kcp.io", "apiexports", ["kubernetes"], "team-b"),
          *bind_role("bind-scheduling", "apis.kcp.io", "apiexports", ["scheduling.kcp.io"], "system:authenticated"),
          *bind_role("bind-everywhere-a", "scheduling.kcp.io", "locations", ["eu", "us"], "team-a"),
          *bind_role("bind-eu-b", "scheduling.kcp.io", "locations", ["eu"], "team-b"))
    for name in REGIONS:
        kubectl(env, compute, "wait", f"synctarget/{name}", "--for=condition=Ready", "--timeout=120s")
    eventually(lambda: ".deployments.apps" in kubectl(env, compute, "get", "apiexport", "kubernetes", "-o",
                                                       "jsonpath={.spec.latestResourceSchemas}", check=False),
               "the export offers the imported types", timeout=90)
    for team, (user, _) in zip(TEAMS, USERS.values(), strict=True):
        kubectl(env, env.admin[f"team-{team}"], "create", "clusterrolebinding", f"{user}-admin",
                "--clusterrole=cluster-admin", f"--user={user}")
    return env


def placement_status(env: Env, team: str, name: str) -> dict[str, Any]:
    return json.loads(kubectl(env, env.team[team], "get", "placement", name, "-o", "json")).get("status") or {}


def test_teams_run_on_clusters_they_never_registered_and_only_where_they_may(compute: Env) -> None:
    env = compute
    for team in ("a", "b"):
        apply(env, env.team[team], binding("kubernetes"), binding("scheduling.kcp.io"))
        kubectl(env, env.team[team], "wait", "apibinding/kubernetes", "apibinding/scheduling.kcp.io",
                "--for=condition=Ready", "--timeout=60s")
    refused = run_kubectl(env.kcp, "apply", "-f", "-", kubeconfig=env.team["c"],
                          input_text=json.dumps(binding("kubernetes")), check=False)
    assert refused.returncode != 0 and 'cannot bind APIExport "kubernetes"' in refused.stderr, refused.stderr
    apply(env, env.team["c"], binding("scheduling.kcp.io"))
    kubectl(env, env.team["c"], "wait", "apibinding/scheduling.kcp.io", "--for=condition=Ready", "--timeout=60s")

    apply(env, env.team["a"], placement("anywhere", "eu"))
    apply(env, env.team["b"], placement("europe", "eu"))
    apply(env, env.team["c"], placement("wishful", None))
    refusal = eventually(lambda: next((c for c in placement_status(env, "c", "wishful").get("conditions") or []
                                       if c["type"] == "BindPermitted"), None), "team C's Placement judged")
    assert refusal["status"] == "False" and refusal["reason"] == "BindForbidden"
    assert 'User "carol" may not bind Locations eu, us of workspace "compute"' in refusal["message"]
    assert placement_status(env, "c", "wishful")["phase"] == "Pending"
    for team, name in (("a", "anywhere"), ("b", "europe")):
        eventually(lambda team=team, name=name: placement_status(env, team, name).get("phase") == "Bound",
                   f"team {team}'s Placement Bound")
        assert set(placement_status(env, team, name)["syncTargets"]) == {"eu-1", "eu-2"}

    apply(env, env.team["b"], placement("later", "eu"))  # selects the same namespaces: the older one governs
    conflict = eventually(lambda: next((c for c in placement_status(env, "b", "later").get("conditions") or []
                                        if c["type"] == "NamespacesPlaced"), None), "the conflict reported")
    assert (conflict["status"], conflict["reason"]) == ("False", "Conflict") and "default" in conflict["message"]
    assert placement_status(env, "b", "later")["phase"] == "Unbound"
    kubectl(env, env.team["b"], "delete", "placement", "later")
    for team in ("a", "b"):
        apply(env, env.team[team], deployment("web", 4),
              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"team": team}})
    for team in ("a", "b"):
        kubectl(env, env.team[team], "wait", "deployment/web", "--for=jsonpath={.status.availableReplicas}=4",
                "--timeout=120s")
    ns = {t: json.loads(kubectl(env, env.team[t], "get", "namespace", "default", "-o", "json")) for t in ("a", "b")}
    for team in ("a", "b"):
        labels = ns[team]["metadata"]["labels"]
        assert labels["workloads.kcp.io/cluster"] in ("eu-1", "eu-2")
    # one syncer per physical cluster, whatever the number of teams: one heartbeat each, from the compute
    # workspace, and the two teams among the workspaces those syncers serve
    metrics = env.controller.metrics()
    beats = re.findall(r'kcp_syncer_last_heartbeat_timestamp_seconds\{logical_cluster="([^"]+)",sync_target="([^"]+)"',
                       metrics)
    assert sorted(beats) == [(COMPUTE, name) for name in sorted(REGIONS)], beats
    served = {m[0]: float(m[1]) for m in re.findall(
        r'kcp_syncer_placed_workspaces\{logical_cluster="compute",sync_target="([^"]+)"\} (\S+)', metrics)}
    assert sum(served.values()) == 2 and served.get("us-1", 0) == 0, served
    # neither team reaches the other's workspace
    other = run_kubectl(env.kcp, "get", "deployments", "--server",
                        env.kcp.url + "/clusters/team-b", kubeconfig=env.team["a"], check=False)
    assert other.returncode != 0 and "Forbidden" in other.stderr, other.stderr


def test_changing_one_attribute_moves_a_team_without_disruption(compute: Env) -> None:
    env = compute
    kubectl(env, env.team["a"], "wait", "deployment/web", "--for=jsonpath={.status.availableReplicas}=4",
            "--timeout=120s")
    low: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            out = run_kubectl(env.kcp, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}",
                              kubeconfig=env.team["a"], check=False).stdout
            low.append(int(out or 0))
            time.sleep(0.1)

    apply(env, env.team["a"], {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                               "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}}})
    sampler = threading.Thread(target=watch, daemon=True)
    sampler.start()
    try:
        apply(env, env.team["a"], placement("anywhere", "us"))
        eventually(lambda: set(placement_status(env, "a", "anywhere").get("syncTargets") or []) == {"us-1"},
                   "the Placement uses us-1 only")

        def moved() -> bool:
            return shares_of(env, "a") == {"us-1": 4}

        eventually(moved, "web moved to us-1 and available there", timeout=120)
        namespace = json.loads(kubectl(env, env.team["a"], "get", "namespace", "default", "-o", "json"))
        assert namespace["metadata"]["labels"]["workloads.kcp.io/cluster"] == "us-1"
        eventually(lambda: not any(v == "Draining" for k, v in json.loads(kubectl(
            env, env.team["a"], "get", "namespace", "default", "-o", "json"))["metadata"]["labels"].items()
            if k.startswith("placed.workload.kcp.io/")), "the namespace left eu", timeout=60)
    finally:
        stop.set()
        sampler.join()
    assert low and min(low) >= 3, low  # replicas - maxUnavailable, and the PodDisruptionBudget's minAvailable
    events = kubectl(env, env.team["a"], "get", "events", "-A", "--field-selector", "reason=Placed")
    assert "us-1" in events, events


def available(env: Env, team: str) -> int:
    out = run_kubectl(env.kcp, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}",
                      kubeconfig=env.team[team], check=False).stdout
    return int(out or 0)


def shares_of(env: Env, team: str) -> dict[str, int]:
    """Available replicas of team's `web` per SyncTarget it has a share on."""
    return available_shares(json.loads(kubectl(env, env.team[team], "get", "deployment", "web", "-o", "json")))


def test_a_decommissioned_cluster_empties_without_disruption(compute: Env) -> None:
    """The admin cordons the cluster carrying team B (and part of team A): what runs there stays, a new namespace
    goes elsewhere. Then evicts it: every workspace's workloads move off it, make-before-break, its SyncTarget
    shows the drain (`status.eviction`, `status.servedWorkspaces` down to 0) and ends `Evicted`, and the physical
    cluster ends with nothing of any team."""
    env = compute
    apply(env, env.team["a"], {**placement("anywhere", None), "spec": {
        "locationWorkspace": COMPUTE, "namespaceSelector": {}, "numberOfClusters": 3}})
    eventually(lambda: set(shares_of(env, "a")) == set(REGIONS) and available(env, "a") == 4,
               "team A spread over the three clusters", timeout=120)
    carrying = kubectl(env, env.team["b"], "get", "namespace", "default", "-o",
                       "jsonpath={.metadata.labels.workloads\\.kcp\\.io/cluster}")
    assert carrying in ("eu-1", "eu-2")
    other = "eu-2" if carrying == "eu-1" else "eu-1"
    cluster = env.sim.root / f"sim-{list(REGIONS).index(carrying) + 1}.kubeconfig"
    eventually(lambda: int(kubectl(env, env.admin[COMPUTE], "get", "synctarget", carrying, "-o",
                                   "jsonpath={.status.servedWorkspaces}") or 0) == 2, "it serves teams A and B")
    low: dict[str, list[int]] = {"a": [], "b": []}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for team in low:
                low[team].append(available(env, team))
            time.sleep(0.1)

    def eviction() -> dict[str, Any]:
        return json.loads(kubectl(env, env.admin[COMPUTE], "get", "synctarget", carrying, "-o", "json")).get(
            "status", {}).get("eviction") or {}

    kubectl(env, env.admin[COMPUTE], "patch", "synctarget", carrying, "--type=merge", "-p",
            '{"spec":{"unschedulable":true}}')
    cordoned = eventually(lambda: (e := eviction()).get("phase") == "Cordoned" and e, "the SyncTarget shows Cordoned")
    # team A's and team B's web; the compute workspace's own `default` counts too when the namespace rule put it there
    assert cordoned["deployments"] == 2 and cordoned["workspaces"] in (2, 3), cordoned
    kubectl(env, env.team["a"], "create", "namespace", "fresh")

    def placed_on(team: str, namespace: str) -> int:
        labels = json.loads(kubectl(env, env.team[team], "get", "namespace", namespace, "-o", "json"))[
            "metadata"].get("labels") or {}
        return sum(1 for k, v in labels.items() if k.startswith("placed.workload.kcp.io/") and v == "Placed")

    eventually(lambda: placed_on("a", "fresh") == 2, "a new namespace of team A goes to the two others only")
    assert placed_on("a", "default") == 3 and shares_of(env, "b") == {carrying: 4}  # the cordon moved nothing
    sampler = threading.Thread(target=watch, daemon=True)
    sampler.start()
    try:
        begun = time.monotonic()
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        kubectl(env, env.admin[COMPUTE], "patch", "synctarget", carrying, "--type=merge", "-p",
                json.dumps({"spec": {"evictAfter": now}}))
        eventually(lambda: shares_of(env, "b") == {other: 4}, "team B moved to the other eu cluster", timeout=120)
        eventually(lambda: set(shares_of(env, "a")) == {other, "us-1"} and available(env, "a") == 4,
                   "team A off the decommissioned cluster", timeout=120)
        eventually(lambda: kubectl(env, env.admin[COMPUTE], "get", "synctarget", carrying, "-o",
                                   "jsonpath={.status.servedWorkspaces}") == "0", "its SyncTarget serves no team",
                   timeout=60)

        def empty() -> bool:
            left = json.loads(run_kubectl(env.sim, "get", "deployments,replicasets,pods,configmaps", "-A", "-o",
                                          "json", kubeconfig=cluster).stdout)["items"]
            return not [o for o in left if o["metadata"].get("namespace", "").startswith("kcp-")]

        eventually(empty, "nothing of any team left on the decommissioned cluster", timeout=60)
        emptied = time.monotonic() - begun
        done = eventually(lambda: (e := eviction()).get("phase") == "Evicted" and e, "the SyncTarget shows Evicted")
        assert (done["workspaces"], done["namespaces"], done["deployments"]) == (0, 0, 0), done
    finally:
        stop.set()
        sampler.join()
    for team, samples in low.items():
        assert samples and min(samples) >= 3, (team, samples)  # replicas - maxUnavailable
    assert emptied < 60, emptied


def test_capacity_bounds_overflow_to_another_cluster_then_hold_replicas_until_raised(compute: Env) -> None:
    """After the decommission team A runs on the other eu cluster and us-1, team B (4 pods) on that eu cluster. A
    bound on us-1 sends A's replicas over it to the eu cluster; with both bounded, a scale-up's replicas that fit
    nowhere wait (`ReplicaFailure`, `CapacityBoundsReached`); raising the bound places them."""
    env = compute
    evicted = [t for t in REGIONS if kubectl(env, env.admin[COMPUTE], "get", "synctarget", t, "-o",
                                              "jsonpath={.spec.evictAfter}")]
    eu = next(t for t in REGIONS if REGIONS[t] == "eu" and t not in evicted)
    eventually(lambda: shares_of(env, "a") == {eu: 2, "us-1": 2}, "team A split over the two clusters left",
               timeout=60)

    def bound(target: str, pods: int) -> None:
        kubectl(env, env.admin[COMPUTE], "patch", "synctarget", target, "--type=merge", "-p",
                json.dumps({"spec": {"capacityBounds": {"pods": str(pods)}}}))

    bound("us-1", 1)
    eventually(lambda: shares_of(env, "a") == {eu: 3, "us-1": 1}, "A's replicas over us-1's bound go to eu",
               timeout=60)
    bound(eu, 7)  # team B's 4 and team A's 3: full
    kubectl(env, env.team["a"], "scale", "deployment/web", "--replicas=6")

    def failure() -> dict[str, Any]:
        status = json.loads(kubectl(env, env.team["a"], "get", "deployment", "web", "-o", "json")).get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["type"] == "ReplicaFailure"), {})

    held = eventually(lambda: (c := failure()).get("reason") == "CapacityBoundsReached" and c,
                      "the replicas over every bound wait, said on the Deployment", timeout=60)
    assert "2 replica(s) wait for room" in held["message"] and "us-1 (pods=1)" in held["message"], held
    assert shares_of(env, "a") == {eu: 3, "us-1": 1}
    assert sum(shares_of(env, "b").values()) == 4  # team B keeps what it had under the same bound
    bound("us-1", 10)
    eventually(lambda: shares_of(env, "a") == {eu: 3, "us-1": 3} and not failure(),
               "raising the bound places the waiting replicas", timeout=60)
