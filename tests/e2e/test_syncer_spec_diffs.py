"""One Deployment in kcp split across two SyncTargets by per-target spec diffs (kcpsyncer/specdiff.py), with real
processes and no splitter: kcp, two simulated clusters `east` and `west`, and the cluster controller running
their syncers (push mode). Each cluster runs its own replica count, each syncer reports its cluster's status
in its own annotation and never in `.status`, a diff changed rescales its cluster only, an invalid diff leaves
the cluster's copy as it was and says why in an Event, and the pods come up into kcp controlled by the root's
revision there (which the test makes, as the splitter would), not before it exists."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from daemon_process import ClusterControllerProcess
from mirror_fixtures import tenant
from syncer_fixtures import Rest, eventually, sim_cluster

from kcp_process import KcpServer, free_port, run_kubectl
from kcpcommon.podtemplatehash import HASH_LABEL, pod_template_hash

DIFF = "experimental.spec-diff.workload.kcp.io/"
STATUS = "experimental.status.workload.kcp.io/"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PATIENCE = 90.0


@dataclass
class Fleet:
    kcp: Rest  # logical cluster `tenant`
    clusters: dict[str, Rest]  # the physical clusters, by SyncTarget


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("spec-diffs")
    kcp = KcpServer(root / "kcp", free_port())
    sims = {"east": sim_cluster(root / "east"), "west": sim_cluster(root / "west")}
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, *sims.values()):
            server.start()
            started.append(server)
        controller.start()
        kubeconfig = tenant(kcp, "tenant", sims)
        for target in sims:
            run_kubectl(kcp, "wait", f"synctarget/{target}", "--for", "condition=Ready", "--timeout=90s",
                        kubeconfig=kubeconfig, timeout=100)
        eventually(lambda: run_kubectl(kcp, "get", "deployments,replicasets,pods", kubeconfig=kubeconfig,
                                       check=False).returncode == 0, "the apps types imported", timeout=PATIENCE)
        yield Fleet(Rest(kcp).at("tenant"), {target: Rest(sim) for target, sim in sims.items()})
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def replicas(n: int) -> str:
    return json.dumps([{"op": "replace", "path": "/replicas", "value": n}])


def root_deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"state.workload.kcp.io/east": "Sync",
                                                   "state.workload.kcp.io/west": "Sync"},
                         "annotations": {DIFF + "east": replicas(2), DIFF + "west": replicas(3)}},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}


def downstream(fleet: Fleet, target: str) -> dict[str, Any] | None:
    """The cluster's copy of the root (found by the syncer's provenance annotation)."""
    listed = fleet.clusters[target].get("/apis/apps/v1/deployments") or {}
    return next((d for d in listed.get("items") or []
                 if (d["metadata"].get("annotations") or {}).get("syncer.kcp.io/upstream-name") == "web"), None)


def running(fleet: Fleet, target: str, count: int) -> dict[str, Any] | None:
    """The cluster's copy once it asks for `count` replicas and `count` pods of it run (and are ready)."""
    copy_ = downstream(fleet, target)
    if copy_ is None or copy_["spec"].get("replicas") != count:
        return None
    namespace = copy_["metadata"]["namespace"]
    pods = (fleet.clusters[target].get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3Dweb") or {})
    live = [p for p in pods.get("items") or [] if not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") == "Running"]
    ready = (copy_.get("status") or {}).get("readyReplicas")
    return copy_ if len(live) == count and ready == count else None


def reported(fleet: Fleet, target: str, ready: int) -> dict[str, Any] | None:
    """The root once `target`'s status annotation says `ready` ready replicas, of the root's generation."""
    root = fleet.kcp.get(f"{DEPLOYMENTS}/web")
    text = (root["metadata"].get("annotations") or {}).get(STATUS + target)
    status = json.loads(text) if text else {}
    return root if status.get("readyReplicas") == ready and status.get(
        "observedGeneration") == root["metadata"]["generation"] else None


def kcp_mirrors(fleet: Fleet, resource: str, target: str) -> list[dict[str, Any]]:
    path = "/api/v1/namespaces/default/pods" if resource == "pods" else "/apis/apps/v1/namespaces/default/replicasets"
    listed = fleet.kcp.get(f"{path}?labelSelector=state.workload.kcp.io%2F{target}%3DUpsync") or {}
    return list(listed.get("items") or [])


def revision_of(root: dict[str, Any]) -> dict[str, Any]:
    """The root's ReplicaSet in kcp as the splitter keeps it: its template, hashed, controlled by the root."""
    template = copy.deepcopy(root["spec"]["template"])
    digest = pod_template_hash(template)
    template["metadata"]["labels"][HASH_LABEL] = digest
    selector = {"matchLabels": {**root["spec"]["selector"]["matchLabels"], HASH_LABEL: digest}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"web-{digest}", "labels": dict(template["metadata"]["labels"]),
                         "annotations": {"deployment.kubernetes.io/revision": "1"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                              "uid": root["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"replicas": 5, "selector": selector, "template": template}}


def test_one_deployment_split_across_two_clusters(fleet: Fleet) -> None:
    created = fleet.kcp.create(DEPLOYMENTS, root_deployment())

    # each cluster runs its own share, and reports it in its own annotation, of the root's generation
    east = eventually(lambda: running(fleet, "east", 2), "east runs 2 replicas", timeout=PATIENCE)
    eventually(lambda: running(fleet, "west", 3), "west runs 3 replicas", timeout=PATIENCE)
    assert not any(k.startswith(("experimental.spec-diff", "experimental.status"))
                   for k in east["metadata"]["annotations"])  # kcp's business stays in kcp
    eventually(lambda: reported(fleet, "east", 2), "east's status annotation: 2 ready", timeout=PATIENCE)
    root = eventually(lambda: reported(fleet, "west", 3), "west's status annotation: 3 ready", timeout=PATIENCE)
    assert root["metadata"]["generation"] == created["metadata"]["generation"]
    assert not (root.get("status") or {}), root.get("status")  # `.status` is the splitter's, and none runs

    # the clusters' ReplicaSets stay there; their pods wait for the root's revision in kcp
    for target in ("east", "west"):
        assert kcp_mirrors(fleet, "replicasets", target) == []
        assert kcp_mirrors(fleet, "pods", target) == [], "a pod mirrored before its revision exists"
    revision = fleet.kcp.create("/apis/apps/v1/namespaces/default/replicasets", revision_of(root))
    expected = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": revision["metadata"]["name"],
                 "uid": revision["metadata"]["uid"], "controller": True}]
    for target, count in (("east", 2), ("west", 3)):
        pods = eventually(lambda target=target, count=count: (found := kcp_mirrors(fleet, "pods", target))
                          and len(found) == count and found, f"{target}'s {count} pods mirrored", timeout=PATIENCE)
        assert all(p["metadata"].get("ownerReferences") == expected for p in pods), pods
        assert kcp_mirrors(fleet, "replicasets", target) == []

    # a diff changed: that cluster alone rescales
    west_generation = downstream(fleet, "west")["metadata"]["generation"]  # type: ignore[index]
    fleet.kcp.patch(f"{DEPLOYMENTS}/web", {"metadata": {"annotations": {DIFF + "east": replicas(4)}}})
    eventually(lambda: running(fleet, "east", 4), "east rescaled to 4", timeout=PATIENCE)
    eventually(lambda: reported(fleet, "east", 4), "east's status annotation: 4 ready", timeout=PATIENCE)
    assert downstream(fleet, "west")["metadata"]["generation"] == west_generation  # type: ignore[index]
    assert reported(fleet, "west", 3)
    eventually(lambda: len(kcp_mirrors(fleet, "pods", "east")) == 4, "east's 4 pods mirrored", timeout=PATIENCE)

    # an invalid diff: the cluster's copy stays as it was, and the user is told why
    before = downstream(fleet, "west")
    bad = json.dumps([{"op": "replace", "path": "/nope", "value": 1}])
    fleet.kcp.patch(f"{DEPLOYMENTS}/web", {"metadata": {"annotations": {DIFF + "west": bad}}})

    def warned() -> list[dict[str, Any]]:
        events = fleet.kcp.get("/api/v1/namespaces/default/events") or {}
        return [e for e in events.get("items") or [] if e.get("reason") == "InvalidSpecDiff"
                and e["involvedObject"].get("name") == "web"]
    [event] = eventually(warned, "an InvalidSpecDiff Event on the root", timeout=PATIENCE)
    assert event["type"] == "Warning" and DIFF + "west" in event["message"] and "/nope" in event["message"], event
    after = downstream(fleet, "west")
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]  # type: ignore[index]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]  # type: ignore[index]
    assert after["spec"]["replicas"] == 3 and running(fleet, "west", 3)
    assert running(fleet, "east", 4)
    assert not (fleet.kcp.get(f"{DEPLOYMENTS}/web").get("status") or {})
