"""A per-team pods quota on a Location (issue 25's capacity bounds), end to end with real processes: kcp, one
kcp-sim-cluster serving two clusters, the cluster controller (push mode) and the deployment splitter.

The admin registers both clusters in the compute workspace, groups them in Location `eu` with a quota of 6 pods for
team B's workspace, and offers the workload APIs as the export `kubernetes`. Team B places its namespaces on `eu`
and runs a Deployment of 4 replicas; scaling it to 8, or applying a second Deployment of 3, is refused by kcp's
admission with 403 naming the quota. The admin raises the quota to 10: the same `kubectl scale` succeeds at once and
the splitter places the new replicas (the time from the raise to the children written is measured, < 5 s).
"""

from __future__ import annotations

import http.client
import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from compute_fixtures import COMPUTE, CONTROLLER, apply, bind_role, binding, compute_fleet, kubeconfig, kubectl
from splitter_fixtures import shares_on
from syncer_fixtures import eventually

from kcp_process import KcpServer, run_kubectl

TEAM = "team-b"
BOB_TOKEN = "bob-token"
USERS = {BOB_TOKEN: ("bob", "team-b")}
TARGETS = ("eu-1", "eu-2")
QUOTA_MESSAGE = f'exceeded quota: location "eu" of workspace "{COMPUTE}" for workspace "{TEAM}"'


@dataclass
class Env:
    kcp: KcpServer
    compute: Path  # kcp-admin's kubeconfig in the compute workspace
    team: Path  # bob's kubeconfig in team B's workspace


def location(pods: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Location",
            "metadata": {"name": "eu", "labels": {"region": "eu"}},
            "spec": {"instanceSelector": {"matchLabels": {"region": "eu"}},
                     "quotas": [{"workspace": TEAM, "hard": {"pods": pods}}]}}


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """kcp (token auth), one sim serving two clusters, the cluster controller in push mode exporting from the compute
    workspace, and the splitter; the admin's compute workspace set up, team B bound and placed on `eu`."""
    with compute_fleet(tmp_path_factory.mktemp("location-quota"), USERS, len(TARGETS)) as fleet:
        kcp = fleet.kcp
        env = Env(kcp, kubeconfig(kcp, COMPUTE, "admin-compute"), kubeconfig(kcp, TEAM, "bob", BOB_TOKEN))
        set_up(env, fleet.sim, kubeconfig(kcp, TEAM, "admin-team"))
        yield env


def set_up(env: Env, sim: KcpServer, team_admin: Path) -> None:
    for file in ("synctarget-crd.yaml", "location-crd.yaml"):
        kubectl(env, env.compute, "apply", "-f", str(CONTROLLER / file))
    eventually(lambda: run_kubectl(env.kcp, "get", "locations", kubeconfig=env.compute, check=False).returncode == 0,
               "Locations served in the compute workspace")
    apply(env, env.compute, *({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                               "metadata": {"name": name, "labels": {"region": "eu"}},
                               "spec": {"kubeconfig": (sim.root / f"sim-{i}.kubeconfig").read_text()}}
                              for i, name in enumerate(TARGETS, start=1)))
    apply(env, env.compute, location("6"),
          {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "kubernetes"}, "spec": {}},
          *bind_role("bind-workloads", "apis.kcp.io", "apiexports", ["kubernetes", "scheduling.kcp.io"], "team-b"),
          *bind_role("bind-eu", "scheduling.kcp.io", "locations", ["eu"], "team-b"))
    for name in TARGETS:
        kubectl(env, env.compute, "wait", f"synctarget/{name}", "--for=condition=Ready", "--timeout=120s")
    eventually(lambda: ".deployments.apps" in kubectl(env, env.compute, "get", "apiexport", "kubernetes", "-o",
                                                       "jsonpath={.spec.latestResourceSchemas}", check=False),
               "the export offers the imported types", timeout=90)
    kubectl(env, team_admin, "create", "clusterrolebinding", "bob-admin", "--clusterrole=cluster-admin", "--user=bob")
    apply(env, env.team, binding("kubernetes"), binding("scheduling.kcp.io"))
    kubectl(env, env.team, "wait", "apibinding/kubernetes", "apibinding/scheduling.kcp.io", "--for=condition=Ready",
            "--timeout=60s")
    apply(env, env.team, {"apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Placement",
                          "metadata": {"name": "europe"},
                          "spec": {"locationWorkspace": COMPUTE, "namespaceSelector": {},
                                   "locationSelectors": [{"matchLabels": {"region": "eu"}}]}})
    kubectl(env, env.team, "wait", "placement/europe", "--for=jsonpath={.status.phase}=Bound", "--timeout=60s")

    def placed() -> bool:
        labels = json.loads(kubectl(env, env.team, "get", "namespace", "default", "-o", "json"))["metadata"]["labels"]
        return any(k.startswith("placed.workload.kcp.io/") and v == "Placed" for k, v in labels.items())

    eventually(placed, "team B's namespace placed on eu")


def children_replicas(env: Env, root: str) -> int:
    """The replicas the splitter placed of `root`, over all its shares."""
    return sum(shares_on(json.loads(kubectl(env, env.team, "get", "deployment", root, "-o", "json"))).values())


def dry_run_create_seconds(env: Env, count: int = 40) -> tuple[float, float]:
    """Median seconds of a server-side dry-run create of a Deployment in team B's placed namespace, over one kept-alive
    connection, (judged, not judged) interleaved so that load on the machine weighs on both alike: with replicas 1
    the quota plugin reads what it needs, with 0 it judges nothing (the create raises no usage)."""
    conn = http.client.HTTPSConnection("127.0.0.1", env.kcp.port, context=env.kcp.ssl_context())
    path = f"/clusters/{TEAM}/apis/apps/v1/namespaces/default/deployments?dryRun=All"
    headers = {"Authorization": f"Bearer {BOB_TOKEN}", "Content-Type": "application/json"}
    times: dict[int, list[float]] = {1: [], 0: []}
    try:
        for i in range(count):
            for replicas in (1, 0):
                body = json.dumps(deployment(f"probe-{i}", replicas))
                started = time.perf_counter()
                conn.request("POST", path, body, headers)
                reply = conn.getresponse()
                reply.read()
                times[replicas].append(time.perf_counter() - started)
                assert reply.status == 201, reply.status
    finally:
        conn.close()
    return statistics.median(times[1]), statistics.median(times[0])


def test_a_team_over_its_quota_on_a_location_is_refused_until_the_admin_raises_it(env: Env) -> None:
    apply(env, env.team, deployment("web", 4))
    kubectl(env, env.team, "wait", "deployment/web", "--for=jsonpath={.status.availableReplicas}=4", "--timeout=120s")

    over = run_kubectl(env.kcp, "scale", "deployment/web", "--replicas=8", kubeconfig=env.team, check=False)
    assert over.returncode != 0, over.stdout
    assert "Error from server (Forbidden)" in over.stderr, over.stderr
    assert (f'deployments.apps "web" is forbidden: {QUOTA_MESSAGE}, requested: pods=4, used: pods=4, '
            "limited: pods=6") in over.stderr, over.stderr
    second = run_kubectl(env.kcp, "apply", "-f", "-", kubeconfig=env.team, input_text=json.dumps(deployment("api", 3)),
                         check=False)
    assert second.returncode != 0 and "Forbidden" in second.stderr, second.stderr
    assert f"{QUOTA_MESSAGE}, requested: pods=3, used: pods=4, limited: pods=6" in second.stderr, second.stderr
    assert run_kubectl(env.kcp, "get", "deployment", "api", kubeconfig=env.team, check=False).returncode != 0
    assert json.loads(kubectl(env, env.team, "get", "deployment", "web", "-o", "json"))["spec"]["replicas"] == 4
    # lowering is always allowed, and so is raising back up to the bound
    kubectl(env, env.team, "scale", "deployment/web", "--replicas=2")
    kubectl(env, env.team, "scale", "deployment/web", "--replicas=4")

    judged, unjudged = dry_run_create_seconds(env)
    print(f"\ndry-run create, median of 40: judged by the quota {judged * 1000:.1f} ms, "
          f"not judged {unjudged * 1000:.1f} ms")

    apply(env, env.compute, location("10"))
    raised = time.monotonic()
    kubectl(env, env.team, "scale", "deployment/web", "--replicas=8")  # the very next request, no retry
    eventually(lambda: children_replicas(env, "web") == 8, "the splitter wrote web's children with 8 replicas",
               timeout=30)
    placed = time.monotonic() - raised
    print(f"from the raise to the children written with 8 replicas: {placed:.2f} s")
    assert placed < 5, placed
    kubectl(env, env.team, "wait", "deployment/web", "--for=jsonpath={.status.availableReplicas}=8", "--timeout=120s")


def test_a_bound_for_every_workspace_on_a_location_counts_them_all_and_names_them(env: Env) -> None:
    """`workspace: "*"`: the Location's bound for all teams together (read across workspaces), checked beside the
    team's own: a scale within the team's quota but past the Location's is refused naming all workspaces."""
    kubectl(env, env.team, "wait", "deployment/web", "--for=jsonpath={.spec.replicas}=8", "--timeout=30s")
    bounded = location("20")
    bounded["spec"]["quotas"].append({"workspace": "*", "hard": {"pods": "9"}})
    apply(env, env.compute, bounded)
    over = run_kubectl(env.kcp, "scale", "deployment/web", "--replicas=10", kubeconfig=env.team, check=False)
    assert over.returncode != 0, over.stdout
    assert 'exceeded quota: location "eu" of workspace "compute" for all workspaces, requested: pods=2, ' \
           "used: pods=8, limited: pods=9" in over.stderr, over.stderr
    kubectl(env, env.team, "scale", "deployment/web", "--replicas=9")  # within both
