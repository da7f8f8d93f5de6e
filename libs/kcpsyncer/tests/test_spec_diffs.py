"""One object split across SyncTargets (specdiff.py): each target's spec diff applied and hashed, an invalid one
reported and nothing written, each target's status in its own annotation only, and the pods of a split
Deployment controlled by the kcp revision of their ReplicaSet's template (revisions.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import structlog
from syncer_fakes import FakeResource
from test_engine import DEPLOY, FINALIZER, LC, MAPPED, TARGET, Harness, downstream_copy
from test_upsync import PODS, REPLICASETS, downstream_pod

from kcpcommon.errors import APINotFoundError
from kcpcommon.informer import SharedInformer
from kcpsyncer.discovery import APIType
from kcpsyncer.engine import REVISION_RETRY
from kcpsyncer.metrics import SyncerMetrics
from kcpsyncer.names import OWNER_LABEL, SPEC_HASH_ANNOTATION, owner
from kcpsyncer.revisions import CONTROLLER_UID_INDEX, cluster_template, controller_uid_index, revision_of
from kcpsyncer.specdiff import InvalidSpecDiff, diffed_spec, is_split, spec_diff_annotation
from kcpsyncer.summary import status_annotation
from kcpsyncer.synced import SyncKey
from kcpsyncer.transform import downstream_object, mark_pod_template
from kcpsyncer.upsync import Owners, Upsync, UpsyncedType, queue_resource

WEST = "west"
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def root(*, diffs: dict[str, Any] | None = None, generation: int = 3, targets: tuple[str, ...] = (TARGET, WEST),
         **annotations: str) -> dict[str, Any]:
    """A root Deployment assigned to `targets` by state labels, with spec diffs (lists are JSON-encoded)."""
    annotations = dict(annotations)
    for target, diff in (diffs or {}).items():
        annotations[spec_diff_annotation(target)] = diff if isinstance(diff, str) else json.dumps(diff)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "root-uid", "resourceVersion": "5",
                         "generation": generation, "finalizers": [],  # a split object has none of ours
                         "labels": {f"state.workload.kcp.io/{t}": "Sync" for t in targets},
                         "annotations": annotations},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE)}}


def replicas(n: int) -> list[dict[str, Any]]:
    return [{"op": "replace", "path": "/replicas", "value": n}]


def body(up: dict[str, Any], target: str = TARGET) -> dict[str, Any]:
    return downstream_object(up, api_version="apps/v1", kind="Deployment", namespace=MAPPED, logical_cluster=LC,
                             sync_target=target)


# --- the diff ---

def test_each_target_applies_its_own_diff_and_no_diff_goes_down() -> None:
    up = root(diffs={TARGET: replicas(2), WEST: replicas(3)})
    assert body(up)["spec"]["replicas"] == 2 and body(up, WEST)["spec"]["replicas"] == 3
    assert body(up, "north")["spec"]["replicas"] == 5  # no diff of its own: the object's spec
    assert not any(k.startswith("experimental.") for k in body(up)["metadata"]["annotations"])
    assert is_split(up, TARGET) and not is_split(up, "north")


def test_the_spec_hash_covers_this_targets_diff_and_not_anothers() -> None:
    def spec_hash(up: dict[str, Any]) -> str:
        return str(body(up)["metadata"]["annotations"][SPEC_HASH_ANNOTATION])
    before = spec_hash(root(diffs={TARGET: replicas(2), WEST: replicas(3)}))
    assert spec_hash(root(diffs={TARGET: replicas(4), WEST: replicas(3)})) != before
    assert spec_hash(root(diffs={TARGET: replicas(2), WEST: replicas(1)})) == before


async def test_a_split_object_whose_labels_a_client_dropped_keeps_its_copy_while_its_share_is_there() -> None:
    """`kubectl apply` of a manifest with `labels: null` drops kcp's state labels too; the spec diff says the share
    is still this target's (the splitter puts the label back): the copy stays. Without the diff it goes."""
    for kept, verbs in (({spec_diff_annotation(TARGET): json.dumps(replicas(2))}, []), ({}, ["delete"])):
        h = Harness(DEPLOY)
        up = root(diffs={TARGET: replicas(2)})
        h.caches([], [downstream_copy(up, DEPLOY)])
        h.up.get_answer = {**up, "metadata": {**up["metadata"], "labels": {}, "annotations": kept}}
        await h.reconcile()
        assert h.down.verbs() == verbs


def test_another_target_joining_or_leaving_changes_nothing_on_this_one() -> None:
    """kcp's state labels say where the object goes: they stay in kcp, so a share added or removed elsewhere is no
    reason to apply here, nor a dip in the observedGeneration this target reports (a move would read as loss)."""
    alone = root(diffs={TARGET: replicas(2)}, targets=(TARGET,))
    joined = root(diffs={TARGET: replicas(2), WEST: replicas(3)})
    assert body(alone) == body(joined)
    assert not any(k.startswith("state.workload.kcp.io/") for k in body(joined)["metadata"]["labels"])


def test_a_diff_applies_before_the_syncers_own_changes() -> None:
    up = root(diffs={TARGET: [{"op": "add", "path": "/template/spec/containers/0/ports",
                               "value": [{"containerPort": 80}]}]})
    container = body(up)["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]  # defaulted as any port is
    assert body(up)["spec"]["template"]["metadata"]["labels"][OWNER_LABEL] == owner(LC, TARGET)


@pytest.mark.parametrize(("diff", "says"), [
    ("{not json", "not JSON"),
    (json.dumps({"op": "replace", "path": "/replicas", "value": 1}), "a JSON list of operations"),
    (json.dumps([{"op": "replace", "path": "/paused", "value": True}]), "/paused"),
    (json.dumps([{"op": "replace", "path": "", "value": 3}]), "not an object"),
])
def test_an_invalid_diff_says_which_annotation_and_why(diff: str, says: str) -> None:
    up = root(diffs={TARGET: diff})
    with pytest.raises(InvalidSpecDiff) as invalid:
        diffed_spec(up, TARGET, up["spec"])
    assert spec_diff_annotation(TARGET) in str(invalid.value) and says in str(invalid.value)


# --- the engine: apply, bad diff, status ---

def down_deployment(up: dict[str, Any], *, ready: int, observed: int = 2, generation: int = 2) -> dict[str, Any]:
    down = downstream_copy(up, DEPLOY)
    down["metadata"]["generation"] = generation
    down["status"] = {"observedGeneration": observed, "replicas": ready, "readyReplicas": ready}
    return down


async def test_the_diffed_spec_is_applied_and_a_change_of_the_diff_alone_applies_again() -> None:
    h = Harness(DEPLOY)
    before = root(diffs={TARGET: replicas(2), WEST: replicas(3)})
    h.caches([before], [down_deployment(before, ready=2)])
    await h.reconcile()
    assert [c for c in h.down.calls if c[0] == "patch"] == []  # up to date
    after = root(diffs={TARGET: replicas(4), WEST: replicas(3)})
    h.caches([after], [down_deployment(before, ready=2)])
    await h.reconcile()
    [(_, _, applied, kw)] = [c for c in h.down.calls if c[0] == "patch"]
    assert kw["patch_type"] == "apply" and applied["spec"]["replicas"] == 4


async def test_a_bad_diff_writes_nothing_down_says_so_once_and_is_not_retried() -> None:
    h = Harness(DEPLOY)
    good = root(diffs={TARGET: replicas(2)})
    bad = root(diffs={TARGET: json.dumps([{"op": "replace", "path": "/nope", "value": 1}])})
    h.caches([bad], [down_deployment(good, ready=2)])
    assert await h.reconcile() is None
    assert await h.reconcile() is None  # a downstream status change brings it back: the same error, not repeated
    assert h.down.calls == []  # neither applied nor deleted
    events = h.up_clients.resources["events"].calls
    assert len(events) == 1
    event = events[0][1]
    assert event["reason"] == "InvalidSpecDiff" and event["type"] == "Warning"
    assert spec_diff_annotation(TARGET) in event["message"] and "/nope" in event["message"]
    assert event["involvedObject"]["uid"] == "root-uid"
    # the cluster's status still comes up, as not of this generation (its spec is not applied there)
    (_, _, patch, kw), *_ = [c for c in h.up.calls if c[0] == "patch"]
    status = json.loads(patch["metadata"]["annotations"][status_annotation(TARGET)])
    assert status["observedGeneration"] == 2 and "subresource" not in kw
    h.caches([good], [down_deployment(good, ready=2)])
    await h.reconcile()  # fixed
    h.caches([bad], [down_deployment(good, ready=2)])
    await h.reconcile()  # broken again: said again
    assert len(h.up_clients.resources["events"].calls) == 2


@pytest.mark.parametrize("targets", [(TARGET,), (TARGET, WEST)])
async def test_a_split_objects_status_goes_into_its_own_annotation_only(targets: tuple[str, ...]) -> None:
    h = Harness(DEPLOY)
    others = {status_annotation(WEST): json.dumps({"readyReplicas": 3}),
              status_annotation("gone"): json.dumps({"readyReplicas": 1})}
    up = root(diffs={TARGET: replicas(2)}, targets=targets, **others)
    h.caches([up], [down_deployment(up, ready=2)])
    await h.reconcile()
    [(_, _, patch, kw)] = [c for c in h.up.calls if c[0] == "patch"]
    assert "subresource" not in kw  # never `.status`, even on one target
    # its own key only: the other targets' (even one the object left) are the splitter's to prune
    assert patch == {"metadata": {"annotations": {status_annotation(TARGET): json.dumps(
        {"observedGeneration": 3, "readyReplicas": 2, "replicas": 2}, sort_keys=True, separators=(",", ":"))}}}
    h.up.calls.clear()
    up["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    h.caches([up], [down_deployment(up, ready=2)])
    await h.reconcile()
    assert h.up.calls == []  # unchanged: not written again


async def test_a_split_object_is_not_held_by_the_syncers_finalizer() -> None:
    """Deleting it does not wait on every cluster (nor forever on one that is away): its copy goes on the evidence
    of its absence. One that carries the finalizer from before loses it."""
    h = Harness(DEPLOY)
    up = root(diffs={TARGET: replicas(2)})
    h.caches([up], [])
    await h.reconcile()
    assert not [c for c in h.up.calls if c[0] == "patch" and "finalizers" in c[2].get("metadata", {})]
    h = Harness(DEPLOY)
    held = {**up, "metadata": {**up["metadata"], "finalizers": [FINALIZER, "other"]}}
    h.caches([held], [])
    await h.reconcile()
    assert [c[2]["metadata"]["finalizers"] for c in h.up.calls if c[0] == "patch"] == [["other"]]


async def test_an_unsplit_object_keeps_todays_status_rule() -> None:
    h = Harness(DEPLOY)
    up = root(diffs={WEST: replicas(3)}, targets=(TARGET,))  # a diff for another target only: not split here
    up["metadata"]["finalizers"] = [FINALIZER]  # held as any object it syncs
    h.caches([up], [down_deployment(up, ready=5)])
    await h.reconcile()
    [(_, _, patch, kw)] = [c for c in h.up.calls if c[0] == "patch"]
    assert kw["subresource"] == "status" and patch["status"]["readyReplicas"] == 5


# --- ReplicaSets and pods of a split Deployment ---

def cluster_rs(up: dict[str, Any], *, name: str = "web-down1", uid: str = "down-rs") -> dict[str, Any]:
    """The ReplicaSet the cluster's deployment controller makes of the Deployment's copy."""
    down = downstream_copy(up, DEPLOY)
    template = copy.deepcopy(down["spec"]["template"])
    template["metadata"]["labels"]["pod-template-hash"] = "down1"
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": MAPPED, "uid": uid, "labels": dict(template["metadata"]["labels"]),
                         "annotations": dict(down["metadata"]["annotations"]),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                              "uid": "down-web", "controller": True}]},
            "spec": {"replicas": 2, "template": template}, "status": {"replicas": 2}}


def revision(*, name: str = "web-kcp1", template: dict[str, Any] | None = None, uid: str = "root-uid",
             created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    """The splitter's revision in kcp: the root's template with kcp's hash label, controlled by the root."""
    template = copy.deepcopy(template or TEMPLATE)
    template["metadata"]["labels"]["pod-template-hash"] = "kcp1"
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "uid": f"kcp-{name}", "creationTimestamp": created,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                              "uid": uid, "controller": True}]},
            "spec": {"replicas": 5, "template": template}}


def test_a_revision_is_the_roots_replicaset_of_the_clusters_template() -> None:
    up = root(diffs={TARGET: replicas(2)})
    down_rs = cluster_rs(up)
    assert cluster_template(down_rs)["metadata"]["labels"] == {"app": "web", "pod-template-hash": "down1"}
    other = copy.deepcopy(TEMPLATE)
    other["spec"]["containers"][0]["image"] = "nginx:2"
    candidates = [revision(name="web-other", template=other), revision(uid="someone-else"),
                  revision(name="web-newer", created="2026-02-01T00:00:00Z"), revision()]
    assert revision_of(down_rs, up, candidates) == revision()
    assert revision_of(down_rs, up, candidates[:2]) is None


class SplitHarness(Harness):
    """The engine with a split Deployment synced, the cluster's ReplicaSets and pods mirrored, kcp's revisions."""

    def __init__(self) -> None:
        super().__init__(DEPLOY)
        self.mirrored: dict[str, UpsyncedType] = {}
        for api, name in ((REPLICASETS, "replicasets.apps"), (PODS, "pods")):
            up, down = FakeResource(api), FakeResource(api)
            typ = UpsyncedType(name, api, api, up, down,  # type: ignore[arg-type]
                               SharedInformer(up, cluster=LC), SharedInformer(down, cluster=TARGET))  # type: ignore[arg-type]
            self.syncer.upsynced[queue_resource(name)] = self.mirrored[name] = typ
        self.revisions = SharedInformer(FakeResource(REPLICASETS), cluster=LC)  # type: ignore[arg-type]
        self.revisions.add_indexers({CONTROLLER_UID_INDEX: controller_uid_index})
        self.syncer.revisions = self.revisions
        self.syncer._attach_revisions()

    def cluster(self, up: dict[str, Any], *, rs: list[dict[str, Any]], pods: list[dict[str, Any]],
                revisions: list[dict[str, Any]], rs_copies: list[dict[str, Any]] | None = None) -> None:
        down = downstream_copy(up, DEPLOY)
        self.caches([up], [down])
        self.mirrored["replicasets.apps"].up_informer.replace(copy.deepcopy(rs_copies or []), "10")
        self.mirrored["replicasets.apps"].down_informer.replace(copy.deepcopy(rs), "10")
        self.mirrored["pods"].up_informer.replace([], "10")
        self.mirrored["pods"].down_informer.replace(copy.deepcopy(pods), "10")
        self.revisions.replace(copy.deepcopy(revisions), "10")

    async def mirror(self, resource: str, name: str) -> Any:
        return await self.syncer._reconcile(SyncKey(queue_resource(resource), "default", name))


def split_pod(rs: dict[str, Any]) -> dict[str, Any]:
    pod = downstream_pod()
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                           "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"],
                                           "controller": True}]
    return pod


async def test_a_split_deployments_replicaset_is_not_mirrored_and_its_copy_goes() -> None:
    h = SplitHarness()
    up = root(diffs={TARGET: replicas(2)})
    rs = cluster_rs(up)
    old_copy = {**copy.deepcopy(rs), "metadata": {"name": "web-down1", "namespace": "default", "uid": "copy"}}
    h.cluster(up, rs=[rs], pods=[], revisions=[revision()], rs_copies=[old_copy])
    assert await h.mirror("replicasets.apps", "web-down1") is None
    assert h.mirrored["replicasets.apps"].up_resource.verbs() == ["delete"]  # type: ignore[attr-defined]
    # unsplit, the same ReplicaSet is mirrored as before
    h = SplitHarness()
    plain = root(targets=(TARGET,))
    h.cluster(plain, rs=[cluster_rs(plain)], pods=[], revisions=[])
    await h.mirror("replicasets.apps", "web-down1")
    assert h.mirrored["replicasets.apps"].up_resource.verbs() == ["create", "patch"]  # type: ignore[attr-defined]


async def test_a_replicaset_of_a_deployment_gone_from_kcp_gets_no_copy_and_its_copy_goes() -> None:
    """The Deployment was deleted in kcp (or moved off this cluster): its copy here is going, and so are its
    ReplicaSets; mirrored now, they would show up in kcp after the user's delete (and, the Deployment no longer
    known as split, as extra ReplicaSets of nobody)."""
    h = SplitHarness()
    up = root(diffs={TARGET: replicas(2)})
    rs = cluster_rs(up)
    old_copy = {**copy.deepcopy(rs), "metadata": {"name": "web-down1", "namespace": "default", "uid": "copy"}}
    h.cluster(up, rs=[rs], pods=[], revisions=[revision()], rs_copies=[old_copy])
    h.caches([], [downstream_copy(up, DEPLOY)])  # kcp's cache has listed, without the Deployment
    assert await h.mirror("replicasets.apps", "web-down1") is None
    assert h.mirrored["replicasets.apps"].up_resource.verbs() == ["delete"]  # type: ignore[attr-defined]
    h = SplitHarness()
    h.cluster(up, rs=[rs], pods=[], revisions=[revision()])
    h.caches([], [downstream_copy(up, DEPLOY)])
    await h.mirror("replicasets.apps", "web-down1")
    assert h.mirrored["replicasets.apps"].up_resource.verbs() == []  # type: ignore[attr-defined]


async def test_a_pod_deleted_after_its_split_deployment_and_revision_takes_its_faceless_replicaset_first() -> None:
    """`kubectl delete deployments,rs,pods --all --cascade=orphan`: the copy went with Orphan, so the cluster's
    ReplicaSet stayed; its revision in kcp went too. Before the user's pod delete reaches the cluster, that
    ReplicaSet goes (Orphan), or it would replace the pod. While the revision stands for it, it stays."""
    up = root(diffs={TARGET: replicas(2)})
    orphaned = cluster_rs(up)
    orphaned["metadata"]["ownerReferences"] = []
    pod = split_pod(orphaned)
    # kcp (read again, not only the cache) has: no revision / the revision / it cached, but gone by now
    gone = APINotFoundError("not found", status=404, details={"name": "web-kcp1"})
    for revisions, in_kcp, verbs in (([], gone, ["delete"]), ([revision()], revision(), []),
                                     ([revision()], gone, ["delete"])):
        h = SplitHarness()
        h.cluster(up, rs=[orphaned], pods=[pod], revisions=revisions)
        h.caches([], [])  # the Deployment and its copy are gone
        h.mirrored["replicasets.apps"].up_resource.get_answer = in_kcp  # type: ignore[attr-defined]
        await h.syncer._release_going_owners(pod)
        assert h.mirrored["replicasets.apps"].down_resource.verbs() == verbs  # type: ignore[attr-defined]
    going = {**revision(), "metadata": {**revision()["metadata"], "deletionTimestamp": "2026-01-02T00:00:00Z"}}
    h = SplitHarness()
    h.cluster(up, rs=[orphaned], pods=[pod], revisions=[going])
    h.caches([], [])
    await h.syncer._release_going_owners(pod)
    assert h.mirrored["replicasets.apps"].down_resource.verbs() == ["delete"]  # type: ignore[attr-defined]


async def test_a_split_deployments_pod_waits_for_its_revision_then_is_controlled_by_it() -> None:
    h = SplitHarness()
    up = root(diffs={TARGET: replicas(2)})
    rs = cluster_rs(up)
    h.cluster(up, rs=[rs], pods=[split_pod(rs)], revisions=[revision(uid="someone-else")])
    result = await h.mirror("pods", "web-1")
    assert result is not None and result.requeue_after  # retried, and queued at once when the revision comes
    pods = h.mirrored["pods"].up_resource
    assert pods.calls == []  # type: ignore[attr-defined]  # no copy without its controller
    assert h.syncer._awaiting_revision == {"root-uid": {SyncKey(queue_resource("pods"), "default", "web-1")}}
    h.syncer._revision_arrived(revision())
    assert h.syncer._awaiting_revision == {} and len(h.syncer.controller.queue) == 1
    h.revisions.replace([revision()], "11")
    assert await h.mirror("pods", "web-1") is None
    created = pods.calls[0][1]  # type: ignore[attr-defined]
    assert created["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-kcp1", "uid": "kcp-web-kcp1", "controller": True}]


async def test_a_split_replicasets_events_stay_on_the_cluster() -> None:
    h = SplitHarness()
    up = root(diffs={TARGET: replicas(2)})
    rs = cluster_rs(up)
    h.cluster(up, rs=[rs], pods=[], revisions=[revision()])
    event = {"metadata": {"name": "web-down1.1", "namespace": MAPPED},
             "involvedObject": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-down1",
                                "namespace": MAPPED}}
    assert h.syncer._event_subject(event) is None
    plain = root(targets=(TARGET,))
    h.cluster(plain, rs=[cluster_rs(plain)], pods=[], revisions=[])
    subject = h.syncer._event_subject(event)
    assert subject is not None and subject.key.name == "web-down1"


async def test_an_existing_copy_keeps_its_references_while_its_revision_is_not_found() -> None:
    up = Upsync(logical_cluster=LC, sync_target=TARGET, metrics=SyncerMetrics(None, logical_cluster=LC,
                sync_target=TARGET), log=structlog.get_logger())
    pods_up, pods_down = FakeResource(PODS), FakeResource(PODS)
    typ = UpsyncedType("pods", PODS, PODS, pods_up, pods_down,  # type: ignore[arg-type]
                       SharedInformer(pods_up, cluster=LC), SharedInformer(pods_down, cluster=TARGET))  # type: ignore[arg-type]
    pod = downstream_pod()
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-kcp1", "uid": "kcp-web-kcp1", "controller": True}
    copied = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "web-1", "namespace": "default", "uid": "c", "ownerReferences": [ref],
                           "labels": {"app": "web", f"state.workload.kcp.io/{TARGET}": "Upsync"},
                           "annotations": {"note": "kept"}},
              "spec": pod["spec"], "status": pod["status"]}
    typ.up_informer.replace([copied], "1")
    typ.down_informer.replace([pod], "1")
    assert not await up.reconcile(typ, SyncKey("pods", "default", "web-1"),
                                  lambda _: Owners([], missing=True, awaiting="root-uid"))
    assert pods_up.calls == []  # its controller reference is not taken away


def test_the_marks_the_cluster_template_drops_are_the_syncers() -> None:
    template: dict[str, Any] = {"kind": "Deployment", "spec": {"template": copy.deepcopy(TEMPLATE)}}
    mark_pod_template(template, owner=owner(LC, TARGET), logical_cluster=LC, namespace="default")
    assert cluster_template({"spec": template["spec"]}) == TEMPLATE


def test_a_pods_keys_wait_for_kcps_revisions_to_have_listed() -> None:
    h = SplitHarness()
    pods = h.mirrored["pods"]
    pods.up_informer.replace([], "1")
    pods.down_informer.replace([], "1")
    assert h.revisions in pods.informers and not pods.synced
    h.revisions.replace([], "1")
    assert pods.synced


async def test_the_events_of_a_pod_waiting_for_its_revision_wait_as_long_as_it() -> None:
    h = SplitHarness()
    up = root(diffs={TARGET: replicas(2)})
    rs = cluster_rs(up)
    h.cluster(up, rs=[rs], pods=[split_pod(rs)], revisions=[])
    await h.mirror("pods", "web-1")
    events_api = APIType("v1", "events", "Event", namespaced=True, has_status=False)
    events_up, events_down = FakeResource(events_api), FakeResource(events_api)
    h.syncer.events = UpsyncedType("events", events_api, events_api, events_up, events_down,  # type: ignore[arg-type]
                                   SharedInformer(events_up, cluster=LC),  # type: ignore[arg-type]
                                   SharedInformer(events_down, cluster=TARGET))  # type: ignore[arg-type]
    h.syncer.events.up_informer.replace([], "1")
    h.syncer.events.down_informer.replace([{
        "metadata": {"name": "web-1.1", "namespace": MAPPED}, "reason": "Scheduled",
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "namespace": MAPPED}}], "1")
    result = await h.syncer._reconcile(SyncKey("events", "default", "web-1.1"))
    assert result is not None and result.requeue_after == REVISION_RETRY and events_up.calls == []
    h.revisions.replace([revision()], "2")
    assert await h.mirror("pods", "web-1") is None
    assert h.syncer._awaiting_revision == {}  # mirrored: it waits no longer
