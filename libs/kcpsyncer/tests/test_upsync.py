"""Pods mirrored up (upsync.py): what the down path marks, what kcp's copy holds, and each reconcile decision,
against real informers fed by hand and fake API resources that record every call."""

from __future__ import annotations

import copy
from typing import Any

import structlog
from syncer_fakes import FakeResource

from kcpcommon.errors import APIAlreadyExistsError
from kcpcommon.informer import SharedInformer
from kcpsyncer import downstream_namespace
from kcpsyncer.discovery import APIType
from kcpsyncer.metrics import SyncerMetrics
from kcpsyncer.names import (
    ASSIGNMENT_LABEL,
    OWNER_LABEL,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAME_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    owner,
    syncer_finalizer,
)
from kcpsyncer.objects import meta
from kcpsyncer.synced import SyncedType, SyncKey, applied_key
from kcpsyncer.transform import downstream_object
from kcpsyncer.upsync import (
    Owners,
    Upsync,
    UpsyncedType,
    bound_since,
    event_copy,
    event_subject,
    kcp_owner_reference,
    upstream_copy,
    upstream_key,
)

LC, TARGET = "root:org", "east"
MAPPED = downstream_namespace(LC, "default")
PODS = APIType("v1", "pods", "Pod", namespaced=True, has_status=True)
KEY = SyncKey("pods", "default", "web-1")
UPSYNCED = "state.workload.kcp.io/east"


def deployment(kind: str = "Deployment") -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    spec: dict[str, Any] = {"jobTemplate": {"spec": {"template": template}}} if kind == "CronJob" else {
        "template": template}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web", "namespace": "default"}, "spec": spec}


def test_the_down_path_marks_pod_templates_with_the_owner_and_the_upstream_namespace() -> None:
    for kind, path in (("Deployment", ("spec", "template")), ("CronJob", ("spec", "jobTemplate", "spec", "template"))):
        body = downstream_object(deployment(kind), api_version="apps/v1", kind=kind, namespace=MAPPED,
                                 logical_cluster=LC, sync_target=TARGET)
        template: Any = body
        for part in path:
            template = template[part]
        assert template["metadata"]["labels"] == {"app": "web", OWNER_LABEL: owner(LC, TARGET)}
        assert template["metadata"]["annotations"] == {UPSTREAM_CLUSTER_ANNOTATION: LC,
                                                       UPSTREAM_NAMESPACE_ANNOTATION: "default"}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
                 "data": {"template": "x"}}
    assert downstream_object(configmap, api_version="v1", kind="ConfigMap", namespace=MAPPED, logical_cluster=LC,
                             sync_target=TARGET)["data"] == {"template": "x"}


def downstream_pod(*, node: str = "node-1", phase: str = "Running", uid: str = "down-uid") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": MAPPED, "uid": uid, "resourceVersion": "3",
                         "labels": {"app": "web", OWNER_LABEL: owner(LC, TARGET)},
                         "annotations": {UPSTREAM_CLUSTER_ANNOTATION: LC, UPSTREAM_NAMESPACE_ANNOTATION: "default",
                                         "note": "kept"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": phase}}


def test_kcp_s_copy_is_the_pod_under_the_user_s_namespace_marked_as_upsynced() -> None:
    copied = upstream_copy(downstream_pod(), namespace="default", sync_target=TARGET)
    assert copied["metadata"] == {"name": "web-1", "namespace": "default", "labels": {"app": "web", UPSYNCED: "Upsync"},
                                  "annotations": {"note": "kept"}}
    assert copied["spec"]["nodeName"] == "node-1" and copied["status"] == {"phase": "Running"}
    assert upstream_key("pods", downstream_pod(), LC) == KEY
    assert upstream_key("pods", downstream_pod(), "another") is None


class Harness:
    def __init__(self) -> None:
        self.up, self.down = FakeResource(PODS), FakeResource(PODS)
        self.up_informer = SharedInformer(self.up, cluster=LC)  # type: ignore[arg-type]
        self.down_informer = SharedInformer(self.down, cluster=TARGET)  # type: ignore[arg-type]
        self.typ = UpsyncedType("pods", PODS, PODS, self.up, self.down,  # type: ignore[arg-type]
                                self.up_informer, self.down_informer)
        self.upsync = Upsync(logical_cluster=LC, sync_target=TARGET, metrics=SyncerMetrics(None, logical_cluster=LC,
                             sync_target=TARGET), log=structlog.get_logger())

    def caches(self, up: list[dict[str, Any]], down: list[dict[str, Any]]) -> None:
        self.up_informer.replace(copy.deepcopy(up), "10")
        self.down_informer.replace(copy.deepcopy(down), "10")


def kcp_copy(pod: dict[str, Any]) -> dict[str, Any]:
    copied = upstream_copy(pod, namespace="default", sync_target=TARGET)
    copied["metadata"].update(uid="up-uid", resourceVersion="7")
    return copied


async def test_a_new_pod_is_created_in_kcp_then_its_status_written() -> None:
    h = Harness()
    h.caches([], [downstream_pod()])
    await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["create", "patch"] and h.down.calls == []
    assert "status" not in h.up.calls[0][1]
    assert h.up.calls[1][2] == {"status": {"phase": "Running"}} and h.up.calls[1][3]["subresource"] == "status"


async def test_a_current_copy_is_left_alone_and_a_status_change_is_one_patch() -> None:
    h = Harness()
    h.caches([kcp_copy(downstream_pod())], [downstream_pod()])
    await h.upsync.reconcile(h.typ, KEY)
    assert h.up.calls == []
    h.caches([kcp_copy(downstream_pod())], [downstream_pod(phase="Failed")])
    await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["patch"] and h.up.calls[0][2] == {"status": {"phase": "Failed"}}


async def test_a_spec_change_kube_would_refuse_on_update_makes_a_new_copy() -> None:
    h = Harness()
    h.caches([kcp_copy(downstream_pod(node="node-1"))], [downstream_pod(node="node-2")])
    await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["delete", "create", "patch"]
    assert h.up.calls[0][2]["preconditions"] == {"uid": "up-uid"}


async def test_a_pod_the_cluster_s_scheduler_binds_binds_its_copy_in_kcp_instead_of_a_new_copy() -> None:
    """The copy was made while the pod waited for a node: the binding is the one spec change kube allows."""
    h = Harness()
    unbound = kcp_copy(downstream_pod())
    del unbound["spec"]["nodeName"]
    h.up.get_answer = kcp_copy(downstream_pod())
    h.caches([unbound], [downstream_pod(node="node-1")])
    await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["create binding", "get"]
    assert h.up.calls[0][1:3] == ("web-1", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-1"},
                                            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
    assert h.up.calls[0][3] == {"namespace": "default"}


def test_only_a_new_node_alone_is_a_binding() -> None:
    pod = {"containers": [{"name": "c", "image": "nginx"}]}
    assert bound_since(pod, {**pod, "nodeName": "n1"}) == "n1"
    assert bound_since({**pod, "nodeName": "n1"}, {**pod, "nodeName": "n2"}) is None  # a bound pod never moves
    assert bound_since(pod, {"containers": [{"name": "c", "image": "httpd"}], "nodeName": "n1"}) is None
    assert bound_since(pod, pod) is None


async def test_a_copy_whose_pod_is_gone_is_deleted_and_that_delete_is_not_taken_for_a_user_s() -> None:
    h = Harness()
    h.caches([kcp_copy(downstream_pod())], [])
    await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["delete"] and h.down.calls == []
    h.upsync.upstream_deleted(h.typ, KEY)  # its DELETED event
    assert KEY not in h.typ.deleted_by_user


async def test_a_user_s_delete_in_kcp_deletes_the_pod_downstream_only_that_pod() -> None:
    h = Harness()
    h.caches([], [downstream_pod()])
    h.upsync.upstream_deleted(h.typ, KEY)
    await h.upsync.reconcile(h.typ, KEY)
    assert h.down.verbs() == ["delete"] and h.up.calls == []
    name, options = h.down.calls[0][1], h.down.calls[0][2]
    assert name == "web-1" and options == {"namespace": MAPPED, "preconditions": {"uid": "down-uid"}}


async def test_a_copy_gone_from_the_cache_before_its_deleted_event_is_handled_is_a_user_s_delete() -> None:
    """A retry (a write that met the user's delete: 404) can run once the cache dropped the copy and before the
    DELETED handler said whose delete it was: the pod goes downstream, no new copy is made."""
    h = Harness()
    pod = downstream_pod()
    h.caches([kcp_copy(pod)], [pod])
    await h.upsync.reconcile(h.typ, KEY)  # the copy is seen
    h.up.calls.clear()
    h.caches([], [pod])  # the user deleted it: the cache knows, the handler has not run yet
    await h.upsync.reconcile(h.typ, KEY)
    assert h.down.verbs() == ["delete"] and h.up.calls == []


async def test_a_copy_deleted_with_orphan_deletes_downstream_at_once_with_that_policy() -> None:
    """kcp's garbage collector still holds the copy (its `orphan` finalizer): the cluster's object goes now."""
    h = Harness()
    copy = kcp_copy(downstream_pod())
    copy["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["orphan"])
    h.caches([copy], [downstream_pod()])
    assert await h.upsync.reconcile(h.typ, KEY)
    assert h.down.verbs() == ["delete"] and h.up.calls == []
    assert h.down.calls[0][2] == {"namespace": MAPPED, "preconditions": {"uid": "down-uid"},
                                  "propagation_policy": "Orphan"}


async def test_a_cluster_s_object_that_is_going_gets_no_new_copy() -> None:
    """The user deleted the copy and the pod is terminating downstream: no copy is made again meanwhile."""
    h = Harness()
    going = downstream_pod()
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    h.caches([], [going])
    assert await h.upsync.reconcile(h.typ, KEY)
    assert h.up.calls == [] and h.down.calls == []


async def test_a_going_pod_s_copy_is_going_too_held_by_the_syncer_s_finalizer_until_the_pod_is_gone() -> None:
    """Its preStop hooks run on the cluster: kcp shows it Terminating, and its readers (remote endpoints) see it go;
    that delete is the syncer's, never carried down as a user's."""
    h = Harness()
    going = downstream_pod()
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    h.caches([kcp_copy(downstream_pod())], [going])
    assert await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["patch", "delete"] and h.down.calls == []
    assert h.up.calls[0][2] == {"metadata": {"finalizers": [syncer_finalizer(TARGET)]}}
    held = kcp_copy(downstream_pod())
    held["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[syncer_finalizer(TARGET)])
    h.up.calls.clear()
    h.caches([held], [])  # the pod is gone: the finalizer leaves, the copy goes
    assert await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs()[0] == "patch" and h.up.calls[0][2] == {"metadata": {"finalizers": None}}
    h.upsync.upstream_deleted(h.typ, KEY)
    assert KEY not in h.typ.deleted_by_user and h.down.calls == []


def downstream_event(count: int = 1) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web-1.abc", "namespace": MAPPED, "uid": "ev-uid", "resourceVersion": "4"},
            "involvedObject": {"kind": "Pod", "apiVersion": "v1", "namespace": MAPPED, "name": "web-1",
                               "uid": "down-uid", "resourceVersion": "3"},
            "reason": "Started", "message": "Started container c", "type": "Normal", "count": count,
            "source": {"component": "kubelet", "host": "node-1"}}


def test_a_pod_s_event_is_copied_about_kcp_s_copy_of_the_pod() -> None:
    copied = event_copy(downstream_event(), kcp_copy(downstream_pod()), sync_target=TARGET)
    assert copied["metadata"] == {"name": "web-1.abc", "namespace": "default", "labels": {UPSYNCED: "Upsync"}}
    assert copied["involvedObject"] == {"kind": "Pod", "apiVersion": "v1", "namespace": "default", "name": "web-1",
                                        "uid": "up-uid"}
    assert (copied["reason"], copied["count"], copied["source"]) == ("Started", 1, {"component": "kubelet",
                                                                                    "host": "node-1"})


def subjects(pods: Harness, *synced: SyncedType) -> Any:
    return lambda event: event_subject(event, mirrored=[pods.typ], synced=synced, logical_cluster=LC,
                                       sync_target=TARGET)


async def test_an_event_waits_for_its_pod_s_copy_then_is_created_and_its_count_follows() -> None:
    pods, events = Harness(), Harness()
    pods.caches([], [downstream_pod()])
    events.caches([], [downstream_event()])
    key = SyncKey("events", "default", "web-1.abc")
    subject_of = subjects(pods)
    assert Upsync.event_key(downstream_event(), subject_of(downstream_event())) == key
    assert await events.upsync.reconcile_event(events.typ, key, subject_of) is False  # no copy of the pod yet
    assert events.up.calls == []
    pods.caches([kcp_copy(downstream_pod())], [downstream_pod()])
    assert await events.upsync.reconcile_event(events.typ, key, subject_of) is True
    assert events.up.verbs() == ["create"]
    events.caches([event_copy(downstream_event(), kcp_copy(downstream_pod()), sync_target=TARGET)],
                  [downstream_event(count=3)])
    await events.upsync.reconcile_event(events.typ, key, subject_of)
    assert events.up.verbs() == ["create", "patch"] and events.up.calls[1][2]["count"] == 3
    events.caches([event_copy(downstream_event(), kcp_copy(downstream_pod()), sync_target=TARGET)], [])
    await events.upsync.reconcile_event(events.typ, key, subject_of)  # expired downstream: gone from kcp too
    assert events.up.verbs() == ["create", "patch", "delete"]

CLAIMS = APIType("v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True, has_status=True)
CLAIM_KEY = SyncKey("upsync:persistentvolumeclaims", "default", "data-web-0")


def statefulset() -> dict[str, Any]:
    body = deployment("StatefulSet")
    body["spec"]["volumeClaimTemplates"] = [
        {"metadata": {"name": "data", "labels": {"tier": "db"}},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    return body


def downstream_claim(*, applied_by_the_down_path: bool = False) -> dict[str, Any]:
    annotations = {UPSTREAM_CLUSTER_ANNOTATION: LC, UPSTREAM_NAMESPACE_ANNOTATION: "default"}
    if applied_by_the_down_path:  # a user's own claim applied to kcp and synced down
        annotations[UPSTREAM_NAME_ANNOTATION] = "data-web-0"
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-web-0", "namespace": MAPPED, "uid": "claim-uid", "resourceVersion": "5",
                         "labels": {"tier": "db", "app": "web", OWNER_LABEL: owner(LC, TARGET),
                                    ASSIGNMENT_LABEL: TARGET},
                         "annotations": annotations},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "volumeName": "pv-1"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}


def claim_harness() -> Harness:
    h = Harness()
    h.up, h.down = FakeResource(CLAIMS), FakeResource(CLAIMS)
    h.up_informer = SharedInformer(h.up, cluster=LC)  # type: ignore[arg-type]
    h.down_informer = SharedInformer(h.down, cluster=TARGET)  # type: ignore[arg-type]
    h.typ = UpsyncedType("persistentvolumeclaims", CLAIMS, CLAIMS, h.up, h.down,  # type: ignore[arg-type]
                         h.up_informer, h.down_informer)
    return h


def test_the_down_path_marks_a_statefulset_s_claim_templates_like_its_pod_template() -> None:
    body = downstream_object(statefulset(), api_version="apps/v1", kind="StatefulSet", namespace=MAPPED,
                             logical_cluster=LC, sync_target=TARGET)
    claim_meta = body["spec"]["volumeClaimTemplates"][0]["metadata"]
    assert claim_meta["labels"] == {"tier": "db", OWNER_LABEL: owner(LC, TARGET)}
    assert claim_meta["annotations"] == {UPSTREAM_CLUSTER_ANNOTATION: LC, UPSTREAM_NAMESPACE_ANNOTATION: "default"}


def test_a_claim_the_cluster_made_is_copied_with_its_status_and_without_any_assignment() -> None:
    copied = upstream_copy(downstream_claim(), namespace="default", sync_target=TARGET)
    assert copied["metadata"]["labels"] == {"tier": "db", "app": "web", UPSYNCED: "Upsync"}
    assert copied["status"] == {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    assert upstream_key(CLAIM_KEY.resource, downstream_claim(), LC) == CLAIM_KEY


def test_a_claim_the_down_path_applied_is_never_mirrored() -> None:
    assert upstream_key(CLAIM_KEY.resource, downstream_claim(applied_by_the_down_path=True), LC) is None


async def test_a_claim_is_created_bound_in_kcp_and_a_user_s_delete_goes_down_uid_preconditioned() -> None:
    h = claim_harness()
    h.caches([], [downstream_claim()])
    await h.upsync.reconcile(h.typ, CLAIM_KEY)
    assert h.up.verbs() == ["create", "patch"]
    assert h.up.calls[1][2] == {"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
    h.upsync.upstream_deleted(h.typ, CLAIM_KEY)
    await h.upsync.reconcile(h.typ, CLAIM_KEY)
    assert h.down.verbs() == ["delete"] and h.down.calls[0][2]["preconditions"] == {"uid": "claim-uid"}


async def test_a_claim_kcp_holds_of_the_same_name_is_never_overwritten() -> None:
    h = claim_harness()
    h.up.create_answer = APIAlreadyExistsError(status=409, reason="AlreadyExists")
    h.caches([], [downstream_claim()])  # the user's own claim is not a mirror copy: not in the copies' cache
    await h.upsync.reconcile(h.typ, CLAIM_KEY)
    assert h.up.verbs() == ["create"] and h.down.calls == []


STATEFULSETS = APIType("apps/v1", "statefulsets", "StatefulSet", namespaced=True, has_status=True)


def synced_statefulsets(*, applied: bool = True) -> SyncedType:
    """A synced type whose caches hold kcp's StatefulSet `web` and (when `applied`) the one the down path applied."""
    up, down = FakeResource(STATEFULSETS), FakeResource(STATEFULSETS)
    up_informer = SharedInformer(up, cluster=LC)  # type: ignore[arg-type]
    down_informer = SharedInformer(down, cluster=TARGET)  # type: ignore[arg-type]
    up_informer.replace([{**statefulset(), "metadata": {"name": "web", "namespace": "default", "uid": "kcp-sts",
                                                        "resourceVersion": "8"}}], "10")
    annotations = {UPSTREAM_CLUSTER_ANNOTATION: LC, UPSTREAM_NAMESPACE_ANNOTATION: "default",
                   UPSTREAM_NAME_ANNOTATION: "web"}
    down_informer.replace([{**statefulset(), "metadata": {"name": "web", "namespace": MAPPED, "uid": "down-sts",
                                                          "annotations": annotations}}] if applied else [], "10")
    return SyncedType("statefulsets.apps", STATEFULSETS, STATEFULSETS, up, down,  # type: ignore[arg-type]
                      up_informer, down_informer)


def statefulset_event(namespace: str = MAPPED) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.sts1", "namespace": namespace, "uid": "ev-sts", "resourceVersion": "9"},
            "involvedObject": {"kind": "StatefulSet", "apiVersion": "apps/v1", "namespace": namespace,
                               "name": "web", "uid": "down-sts", "resourceVersion": "6"},
            "reason": "SuccessfulCreate", "message": "create Pod web-0 in StatefulSet web successful",
            "type": "Normal", "count": 1, "source": {"component": "statefulset-controller"}}


async def test_a_synced_statefulset_s_event_comes_up_about_kcp_s_statefulset() -> None:
    pods, events = Harness(), Harness()
    pods.caches([], [])
    events.caches([], [statefulset_event()])
    subject_of = subjects(pods, synced_statefulsets())
    key = SyncKey("events", "default", "web.sts1")
    assert Upsync.event_key(statefulset_event(), subject_of(statefulset_event())) == key
    assert await events.upsync.reconcile_event(events.typ, key, subject_of) is True
    created = events.up.calls[0][1]
    assert created["metadata"]["namespace"] == "default" and created["reason"] == "SuccessfulCreate"
    assert created["involvedObject"] == {"kind": "StatefulSet", "apiVersion": "apps/v1", "namespace": "default",
                                         "name": "web", "uid": "kcp-sts"}


def test_events_of_objects_this_syncer_did_not_sync_never_come_up() -> None:
    pods = Harness()
    pods.caches([], [])
    not_applied = subjects(pods, synced_statefulsets(applied=False))
    assert not_applied(statefulset_event()) is None  # a StatefulSet of the cluster's own, same name
    other_kind = statefulset_event()
    other_kind["involvedObject"] = {**other_kind["involvedObject"], "kind": "DaemonSet"}
    assert subjects(pods, synced_statefulsets())(other_kind) is None


RS_REF = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web--east-abc", "uid": "down-rs", "controller": True,
          "blockOwnerDeletion": True}
KCP_RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web--east-abc", "uid": "kcp-rs"}}


def owned_pod() -> dict[str, Any]:
    pod = downstream_pod()
    pod["metadata"]["ownerReferences"] = [RS_REF]
    return pod


async def test_a_copy_is_controlled_by_kcp_s_object_of_the_chain_never_blocking_its_deletion() -> None:
    h = Harness()
    h.caches([], [owned_pod()])
    seen: list[Any] = []

    def owners_of(down: dict[str, Any]) -> Owners:
        seen.append(meta(down)["ownerReferences"])
        return Owners([kcp_owner_reference(RS_REF, KCP_RS)])

    assert await h.upsync.reconcile(h.typ, KEY, owners_of)
    assert seen == [[RS_REF]]
    assert h.up.calls[0][1]["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web--east-abc", "uid": "kcp-rs", "controller": True}]


async def test_an_owner_not_in_kcp_yet_is_left_out_then_added_on_a_retry() -> None:
    h = Harness()
    h.caches([], [owned_pod()])
    assert not await h.upsync.reconcile(h.typ, KEY, lambda _: Owners([], missing=True))
    assert "ownerReferences" not in h.up.calls[0][1]["metadata"]
    h = Harness()
    h.caches([kcp_copy(downstream_pod())], [owned_pod()])
    assert await h.upsync.reconcile(h.typ, KEY, lambda _: Owners([kcp_owner_reference(RS_REF, KCP_RS)]))
    assert h.up.verbs()[0] == "patch" and "create" not in h.up.verbs()
    assert h.up.calls[0][2] == {"metadata": {"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web--east-abc", "uid": "kcp-rs", "controller": True}]}}


REPLICASETS = APIType("apps/v1", "replicasets", "ReplicaSet", namespaced=True, has_status=True)


def downstream_rs(name: str = "web--east-abc") -> dict[str, Any]:
    # a Deployment's ReplicaSet inherits the Deployment's annotations, the down path's provenance among them
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": MAPPED, "uid": "down-rs", "labels": {OWNER_LABEL: owner(LC, TARGET)},
                         "annotations": {UPSTREAM_CLUSTER_ANNOTATION: LC, UPSTREAM_NAMESPACE_ANNOTATION: "default",
                                         UPSTREAM_NAME_ANNOTATION: "web--east"}},
            "spec": {"replicas": 2, "template": {"metadata": {
                "labels": {"app": "web", "pod-template-hash": "abc", OWNER_LABEL: owner(LC, TARGET)},
                "annotations": {UPSTREAM_CLUSTER_ANNOTATION: LC, UPSTREAM_NAMESPACE_ANNOTATION: "default"}}}},
            "status": {"replicas": 2}}


def test_a_replicaset_s_copy_has_its_deployment_s_template_in_kcp_without_the_down_path_s_marks() -> None:
    copied = upstream_copy(downstream_rs(), namespace="default", sync_target=TARGET)
    assert copied["spec"]["template"] == {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}}


async def test_a_replicaset_is_mirrored_only_when_a_synced_down_object_controls_it_and_its_spec_is_patched() -> None:
    rs_key = SyncKey("replicasets.apps", "default", "web--east-abc")
    assert upstream_key("replicasets.apps", downstream_rs(), LC) == rs_key
    assert upstream_key("replicasets.apps", downstream_rs("web--east"), LC) is None  # the down path's own
    h = Harness()
    h.up, h.down = FakeResource(REPLICASETS), FakeResource(REPLICASETS)
    h.up_informer = SharedInformer(h.up, cluster=LC)  # type: ignore[arg-type]
    h.down_informer = SharedInformer(h.down, cluster=TARGET)  # type: ignore[arg-type]
    h.typ = UpsyncedType("replicasets.apps", REPLICASETS, REPLICASETS, h.up, h.down,  # type: ignore[arg-type]
                         h.up_informer, h.down_informer)
    h.caches([], [downstream_rs()])
    assert await h.upsync.reconcile(h.typ, rs_key, lambda _: Owners([]))
    assert h.up.calls == []
    scaled = downstream_rs()
    scaled["spec"]["replicas"] = 3
    current = upstream_copy(downstream_rs(), namespace="default", sync_target=TARGET)
    current["metadata"].update(uid="kcp-rs", resourceVersion="7")
    h.caches([current], [scaled])
    assert await h.upsync.reconcile(h.typ, rs_key, lambda _: Owners([], controlled_by_synced=True))
    assert h.up.verbs()[0] == "patch" and h.up.calls[0][2] == {"spec": {"replicas": 3}}
    assert "delete" not in h.up.verbs()  # a ReplicaSet's copy keeps its uid: its pods' references stay true


def test_a_deployment_s_replicaset_is_not_taken_for_an_object_the_down_path_applied() -> None:
    assert applied_key("replicasets.apps", downstream_rs(), LC) is None
    assert applied_key("replicasets.apps", downstream_rs("web--east"), LC) == SyncKey(
        "replicasets.apps", "default", "web--east")


async def test_a_user_s_delete_lets_the_pod_s_owners_go_first() -> None:
    """The engine's hook runs before the pod is deleted downstream (a ReplicaSet being deleted too goes first)."""
    h = Harness()
    h.caches([], [downstream_pod()])
    h.upsync.upstream_deleted(h.typ, KEY)
    seen: list[tuple[str, list[str]]] = []

    async def before(down: dict[str, Any]) -> None:
        seen.append((down["metadata"]["name"], h.down.verbs()))

    await h.upsync.reconcile(h.typ, KEY, before_user_delete=before)
    assert seen == [("web-1", [])] and h.down.verbs() == ["delete"]


async def test_a_copy_being_deleted_goes_once_the_cluster_s_object_is_gone() -> None:
    """A copy held by a finalizer or a grace period while its pod went downstream is deleted, not left behind."""
    h = Harness()
    copy = kcp_copy(downstream_pod())
    copy["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    h.caches([copy], [])
    assert await h.upsync.reconcile(h.typ, KEY)
    assert h.up.verbs() == ["delete"] and h.down.calls == []
