"""kcp-syncer end to end: a kcp-apiserver, two physical clusters (physical_fixtures: simulated, or real kube 1.20
control planes with agent Nodes under `make kube-e2e`) and syncer processes.

Spec down into mapped namespaces, status up, deletes (upstream delete, unassignment, a syncer
killed with -9 meanwhile), repairs of downstream deletes and edits, moving an object between
clusters by its label, two tenants' `default/web` side by side, and kcp going away without a
single downstream delete. Every wait polls a condition with a generous deadline.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from physical_fixtures import Physical, sim_only
from syncer_fixtures import (
    ASSIGNMENT_LABEL,
    Rest,
    SyncerProcess,
    crd,
    create_sync_target,
    eventually,
    install_types,
)

from kcp_process import KcpServer, free_port
from kcpsyncer import NAMESPACE_LOCATOR_ANNOTATION, downstream_namespace, syncer_finalizer
from kcpsyncer.names import SPEC_HASH_ANNOTATION

LC_A = "syncer-a"
LC_B = "syncer-b"


@dataclass
class Env:
    kcp: KcpServer
    up_a: Rest
    up_b: Rest
    east: Rest
    west: Rest
    syncers: dict[str, SyncerProcess]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, physical: Callable[[Path], Physical]) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("syncer")
    kcp = KcpServer(root / "kcp", free_port())
    east_server, west_server = physical(root / "east"), physical(root / "west")
    started: list[KcpServer | Physical] = []
    syncers: dict[str, SyncerProcess] = {}
    try:
        for server in (kcp, east_server, west_server):
            server.start()
            started.append(server)
        rest = Rest(kcp)
        up_a, up_b = rest.at(LC_A), rest.at(LC_B)
        for up in (up_a, up_b):
            install_types(up)
            create_sync_target(up, "east")
        create_sync_target(up_a, "west")
        syncers = {
            "east": SyncerProcess(kcp, east_server, "east", LC_A, root / "syncer-east.log"),
            "west": SyncerProcess(kcp, west_server, "west", LC_A, root / "syncer-west.log"),
            "east-b": SyncerProcess(kcp, east_server, "east", LC_B, root / "syncer-east-b.log"),
        }
        for syncer in syncers.values():
            syncer.start()
        yield Env(kcp, up_a, up_b, Rest(east_server), Rest(west_server), syncers)
        for name, syncer in syncers.items():
            assert syncer.stop() == 0, f"syncer {name} did not stop cleanly: {syncer.log_tail()}"
    finally:
        for syncer in syncers.values():
            syncer.stop()
        for server in started:
            server.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def labels(target: str | None) -> dict[str, str]:
    return {ASSIGNMENT_LABEL: target} if target else {}


def configmap(name: str, target: str | None, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels(target)},
            "data": data}


def deployment(name: str, target: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels(target)},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def cm_path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


def deploy_path(namespace: str, name: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments" + (f"/{name}" if name else "")


def create_namespace(up: Rest, name: str) -> None:
    up.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def gone(rest: Rest, path: str) -> bool:
    return rest.get(path) is None


def test_objects_go_down_into_the_mapped_namespace_and_status_comes_up(env: Env) -> None:
    name = unique("web")
    env.up_a.create(deploy_path("default"), deployment(name, "east", 2))
    env.up_a.create(cm_path("default"), configmap(name, "east", {"colour": "blue"}))
    mapped = downstream_namespace(LC_A, "default")
    assert mapped.startswith("kcp-")

    down = eventually(lambda: env.east.get(deploy_path(mapped, name)), "the Deployment downstream")
    up = env.up_a.get(deploy_path("default", name))
    meta = down["metadata"]
    assert meta["uid"] != up["metadata"]["uid"]  # server-set metadata is not copied
    assert meta["annotations"]["syncer.kcp.io/upstream-cluster"] == LC_A
    assert meta["annotations"]["syncer.kcp.io/upstream-namespace"] == "default"
    assert meta["annotations"]["syncer.kcp.io/upstream-name"] == name
    assert meta["labels"][ASSIGNMENT_LABEL] == "east"
    assert down["spec"]["replicas"] == 2
    assert not meta.get("ownerReferences") and not meta.get("finalizers")
    managers = {entry["manager"] for entry in meta.get("managedFields") or []}
    assert "kcp-syncer" in managers

    namespace = env.east.get(f"/api/v1/namespaces/{mapped}")
    assert json.loads(namespace["metadata"]["annotations"][NAMESPACE_LOCATOR_ANNOTATION]) == {
        "logicalCluster": LC_A, "namespace": "default"}
    cm = eventually(lambda: env.east.get(cm_path(mapped, name)), "the ConfigMap downstream")
    assert cm["data"] == {"colour": "blue"}
    assert env.west.get(cm_path(mapped, name)) is None  # assigned to east only

    def ready_upstream() -> dict[str, Any] | None:
        obj = env.up_a.get(deploy_path("default", name))
        return obj if (obj.get("status") or {}).get("readyReplicas") == 2 else None
    synced = eventually(ready_upstream, "the downstream Deployment's status upstream")
    assert syncer_finalizer("east") in synced["metadata"]["finalizers"]
    assert synced["status"]["observedGeneration"] == synced["metadata"]["generation"]

    env.up_a.patch(deploy_path("default", name), {"spec": {"replicas": 3}})

    def rolled_out() -> dict[str, Any] | None:  # what `kubectl rollout status` waits for, upstream
        obj = env.up_a.get(deploy_path("default", name))
        status = obj.get("status") or {}
        done = (status.get("observedGeneration") == obj["metadata"]["generation"]
                and status.get("updatedReplicas") == status.get("readyReplicas") == 3)
        return obj if done else None
    eventually(rolled_out, "the scaled Deployment rolled out, as seen upstream")

    target = eventually(lambda: (env.up_a.get("/apis/workload.kcp.io/v1alpha1/synctargets/east")
                                 .get("status") or {}).get("lastSyncerHeartbeatTime") and
                        env.up_a.get("/apis/workload.kcp.io/v1alpha1/synctargets/east"), "a heartbeat")
    assert target["status"]["syncedResources"] == ["configmaps", "deployments.apps", "services"]
    metrics = env.syncers["east"].metrics()

    assert metric_sum(metrics, "kcp_syncer_synced_objects_total", "down") >= 2  # the ConfigMap and the Deployment
    assert metric_sum(metrics, "kcp_syncer_synced_objects_total", "up") >= 1
    # latency both ways: from the upstream change to the downstream write, from the downstream status up
    assert metric_sum(metrics, "kcp_syncer_sync_latency_seconds_count", "down") >= 2
    assert metric_sum(metrics, "kcp_syncer_sync_latency_seconds_count", "up") >= 1
    assert "workqueue_depth{" in metrics and "kcp_syncer_errors_total" in metrics


def test_an_upstream_delete_removes_the_object_downstream_and_its_empty_namespace(env: Env) -> None:
    ns, name = unique("gone"), "doomed"
    create_namespace(env.up_a, ns)
    mapped = downstream_namespace(LC_A, ns)
    env.up_a.create(cm_path(ns), configmap(name, "east", {"a": "1"}))
    eventually(lambda: env.east.get(cm_path(mapped, name)), "the ConfigMap downstream")
    eventually(lambda: syncer_finalizer("east") in (env.up_a.get(cm_path(ns, name))["metadata"].get("finalizers")
                                                    or []), "the syncer's finalizer upstream")

    assert env.up_a.delete(cm_path(ns, name)) == 200
    eventually(lambda: gone(env.east, cm_path(mapped, name)), "the downstream ConfigMap deleted")
    eventually(lambda: gone(env.up_a, cm_path(ns, name)), "the finalizer released, the upstream object gone")
    eventually(lambda: gone(env.east, f"/api/v1/namespaces/{mapped}"), "the empty mapped namespace removed")


def test_unassigning_an_object_deletes_it_downstream(env: Env) -> None:
    name = unique("unassigned")
    mapped = downstream_namespace(LC_A, "default")
    env.up_a.create(cm_path("default"), configmap(name, "east", {"a": "1"}))
    eventually(lambda: env.east.get(cm_path(mapped, name)), "the ConfigMap downstream")
    env.up_a.patch(cm_path("default", name), {"metadata": {"labels": {ASSIGNMENT_LABEL: None}}})
    eventually(lambda: gone(env.east, cm_path(mapped, name)), "the unassigned ConfigMap deleted downstream")
    eventually(lambda: syncer_finalizer("east") not in (env.up_a.get(cm_path("default", name))["metadata"]
                                                        .get("finalizers") or []), "the finalizer released")
    assert env.up_a.get(cm_path("default", name))["data"] == {"a": "1"}  # upstream, the object stays


def test_a_downstream_delete_and_a_downstream_edit_are_repaired(env: Env) -> None:
    name = unique("repaired")
    mapped = downstream_namespace(LC_A, "default")
    env.up_a.create(cm_path("default"), configmap(name, "east", {"k": "v"}))
    env.up_a.create(deploy_path("default"), deployment(name, "east", 1))
    first = eventually(lambda: env.east.get(cm_path(mapped, name)), "the ConfigMap downstream")

    assert env.east.delete(cm_path(mapped, name)) == 200
    again = eventually(lambda: (obj := env.east.get(cm_path(mapped, name))) and
                       obj["metadata"]["uid"] != first["metadata"]["uid"] and obj, "the ConfigMap recreated")
    assert again["data"] == {"k": "v"}

    env.east.patch(cm_path(mapped, name), {"data": {"k": "hacked"}})
    eventually(lambda: env.east.get(cm_path(mapped, name))["data"] == {"k": "v"}, "the hand edit reverted")

    eventually(lambda: env.east.get(deploy_path(mapped, name)), "the Deployment downstream")
    env.east.patch(deploy_path(mapped, name), {"spec": {"replicas": 4}})
    eventually(lambda: env.east.get(deploy_path(mapped, name))["spec"]["replicas"] == 1,
               "the Deployment's replicas restored")


@sim_only("kube < 1.22 records no managedFields entry for a write through /scale (no `subresource` field): the "
          "syncer cannot tell an autoscaler's replicas from a hand edit there")
def test_replicas_an_autoscaler_sets_downstream_through_scale_are_not_taken_back(env: Env) -> None:
    """An HPA downstream writes spec.replicas through the scale subresource: the syncer leaves them alone,
    while a hand edit of the object itself is still repaired (above)."""
    name = unique("scaled")
    mapped = downstream_namespace(LC_A, "default")
    env.up_a.create(deploy_path("default"), deployment(name, "east", 1))
    first = eventually(lambda: env.east.get(deploy_path(mapped, name)), "the Deployment downstream")
    applied_hash = first["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
    status, scale = env.east.request("PATCH", deploy_path(mapped, name) + "/scale?fieldManager=horizontal-pod-autoscaler",
                                     {"spec": {"replicas": 3}}, content_type="application/merge-patch+json")
    assert status == 200 and scale["spec"]["replicas"] == 3, scale
    # the syncer has seen the autoscaler's write once it applies a body without replicas (a new hash)
    eventually(lambda: env.east.get(deploy_path(mapped, name))["metadata"]["annotations"][SPEC_HASH_ANNOTATION]
               != applied_hash, "the syncer's apply without replicas")

    env.up_a.patch(deploy_path("default", name), {"metadata": {"labels": {"tier": "web"}}})
    down = eventually(lambda: (obj := env.east.get(deploy_path(mapped, name))) and
                      obj["metadata"]["labels"].get("tier") == "web" and obj, "the upstream change downstream")
    assert down["spec"]["replicas"] == 3
    managers = {(e["manager"], e.get("subresource", "")) for e in down["metadata"]["managedFields"]}
    assert ("horizontal-pod-autoscaler", "scale") in managers


def test_an_autoscaler_synced_with_its_deployment_scales_it_and_the_syncer_keeps_the_clusters_replicas(
        env: Env, tmp_path: Path) -> None:
    """The cluster's HPA controller (kube's, or the sim's) scales the Deployment to the autoscaler's bounds; the
    syncer leaves those replicas on every release, kube 1.20 too, which records no trace of a scale write."""
    lc = "syncer-hpa"
    up = env.up_a.at(lc)
    install_types(up, crd("autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler"))
    create_sync_target(up, "east")
    syncer = SyncerProcess(env.kcp, env.east.server, "east", lc, tmp_path / "syncer-hpa.log",
                           resources="deployments.apps,horizontalpodautoscalers.autoscaling").start()
    try:
        name, mapped = unique("scaled"), downstream_namespace(lc, "default")
        up.create(deploy_path("default"), deployment(name, "east", 4))
        eventually(lambda: (env.east.get(deploy_path(mapped, name)) or {}).get("spec", {}).get("replicas") == 4,
                   "4 replicas downstream")
        up.create("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", {
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "labels": labels("east")},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": 1, "maxReplicas": 2}})
        eventually(lambda: (env.east.get(deploy_path(mapped, name)) or {}).get("spec", {}).get("replicas") == 2,
                   "the cluster's autoscaler brings replicas to its maximum, 2", timeout=90)
        # an upstream change goes down, and the autoscaler's replicas stay
        up.patch(deploy_path("default", name), {"metadata": {"labels": {"tier": "web"}}})
        down = eventually(lambda: (obj := env.east.get(deploy_path(mapped, name))) and
                          obj["metadata"]["labels"].get("tier") == "web" and obj, "the upstream change downstream")
        assert down["spec"]["replicas"] == 2, down["spec"]
        assert up.get(deploy_path("default", name))["spec"]["replicas"] == 4  # kcp's own spec is the user's
    finally:
        assert syncer.stop() == 0, syncer.log_tail()


def test_a_replica_set_deleted_with_orphan_in_kcp_leaves_its_pods_running_downstream(env: Env, tmp_path: Path) -> None:
    """`kubectl delete rs --cascade=orphan` through kcp deletes the downstream copy with the same policy: its pods
    stay on the cluster (and their copies in kcp), as on a cluster; a plain delete takes them along."""
    lc = "syncer-orphan"
    up = env.up_a.at(lc)
    install_types(up, crd("apps", "replicasets", "ReplicaSet"), crd("", "pods", "Pod"))
    create_sync_target(up, "east")
    syncer = SyncerProcess(env.kcp, env.east.server, "east", lc, tmp_path / "syncer-orphan.log",
                           resources="replicasets.apps,pods").start()
    mapped = downstream_namespace(lc, "default")
    rs_path = "/apis/apps/v1/namespaces/{}/replicasets"
    pods_path = "/api/v1/namespaces/{}/pods?labelSelector=app%3D{}"
    try:
        for name, policy in ((unique("orphaned"), "Orphan"), (unique("cascaded"), "Background")):
            body = deployment(name, "east", 2)
            up.create(rs_path.format("default"), {**body, "kind": "ReplicaSet"})
            downstream = eventually(lambda n=name: len(pods := env.east.get(pods_path.format(mapped, n))["items"]) == 2
                                    and pods, f"{name}'s two pods downstream")
            # copies of the scheduled pods (a copy made before its pod was bound is made again with the binding)
            copies = eventually(lambda n=name: len(pods := up.get(pods_path.format("default", n))["items"]) == 2
                                and all(p["spec"].get("nodeName") for p in pods) and pods, f"{name}'s pods in kcp")
            status, answer = up.request("DELETE", rs_path.format("default") + f"/{name}",
                                        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy})
            assert status == 200, answer
            eventually(lambda n=name: env.east.get(rs_path.format(mapped) + f"/{n}") is None, f"{name} gone downstream")
            if policy == "Orphan":
                def orphans(n: str = name) -> list[dict[str, Any]]:
                    pods = env.east.get(pods_path.format(mapped, n))["items"]
                    return pods if all(not p["metadata"].get("ownerReferences") for p in pods) else []
                left = eventually(orphans, "the pods orphaned downstream")
                assert {p["metadata"]["uid"] for p in left} == {p["metadata"]["uid"] for p in downstream}
                # the copies stay what they were (not deleted and made again: `kubectl get pods` right after
                # the delete lists them all)
                settled = eventually(lambda n=name: (pods := up.get(pods_path.format("default", n))["items"]) and all(
                    not p["metadata"].get("ownerReferences") for p in pods) and pods, "their copies orphaned too")
                assert {p["metadata"]["uid"] for p in settled} == {p["metadata"]["uid"] for p in copies}
            else:
                eventually(lambda n=name: not [p for p in env.east.get(pods_path.format(mapped, n))["items"]
                                               if not p["metadata"].get("deletionTimestamp")],
                           "a background delete takes the pods along")
    finally:
        assert syncer.stop() == 0, syncer.log_tail()


def test_changing_the_label_moves_the_object_between_clusters(env: Env) -> None:
    name = unique("mover")
    mapped = downstream_namespace(LC_A, "default")
    env.up_a.create(cm_path("default"), configmap(name, "east", {"m": "1"}))
    eventually(lambda: env.east.get(cm_path(mapped, name)), "the ConfigMap in east")

    env.up_a.patch(cm_path("default", name), {"metadata": {"labels": {ASSIGNMENT_LABEL: "west"}}})
    moved = eventually(lambda: env.west.get(cm_path(mapped, name)), "the ConfigMap in west")
    assert moved["data"] == {"m": "1"}
    eventually(lambda: gone(env.east, cm_path(mapped, name)), "the ConfigMap gone from east")

    def finalizers() -> list[str]:
        return list(env.up_a.get(cm_path("default", name))["metadata"].get("finalizers") or [])
    eventually(lambda: finalizers() == [syncer_finalizer("west")], "only west's finalizer upstream")


def test_a_service_keeps_its_downstream_cluster_ip_through_upstream_updates(env: Env) -> None:
    name = unique("svc")
    mapped = downstream_namespace(LC_A, "default")
    path = "/api/v1/namespaces/{}/services/{}"
    env.up_a.create("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels("east")},
        # no protocol: the physical cluster defaults that list-map key (TCP) and the apply still matches
        "spec": {"selector": {"app": "one"}, "ports": [{"port": 80}]}})
    down = eventually(lambda: env.east.get(path.format(mapped, name)), "the Service downstream")
    cluster_ip = down["spec"]["clusterIP"]
    assert cluster_ip and cluster_ip != "None"  # allocated by the physical cluster, not sent by the syncer
    assert down["spec"]["ports"][0]["protocol"] == "TCP"

    env.up_a.patch(path.format("default", name), {"spec": {"selector": {"app": "two"}}})
    updated = eventually(lambda: (svc := env.east.get(path.format(mapped, name)))["spec"]["selector"] ==
                         {"app": "two"} and svc, "the selector change downstream")
    assert updated["spec"]["clusterIP"] == cluster_ip
    assert "clusterIP" not in env.up_a.get(path.format("default", name))["spec"]
    env.up_a.patch(path.format("default", name), {"metadata": {"labels": {"tier": "web"}}})
    eventually(lambda: env.east.get(path.format(mapped, name))["metadata"]["labels"].get("tier") == "web",
               "the label change downstream")
    assert env.east.get(path.format(mapped, name))["spec"]["clusterIP"] == cluster_ip


def test_two_logical_clusters_default_web_coexist_downstream(env: Env) -> None:
    name = unique("web")
    env.up_a.create(deploy_path("default"), deployment(name, "east", 1))
    env.up_b.create(deploy_path("default"), deployment(name, "east", 2))
    ns_a, ns_b = downstream_namespace(LC_A, "default"), downstream_namespace(LC_B, "default")
    assert ns_a != ns_b
    down_a = eventually(lambda: env.east.get(deploy_path(ns_a, name)), "tenant a's web downstream")
    down_b = eventually(lambda: env.east.get(deploy_path(ns_b, name)), "tenant b's web downstream")
    assert (down_a["spec"]["replicas"], down_b["spec"]["replicas"]) == (1, 2)

    def ready(up: Rest, replicas: int) -> bool:
        return (up.get(deploy_path("default", name)).get("status") or {}).get("readyReplicas") == replicas
    eventually(lambda: ready(env.up_a, 1), "tenant a's status")
    eventually(lambda: ready(env.up_b, 2), "tenant b's status")


def test_upstream_deletes_while_the_syncer_is_killed_are_done_after_its_restart(env: Env) -> None:
    ns = unique("kill9")
    create_namespace(env.up_a, ns)
    mapped = downstream_namespace(LC_A, ns)
    names = [f"cm-{i}" for i in range(4)]
    for name in names:
        env.up_a.create(cm_path(ns), configmap(name, "east", {"i": name}))
    for name in names:
        eventually(lambda name=name: env.east.get(cm_path(mapped, name)), f"{name} downstream")
        eventually(lambda name=name: syncer_finalizer("east") in (
            env.up_a.get(cm_path(ns, name))["metadata"].get("finalizers") or []), f"{name}'s finalizer")
    syncer = env.syncers["east"]
    syncer.kill()
    try:
        for name in names[:3]:
            assert env.up_a.delete(cm_path(ns, name)) == 200  # held upstream by the finalizer
        env.up_a.patch(cm_path(ns, names[3]), {"metadata": {"labels": {ASSIGNMENT_LABEL: None}}})
        for name in names:  # nothing happened downstream while the syncer was dead
            assert env.east.get(cm_path(mapped, name)) is not None
    finally:
        syncer.start()
    for name in names:
        eventually(lambda name=name: gone(env.east, cm_path(mapped, name)), f"{name} deleted downstream")
    for name in names[:3]:
        eventually(lambda name=name: gone(env.up_a, cm_path(ns, name)), f"{name} released upstream")


def test_a_stopped_physical_cluster_stops_the_heartbeat_and_loses_nothing(env: Env) -> None:
    name = unique("west-kept")
    mapped = downstream_namespace(LC_A, "default")
    env.up_a.create(cm_path("default"), configmap(name, "west", {"w": "1"}))
    uid = eventually(lambda: env.west.get(cm_path(mapped, name)), "the ConfigMap in west")["metadata"]["uid"]
    syncer, west = env.syncers["west"], env.west.server
    target = "/apis/workload.kcp.io/v1alpha1/synctargets/west"

    def skips(since: int) -> int:
        return syncer.log_path.read_text()[since:].count("heartbeat skipped")
    seen = len(syncer.log_path.read_text())
    assert west.stop() == 0
    try:
        eventually(lambda: skips(seen) >= 1, "a heartbeat skipped while west is down")
        beat = env.up_a.get(target)["status"]["lastSyncerHeartbeatTime"]
        counted = skips(seen)
        eventually(lambda: skips(seen) >= counted + 2, "two more heartbeat periods")
        assert env.up_a.get(target)["status"]["lastSyncerHeartbeatTime"] == beat  # no beat: NotReady follows
        assert syncer_finalizer("west") in env.up_a.get(cm_path("default", name))["metadata"]["finalizers"]
    finally:
        west.start()
    eventually(lambda: env.up_a.get(target)["status"]["lastSyncerHeartbeatTime"] != beat, "heartbeats again")
    assert env.west.get(cm_path(mapped, name))["metadata"]["uid"] == uid  # nothing deleted meanwhile


def test_kcp_going_away_deletes_nothing_downstream(env: Env, tmp_path: Path) -> None:
    names = [unique("kept") for _ in range(3)]
    mapped = downstream_namespace(LC_A, "default")
    for name in names:
        env.up_a.create(cm_path("default"), configmap(name, "east", {"x": "y"}))
    before = {name: eventually(lambda name=name: env.east.get(cm_path(mapped, name)), f"{name} downstream")
              ["metadata"]["uid"] for name in names}
    all_before = {o["metadata"]["uid"] for o in env.east.get(cm_path(mapped))["items"]}
    syncer = env.syncers["east"]
    deletes = _deletes(syncer.metrics())

    seen = len(syncer.log_path.read_text())
    assert env.kcp.stop() == 0
    # the syncer notices: its watches fail and are retried
    eventually(lambda: "list/watch failed; retrying" in syncer.log_path.read_text()[seen:], "the syncer losing kcp")
    assert {name: env.east.get(cm_path(mapped, name))["metadata"]["uid"] for name in names} == before
    env.kcp.start()
    heartbeat = eventually(lambda: (env.up_a.get("/apis/workload.kcp.io/v1alpha1/synctargets/east")
                                    .get("status") or {}).get("lastSyncerHeartbeatTime"), "a heartbeat")
    eventually(lambda: (env.up_a.get("/apis/workload.kcp.io/v1alpha1/synctargets/east")["status"]
                        ["lastSyncerHeartbeatTime"] != heartbeat), "a heartbeat after kcp came back")
    # a change after the restart syncs, so the informers are back: the earlier state was seen again
    probe = unique("probe")
    env.up_a.create(cm_path("default"), configmap(probe, "east", {"p": "1"}))
    eventually(lambda: env.east.get(cm_path(mapped, probe)), "a change after kcp's restart synced")
    assert {name: env.east.get(cm_path(mapped, name))["metadata"]["uid"] for name in names} == before
    assert all_before <= {o["metadata"]["uid"] for o in env.east.get(cm_path(mapped))["items"]}
    assert _deletes(syncer.metrics()) == deletes


def metric_sum(metrics: str, name: str, direction: str) -> float:
    """The sum of one metric's series for one direction, over its other labels."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith(name + "{") and f'direction="{direction}"' in line)


def _deletes(metrics: str) -> float:
    return metric_sum(metrics, "kcp_syncer_synced_objects_total", "delete")


def test_an_object_the_physical_cluster_refuses_gets_an_event_upstream(env: Env) -> None:
    name = unique("refused")
    bad = deployment(name, "east", 1)
    bad["spec"]["replicas"] = -1  # kcp's imported CRD is open; the physical cluster validates
    env.up_a.create(deploy_path("default"), bad)

    def event() -> dict[str, Any] | None:
        items = env.up_a.get("/api/v1/namespaces/default/events")["items"]
        return next((e for e in items if e["involvedObject"]["name"] == name and e["reason"] == "SyncFailed"), None)
    found = eventually(event, "a SyncFailed Event on the upstream Deployment")
    assert found["type"] == "Warning"
    assert "east" in found["message"] and "replicas" in found["message"]
    assert 'kcp_syncer_errors_total{logical_cluster="syncer-a",reason="Invalid"' in env.syncers["east"].metrics()

    env.up_a.patch(deploy_path("default", name), {"spec": {"replicas": 1}})
    mapped = downstream_namespace(LC_A, "default")
    eventually(lambda: env.east.get(deploy_path(mapped, name)), "the fixed Deployment synced")
