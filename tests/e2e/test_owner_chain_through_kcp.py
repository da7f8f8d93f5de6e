"""Pods seen through kcp with their owner chain, as on a cluster (issue 23): kcp, a simulated cluster, and the
cluster controller running its syncer (push mode). The cluster's ReplicaSets of a synced Deployment are
mirrored into kcp next to its pods; `kubectl describe` follows Deployment -> ReplicaSet -> Pod and
StatefulSet -> Pod; kcp's garbage collector never deletes a mirror because its owner in kcp went (the syncer
removes mirrors when their downstream objects go)."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from mirror_fixtures import one_cluster_fleet
from syncer_fixtures import Rest, eventually

from kcp_process import KcpServer, run_kubectl

MIRRORS = "state.workload.kcp.io/east=Upsync"
WORKLOADS = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web--east
  labels: {workloads.kcp.io/cluster: east}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  labels: {workloads.kcp.io/cluster: east}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
"""


@dataclass
class Setup:
    kcp: KcpServer
    kubeconfig: Path
    controller: ClusterControllerProcess
    east: KcpServer


def get(setup: Setup, *args: str) -> Any:
    listed = run_kubectl(setup.kcp, "get", *args, "-o", "json", kubeconfig=setup.kubeconfig, check=False)
    return yaml.safe_load(listed.stdout) if listed.returncode == 0 else None


def describe(setup: Setup, *args: str) -> str:
    return run_kubectl(setup.kcp, "describe", *args, kubeconfig=setup.kubeconfig).stdout


def mirrors(setup: Setup, resource: str, app: str) -> list[dict[str, Any]]:
    return list((get(setup, resource, "-l", f"{MIRRORS},app={app}") or {}).get("items") or [])


def controlled(setup: Setup, resource: str, app: str, count: int) -> list[dict[str, Any]] | None:
    """The mirrors of `app`, once there are `count` and each names its controller in kcp."""
    found = mirrors(setup, resource, app)
    return found if len(found) == count and all(m["metadata"].get("ownerReferences") for m in found) else None


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with one_cluster_fleet(tmp_path_factory.mktemp("owner-chain"), WORKLOADS) as fleet:
        yield Setup(fleet.kcp, fleet.kubeconfig, fleet.controller, fleet.east)


def test_describe_through_kcp_follows_deployment_replicaset_pod(setup: Setup) -> None:
    pods = eventually(lambda: controlled(setup, "pods", "web", 2), "web's pods mirrored with their owner",
                      timeout=90)
    replicasets = eventually(lambda: [rs for rs in controlled(setup, "replicasets", "web", 1) or []
                                      if (rs.get("status") or {}).get("replicas") == 2],
                             "web's ReplicaSet mirrored with its status", timeout=90)
    rs = replicasets[0]
    assert re.fullmatch(r"web--east-[a-z0-9]+", rs["metadata"]["name"])
    deployment = get(setup, "deployment", "web--east")
    assert rs["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                  "name": "web--east", "uid": deployment["metadata"]["uid"],
                                                  "controller": True}]
    assert rs["status"]["replicas"] == 2
    for pod in pods:
        assert [(r["kind"], r["name"], r["uid"]) for r in pod["metadata"]["ownerReferences"]] == [
            ("ReplicaSet", rs["metadata"]["name"], rs["metadata"]["uid"])]
    printed = describe(setup, "pod", pods[0]["metadata"]["name"])
    assert re.search(rf"Controlled By:\s+ReplicaSet/{rs['metadata']['name']}\n", printed), printed
    printed = describe(setup, "rs", rs["metadata"]["name"])
    assert re.search(r"Controlled By:\s+Deployment/web--east\n", printed), printed
    printed = describe(setup, "deployment", "web--east")
    assert re.search(rf"NewReplicaSet:\s+{rs['metadata']['name']} \(2/2 replicas created\)", printed), printed


def test_a_statefulset_s_pod_is_controlled_by_the_statefulset_in_kcp(setup: Setup) -> None:
    pod = eventually(lambda: controlled(setup, "pods", "db", 1), "db's pod mirrored with its owner", timeout=90)[0]
    sts = get(setup, "statefulset", "db")
    assert [(r["kind"], r["name"], r["uid"]) for r in pod["metadata"]["ownerReferences"]] == [
        ("StatefulSet", "db", sts["metadata"]["uid"])]
    assert not any(r.get("blockOwnerDeletion") for r in pod["metadata"]["ownerReferences"])
    assert re.search(r"Controlled By:\s+StatefulSet/db\n", describe(setup, "pod", "db-0"))


def test_a_pod_s_copy_is_bound_to_the_node_the_cluster_chose_and_never_made_again(setup: Setup) -> None:
    """The copy of a pod made while it waited for a node is bound through kcp's pods/binding once the cluster's
    scheduler placed it: every change to kcp's pods from before the Deployment to its pod Running is one pod's,
    never a delete (a new copy would make `kubectl describe` answer NotFound in between)."""
    pods = Rest(setup.kcp).at("tenant")
    since = pods.get("/api/v1/namespaces/default/pods?labelSelector=app%3Dapi")["metadata"]["resourceVersion"]
    run_kubectl(setup.kcp, "apply", "-f", "-", kubeconfig=setup.kubeconfig,
                input_text=WORKLOADS.split("---")[0].replace("web", "api").replace("replicas: 2", "replicas: 1"))
    eventually(lambda: [p for p in mirrors(setup, "pods", "api")
                        if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") == "Running"],
               "api's pod mirrored, bound and Running", timeout=90)
    watch = urllib.request.Request(
        f"{setup.kcp.url}/clusters/tenant/api/v1/namespaces/default/pods?labelSelector=app%3Dapi&watch=1"
        f"&resourceVersion={since}&timeoutSeconds=2", headers={"Authorization": f"Bearer {setup.kcp.token}"})
    with urllib.request.urlopen(watch, context=setup.kcp.ssl_context(), timeout=30) as answer:
        lines = answer.read().decode().splitlines()
    events = [(e["type"], e["object"]["metadata"]["uid"], e["object"]["spec"].get("nodeName"))
              for e in map(json.loads, lines) if e["type"] != "BOOKMARK"]
    assert events and all(kind != "DELETED" for kind, *_ in events), events
    assert len({uid for _, uid, _ in events}) == 1, events


def test_a_binding_in_kcp_sets_the_node_and_scheduled_condition_in_one_answer(setup: Setup) -> None:
    """kcp's Pod is a CRD imported from the cluster: the binding's `PodScheduled` condition (kube writes
    `lastProbeTime: null`) is decoded as a CRD write is, not refused after the node was already set."""
    pods = Rest(setup.kcp).at("tenant")
    path = "/api/v1/namespaces/default/pods"
    pods.create(path, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "bind-me", "labels": {"workloads.kcp.io/cluster": "nowhere"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bind-me"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"}}
    status, answer = pods.request("POST", f"{path}/bind-me/binding", binding)
    assert (status, answer.get("status")) == (201, "Success"), answer
    pod = pods.get(f"{path}/bind-me")
    assert pod["spec"]["nodeName"] == "node-7"
    assert [(c["type"], c["status"]) for c in pod["status"]["conditions"]] == [("PodScheduled", "True")]
    status, answer = pods.request("POST", f"{path}/bind-me/binding", binding)
    assert (status, answer["reason"]) == (409, "Conflict"), answer
    assert 'already assigned to node "node-7"' in answer["message"]


def test_kcp_s_garbage_collector_leaves_mirrors_whose_owner_went_to_the_syncer(setup: Setup) -> None:
    """The Deployment goes from kcp while its syncer is down (its finalizer lifted by hand): the cluster still
    runs the pods, so their mirrors stay; once the syncer is back it removes the workload downstream and the
    mirrors go with their downstream objects."""
    eventually(lambda: controlled(setup, "pods", "web", 2) and controlled(setup, "replicasets", "web", 1),
               "web's chain mirrored", timeout=90)
    deployment = get(setup, "deployment", "web--east")
    run_kubectl(setup.kcp, "apply", "-f", "-", kubeconfig=setup.kubeconfig, input_text=yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sentinel", "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "Deployment", "name": "web--east",
            "uid": deployment["metadata"]["uid"]}]}}))
    assert setup.controller.stop() == 0, setup.controller.log_tail(60)
    try:
        run_kubectl(setup.kcp, "delete", "deployment", "web--east", "--wait=false", kubeconfig=setup.kubeconfig)
        run_kubectl(setup.kcp, "patch", "deployment", "web--east", "--type=merge", "-p",
                    '{"metadata":{"finalizers":null}}', kubeconfig=setup.kubeconfig)
        eventually(lambda: get(setup, "configmap", "sentinel") is None,
                   "the garbage collector at work on the Deployment's dependents", timeout=60)
        assert get(setup, "deployment", "web--east") is None
        assert len(mirrors(setup, "replicasets", "web")) == 1
        assert len(mirrors(setup, "pods", "web")) == 2
    finally:
        setup.controller.start()
    eventually(lambda: not mirrors(setup, "pods", "web") and not mirrors(setup, "replicasets", "web"),
               "the mirrors gone with the workload downstream", timeout=90)
    assert mirrors(setup, "pods", "db")  # the rest keeps running


def test_a_deleted_deployment_s_replicaset_mirror_goes_with_its_owner_downstream(setup: Setup) -> None:
    """A Deployment deleted through kcp (background): its ReplicaSet's mirror goes once the Deployment is gone
    from the cluster, not only after the cluster's garbage collector removed the ReplicaSet (a finalizer holds
    it here), as `kubectl get rs` on a cluster stops listing it within moments."""
    run_kubectl(setup.kcp, "apply", "-f", "-", kubeconfig=setup.kubeconfig,
                input_text=WORKLOADS.split("---")[0].replace("web", "held").replace("replicas: 2", "replicas: 1"))
    eventually(lambda: controlled(setup, "replicasets", "held", 1), "held's ReplicaSet mirrored", timeout=90)
    downstream = run_kubectl(setup.east, "get", "rs", "-A", "-l", "app=held", "-o", "json")
    rs = json.loads(downstream.stdout)["items"][0]["metadata"]
    where = ("-n", rs["namespace"], f"rs/{rs['name']}")
    run_kubectl(setup.east, "patch", *where, "--type=merge", "-p", '{"metadata":{"finalizers":["example.io/hold"]}}')
    try:
        run_kubectl(setup.kcp, "delete", "deployment", "held--east", "--wait=false", kubeconfig=setup.kubeconfig)
        eventually(lambda: not mirrors(setup, "replicasets", "held"), "held's ReplicaSet mirror gone", timeout=30)
        held = json.loads(run_kubectl(setup.east, "get", *where, "-o", "json").stdout)
        assert held["metadata"].get("deletionTimestamp"), "the cluster's garbage collector is at work on it"
    finally:
        run_kubectl(setup.east, "patch", *where, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')


def test_a_foreground_delete_through_kcp_finishes_with_mirrors_under_the_owner(setup: Setup) -> None:
    """Mirrors never set blockOwnerDeletion: a foreground delete in kcp does not wait on them (the syncer takes
    them away once the cluster's pods went)."""
    eventually(lambda: controlled(setup, "pods", "db", 1), "db's pod mirrored with its owner", timeout=90)
    run_kubectl(setup.kcp, "delete", "statefulset", "db", "--cascade=foreground", "--timeout=60s",
                kubeconfig=setup.kubeconfig, timeout=70)
    assert get(setup, "statefulset", "db") is None
    eventually(lambda: not mirrors(setup, "pods", "db"), "db's pod mirror gone with its pod downstream", timeout=90)
