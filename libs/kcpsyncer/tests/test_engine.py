"""The syncer's reconcile decisions, against fake API resources: above all, no downstream delete without proof.

The caches are real informers fed by hand; the API is a fake that records every call and answers as
scripted. That makes the dangerous cases cheap to state: kcp unreachable, a 404 for a type that is
gone (not for the object), a list that came back empty, caches that have not listed yet.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
import structlog.testing
from syncer_fakes import FakeResource

from kcpcommon.controller import Result, TerminalError
from kcpcommon.errors import (
    APIAlreadyExistsError,
    APIConflictError,
    APIInvalidError,
    APINotFoundError,
    APITransportError,
)
from kcpcommon.informer import SharedInformer
from kcpcommon.tasks import cancel_and_wait
from kcpsyncer import SyncerOptions, downstream_namespace, syncer_finalizer
from kcpsyncer.classes import STORAGE_CLASSES, inverse, named, rename
from kcpsyncer.discovery import APIType
from kcpsyncer.engine import Syncer
from kcpsyncer.names import downstream_name
from kcpsyncer.summary import status_annotation
from kcpsyncer.synced import SyncedType, SyncKey
from kcpsyncer.transform import downstream_object

LC, TARGET = "root:org", "east"
FINALIZER = syncer_finalizer(TARGET)
MAPPED = downstream_namespace(LC, "default")
CM = APIType("v1", "configmaps", "ConfigMap", namespaced=True, has_status=False)
SVC = APIType("v1", "services", "Service", namespaced=True, has_status=True)
DEPLOY = APIType("apps/v1", "deployments", "Deployment", namespaced=True, has_status=True)


class FakeClients:
    server = "https://fake"

    def __init__(self) -> None:
        self.resources: dict[str, FakeResource] = {}

    def dynamic(self, cluster: str | None = None) -> FakeClients:
        return self

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> FakeResource:
        return self.resources.setdefault(plural, FakeResource(APIType(api_version, plural, "", namespaced, False)))


def upstream_cm(name: str = "web", *, labels: dict[str, str] | None = None, finalizers: list[str] | None = None,
                deleting: bool = False, data: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"up-{name}", "resourceVersion": "5",
                            "labels": {"workloads.kcp.io/cluster": TARGET} if labels is None else labels,
                            "finalizers": [FINALIZER] if finalizers is None else finalizers}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {"a": "1"}}


def downstream_copy(up: dict[str, Any], api: APIType = CM) -> dict[str, Any]:
    obj = downstream_object(up, api_version=api.api_version, kind=api.kind, namespace=MAPPED,
                            logical_cluster=LC, sync_target=TARGET)
    obj["metadata"].update(uid=f"down-{up['metadata']['name']}", resourceVersion="9")
    return obj


class Harness:
    def __init__(self, api: APIType = CM) -> None:
        self.up_clients, self.down_clients = FakeClients(), FakeClients()
        options = SyncerOptions(upstream=self.up_clients, downstream=self.down_clients,  # type: ignore[arg-type]
                                sync_target=TARGET, logical_cluster=LC, resources=(api.plural,))
        self.syncer = Syncer(options)
        self.up, self.down = FakeResource(api), FakeResource(api)
        self.up_informer = SharedInformer(self.up, cluster=LC)  # type: ignore[arg-type]
        self.down_informer = SharedInformer(self.down, cluster=TARGET)  # type: ignore[arg-type]
        self.syncer.types[api.plural] = SyncedType(api.plural, api, api, self.up, self.down,  # type: ignore[arg-type]
                                                   self.up_informer, self.down_informer)
        self.syncer.namespaces.known.add(MAPPED)  # exists already
        self.api = api

    def caches(self, up: list[dict[str, Any]], down: list[dict[str, Any]]) -> None:
        self.up_informer.replace(copy.deepcopy(up), "10")
        self.down_informer.replace(copy.deepcopy(down), "10")

    async def reconcile(self, name: str = "web") -> Result | None:
        return await self.syncer._reconcile(SyncKey(self.api.plural, "default", name))


async def test_nothing_happens_before_both_caches_have_listed() -> None:
    h = Harness()
    h.up_informer.replace([], "1")  # the downstream informer has not listed yet
    assert await h.reconcile() is None
    assert h.up.calls == [] and h.down.calls == []
    assert len(h.syncer.controller.queue) == 0
    release = h.syncer.types["configmaps"].release
    assert release is not None
    await cancel_and_wait(release)


async def test_a_key_held_for_unlisted_caches_is_queued_again_as_soon_as_they_have_listed() -> None:
    h = Harness()
    h.up_informer.replace([upstream_cm()], "1")
    assert await h.reconcile() is None  # held: the downstream cache has not listed
    h.down_informer.replace([], "1")
    key = await asyncio.wait_for(h.syncer.controller.queue.get(), 5)  # at once, not after a fixed delay
    assert key == SyncKey("configmaps", "default", "web")
    h.syncer.controller.queue.done(key)
    await h.reconcile()
    assert h.down.verbs() == ["patch"]  # applied now that both caches speak


async def test_kcp_unreachable_deletes_nothing() -> None:
    h = Harness()
    h.caches([], [downstream_copy(upstream_cm())])  # upstream cache lacks it (say, a relist tombstone)
    h.up.get_answer = APITransportError("connection refused")
    with pytest.raises(APITransportError):
        await h.reconcile()
    assert "delete" not in h.down.verbs()


async def test_a_404_for_the_type_rather_than_the_object_deletes_nothing() -> None:
    h = Harness()
    h.caches([], [downstream_copy(upstream_cm())])
    h.up.get_answer = APINotFoundError("the server could not find the requested resource", status=404,
                                       reason="NotFound", details={})
    with pytest.raises(APINotFoundError):
        await h.reconcile()
    assert "delete" not in h.down.verbs()


async def test_an_empty_upstream_list_with_the_objects_still_there_deletes_nothing() -> None:
    h = Harness()
    up = upstream_cm()
    h.caches([], [downstream_copy(up)])  # the list came back empty, wrongly
    h.up.get_answer = up  # but the object is there, assigned to us
    await h.reconcile()
    assert "delete" not in h.down.verbs()


async def test_a_404_naming_the_object_deletes_that_very_object_downstream() -> None:
    h = Harness()
    h.caches([], [downstream_copy(upstream_cm())])
    h.up.get_answer = APINotFoundError('configmaps "web" not found', status=404, reason="NotFound",
                                       details={"name": "web", "kind": "configmaps"})
    assert await h.reconcile() is None
    (verb, name, kw), = h.down.calls
    assert (verb, name) == ("delete", "web")
    assert kw["namespace"] == MAPPED and kw["preconditions"] == {"uid": "down-web"}


async def test_an_unassigned_object_is_deleted_downstream_and_its_finalizer_released() -> None:
    h = Harness()
    up = upstream_cm(labels={"workloads.kcp.io/cluster": "west"}, finalizers=[FINALIZER, "other"])
    h.caches([], [downstream_copy(upstream_cm())])
    h.up.get_answer = up
    await h.reconcile()
    assert h.down.verbs() == ["delete"]
    patch = next(c for c in h.up.calls if c[0] == "patch")
    assert patch[2] == {"metadata": {"finalizers": ["other"], "resourceVersion": "5"}}


async def test_a_deleting_object_keeps_its_finalizer_until_the_downstream_copy_is_gone() -> None:
    h = Harness()
    up = upstream_cm(deleting=True)
    h.caches([up], [downstream_copy(up)])
    h.down.delete_answer = {**downstream_copy(up), "metadata": {
        **downstream_copy(up)["metadata"], "finalizers": ["kubernetes"], "deletionTimestamp": "now"}}
    result = await h.reconcile()
    assert result is not None and result.requeue_after  # still finalizing downstream: look again later
    assert "patch" not in h.up.verbs()

    h.down.delete_answer = APINotFoundError("gone", status=404, reason="NotFound", details={"name": "web"})
    assert await h.reconcile() is None
    assert h.up.verbs() == ["patch"]


async def test_an_up_to_date_object_costs_no_request() -> None:
    h = Harness()
    up = upstream_cm()
    h.caches([up], [downstream_copy(up)])
    await h.reconcile()
    assert h.up.calls == [] and h.down.calls == []


async def test_a_new_object_gets_the_finalizer_and_one_apply() -> None:
    h = Harness()
    up = upstream_cm(finalizers=[])
    h.caches([up], [])
    await h.reconcile()
    (verb, name, body, kw), = h.down.calls
    assert (verb, name, kw["patch_type"], kw["field_manager"], kw["force"]) == (
        "patch", "web", "apply", "kcp-syncer", True)
    assert body["metadata"]["namespace"] == MAPPED
    (verb, name, patch, kw), = h.up.calls
    assert patch["metadata"]["finalizers"] == [FINALIZER]


async def test_status_goes_up_once_and_a_conflict_is_retried_quietly() -> None:
    h = Harness(DEPLOY)
    up = {**upstream_cm(), "apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1}}
    down = downstream_copy(up, DEPLOY)
    down["status"] = {"replicas": 1, "readyReplicas": 1}
    h.caches([up], [down])
    await h.reconcile()
    (_, _, patch, kw), = h.up.calls
    assert kw["subresource"] == "status"
    assert patch == {"status": {"replicas": 1, "readyReplicas": 1}}

    h2 = Harness(DEPLOY)
    h2.caches([{**up, "status": dict(down["status"])}], [down])
    await h2.reconcile()
    assert h2.up.calls == []  # unchanged: not written again

    async def conflict(*_args: Any, **_kw: Any) -> Any:
        raise APIConflictError("modified", status=409, reason="Conflict")
    h3 = Harness(DEPLOY)
    h3.caches([up], [down])
    h3.up.patch = conflict  # type: ignore[method-assign]
    result = await h3.reconcile()
    assert result is not None and result.requeue_after


async def test_a_cache_behind_our_own_finalizer_patch_does_not_make_us_patch_again() -> None:
    h = Harness()
    up = upstream_cm(finalizers=[])
    h.caches([up], [])
    await h.reconcile()
    assert h.up.verbs() == ["patch"]
    h.down_informer.replace([downstream_copy(up)], "11")  # the apply arrived; the finalizer patch not yet
    await h.reconcile()
    assert h.up.verbs() == ["patch"]  # no second finalizer patch from the stale copy
    assert h.down.verbs() == ["patch"]  # and the applied object is up to date: no second apply


async def test_one_apply_while_the_downstream_cache_lags_yet_a_later_downstream_delete_is_repaired() -> None:
    h = Harness()
    up = upstream_cm()
    h.caches([up], [])
    await h.reconcile()
    await h.reconcile()  # say, the upstream finalizer event: the downstream cache has not seen our apply
    assert h.down.verbs() == ["patch"]
    copy_down = downstream_copy(up)
    h.syncer._downstream_changed("configmaps", None, copy_down)  # our apply's ADDED event
    h.syncer._downstream_deleted("configmaps", copy_down)  # then someone deletes it by hand
    h.down_informer.replace([], "12")
    await h.reconcile()
    assert h.down.verbs() == ["patch", "patch"]


async def test_a_mapped_namespace_is_created_never_applied_and_one_that_exists_is_left_as_it_is() -> None:
    h = Harness()
    h.syncer.namespaces.known.discard(MAPPED)
    h.caches([upstream_cm()], [])
    await h.reconcile()
    namespaces = h.down_clients.resources["namespaces"]
    # pull mode: the syncer may create namespaces anywhere, patch none but its own (an apply is a patch)
    assert namespaces.verbs() == ["create"]
    assert namespaces.calls[0][1]["metadata"]["name"] == MAPPED
    assert h.down.verbs() == ["patch"]

    again = Harness()
    again.syncer.namespaces.known.discard(MAPPED)
    again.down_clients.resource("v1", "namespaces", namespaced=False).create_answer = APIAlreadyExistsError(
        f'namespaces "{MAPPED}" already exists', status=409, reason="AlreadyExists")
    again.caches([upstream_cm()], [])
    await again.reconcile()
    assert again.down_clients.resources["namespaces"].verbs() == ["create"]
    assert again.down.verbs() == ["patch"] and MAPPED in again.syncer.namespaces.known


async def test_a_missing_mapped_namespace_is_recreated_without_an_event_for_the_user() -> None:
    h = Harness()
    up = upstream_cm()
    h.caches([up], [])

    async def refused(*_args: Any, **_kw: Any) -> Any:
        raise APINotFoundError('namespaces "x" not found', status=404, reason="NotFound",
                               details={"name": MAPPED, "kind": "namespaces"})
    h.down.patch = refused  # type: ignore[method-assign]
    with pytest.raises(APINotFoundError):
        await h.reconcile()
    assert MAPPED not in h.syncer.namespaces.known  # ensured again on the retry
    assert "events" not in h.up_clients.resources

    async def invalid(*_args: Any, **_kw: Any) -> Any:
        raise APIInvalidError("spec.replicas: Invalid value: -1", status=422, reason="Invalid")
    h.down.patch = invalid  # type: ignore[method-assign]
    with pytest.raises(TerminalError):
        await h.reconcile()
    (_, event, _), = h.up_clients.resources["events"].calls
    assert event["reason"] == "SyncFailed" and "spec.replicas" in event["message"]
    assert event["involvedObject"]["name"] == "web"


async def test_an_object_assigned_by_its_state_label_alone_is_synced() -> None:
    h = Harness()
    up = upstream_cm(labels={f"state.workload.kcp.io/{TARGET}": "Sync", "state.workload.kcp.io/west": "Sync"},
                     finalizers=[])
    h.caches([up], [])
    await h.reconcile()
    assert h.down.verbs() == ["patch"]  # the apply


async def test_an_object_whose_state_label_names_other_targets_only_is_removed_downstream() -> None:
    h = Harness()
    up = upstream_cm(labels={"state.workload.kcp.io/west": "Sync", f"state.workload.kcp.io/{TARGET}": "Pending"})
    h.caches([], [downstream_copy(upstream_cm())])
    h.up.get_answer = up
    await h.reconcile()
    assert h.down.verbs() == ["delete"]


def test_the_syncer_caches_objects_without_their_managed_fields() -> None:
    h = Harness()
    h.syncer._add_type("configmaps", CM, CM)
    typ = h.syncer.types["configmaps"]
    up = upstream_cm()
    up["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {}}}]
    typ.up_informer.replace([up], "1")
    cached = typ.up_informer.indexer.list()
    assert [obj["metadata"]["name"] for obj in cached] == ["web"]
    assert "managedFields" not in cached[0]["metadata"]


async def test_a_failed_discovery_backs_off_and_an_unserved_type_is_looked_for_on_the_period(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors retry after 0.8 s doubling (kcpcommon's Backoff, reset by an answer); a type that is simply not
    served yet is looked for again every `discovery_retry` seconds."""
    syncer = Harness().syncer
    outcomes: list[str] = ["fail", "fail", "unserved", "fail", "served"]

    async def discover() -> None:
        outcome = outcomes.pop(0)
        if outcome == "fail":
            raise APITransportError("connection refused")
        if outcome == "served":
            syncer._unserved.clear()

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(syncer, "_discover", discover)
    monkeypatch.setattr("kcpsyncer.engine.asyncio.sleep", sleep)
    await asyncio.wait_for(syncer._discover_loop(None), 10)
    assert outcomes == [] and len(waits) == 4
    first, second, period, after_an_answer = waits
    assert 0.8 <= first <= 1.6 and 1.6 <= second <= 3.2  # backing off
    assert period == syncer.options.discovery_retry
    assert 0.8 <= after_an_answer <= 1.6  # the answer in between started the backoff over


# --- status of an object on several clusters (kcpsyncer.summary) ---

def lb(*ips: str) -> dict[str, Any]:
    return {"loadBalancer": {"ingress": [{"ip": ip} for ip in ips]} if ips else {}}


def placed_service(targets: tuple[str, ...], status: dict[str, Any] | None = None,
                   **reported: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "web", "namespace": "default", "uid": "up-web", "resourceVersion": "5", "finalizers": [FINALIZER],
            "labels": {f"state.workload.kcp.io/{t}": "Sync" for t in targets},
            "annotations": {status_annotation(t): json.dumps(s) for t, s in reported.items()}}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}, **({"status": status} if status else {})}


def down_service(up: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    obj = downstream_object(up, api_version="v1", kind="Service", namespace=MAPPED, logical_cluster=LC,
                            sync_target=TARGET)
    obj["metadata"].update(uid="down-web", resourceVersion="9")
    return {**obj, "status": status}


async def test_the_syncer_writes_its_clusters_status_apart_then_the_summary() -> None:
    h = Harness(SVC)
    up = placed_service((TARGET, "west"), lb("10.0.0.9"), west=lb("10.0.0.9"))
    h.caches([up], [down_service(up, lb("10.0.0.5"))])
    await h.reconcile()
    (_, _, annotations, kw), (_, _, status, status_kw) = [c for c in h.up.calls if c[0] == "patch"]
    assert annotations == {"metadata": {"annotations": {status_annotation(TARGET): json.dumps(
        lb("10.0.0.5"), sort_keys=True, separators=(",", ":"))}}} and "subresource" not in kw
    assert status == {"status": lb("10.0.0.5", "10.0.0.9")} and status_kw["subresource"] == "status"


async def test_a_service_on_one_cluster_gets_that_clusters_status_without_annotations() -> None:
    h = Harness(SVC)
    up = placed_service((TARGET,))
    h.caches([up], [down_service(up, lb("10.0.0.5"))])
    await h.reconcile()
    [(_, _, status, kw)] = [c for c in h.up.calls if c[0] == "patch"]
    assert status == {"status": lb("10.0.0.5")} and kw["subresource"] == "status"


# --- a tenant's cluster-scoped objects on a shared physical cluster: mapped names, and the fields naming
# classes rewritten to them (kcpsyncer/classes.py)

SC = APIType("storage.k8s.io/v1", "storageclasses", "StorageClass", namespaced=False, has_status=False)
PVC = APIType("v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True, has_status=True)
ASSIGNED = {"workloads.kcp.io/cluster": TARGET}


def storage_class(name: str = "fast") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "example.com/disk",
            "metadata": {"name": name, "uid": f"up-{name}", "resourceVersion": "5", "labels": dict(ASSIGNED),
                         "finalizers": [f"workload.kcp.io/syncer-{TARGET}"]}}


def claim(storage_class_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "web", "namespace": "default", "uid": "up-web", "resourceVersion": "5",
                         "labels": dict(ASSIGNED), "finalizers": [f"workload.kcp.io/syncer-{TARGET}"]},
            "spec": {"storageClassName": storage_class_name, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def stateful_set() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"template": {"spec": {"priorityClassName": "high", "runtimeClassName": "gvisor",
                                           "containers": [{"name": "c", "image": "i"}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"storageClassName": "fast"}},
                                              {"metadata": {"name": "logs"}, "spec": {}}]}}


def test_every_field_naming_a_class_is_found_and_renamed_both_ways() -> None:
    sts = stateful_set()
    assert named("StatefulSet", sts) == {(STORAGE_CLASSES, "fast"), ("priorityclasses.scheduling.k8s.io", "high"),
                                         ("runtimeclasses.node.k8s.io", "gvisor")}
    names = {(STORAGE_CLASSES, "fast"): "kcp-1", ("priorityclasses.scheduling.k8s.io", "high"): "kcp-2"}
    rename("StatefulSet", sts, names)
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "kcp-1"
    assert sts["spec"]["volumeClaimTemplates"][1]["spec"] == {}  # no class named: the cluster's default
    assert sts["spec"]["template"]["spec"]["priorityClassName"] == "kcp-2"
    assert sts["spec"]["template"]["spec"]["runtimeClassName"] == "gvisor"  # not the tenant's: unchanged
    rename("StatefulSet", sts, inverse(names))
    assert sts == stateful_set()
    cron = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"priorityClassName": "high"}}}}}}
    ingress = {"spec": {"ingressClassName": "nginx"}}
    assert named("CronJob", cron) == {("priorityclasses.scheduling.k8s.io", "high")}
    assert named("Ingress", ingress) == {("ingressclasses.networking.k8s.io", "nginx")}


def test_a_cluster_scoped_name_is_mapped_per_logical_cluster() -> None:
    assert downstream_name(LC, "fast") == downstream_name(LC, "fast") != downstream_name("root:other", "fast")
    assert downstream_name(LC, "fast").startswith("kcp-") and downstream_name(LC, "fast") != "fast"


async def test_a_tenants_class_goes_down_under_its_mapped_name_and_only_that_copy_is_deleted() -> None:
    h = Harness(SC)
    up = storage_class()
    h.caches([up], [])
    await h.syncer._reconcile(SyncKey(SC.plural, "", "fast"))
    (verb, name, body, kw), = h.down.calls
    mapped = downstream_name(LC, "fast")
    assert (verb, name, body["metadata"]["name"], kw["namespace"]) == ("patch", mapped, mapped, None)
    assert body["metadata"]["annotations"]["syncer.kcp.io/upstream-name"] == "fast"
    assert body["provisioner"] == "example.com/disk"

    h.down.calls.clear()
    copy_down = {**body, "metadata": {**body["metadata"], "uid": "down-fast", "resourceVersion": "9"}}
    h.caches([], [copy_down])
    h.up.get_answer = APINotFoundError('storageclasses "fast" not found', status=404, reason="NotFound",
                                       details={"name": "fast", "kind": "storageclasses"})
    assert await h.syncer._reconcile(SyncKey(SC.plural, "", "fast")) is None
    (verb, name, kw), = h.down.calls
    assert (verb, name, kw["preconditions"]) == ("delete", mapped, {"uid": "down-fast"})


class ClaimHarness(Harness):
    """PVCs synced next to the tenant's StorageClasses."""

    def __init__(self) -> None:
        super().__init__(PVC)
        self.classes_up, self.classes_down = FakeResource(SC), FakeResource(SC)
        self.classes = SharedInformer(self.classes_up, cluster=LC)  # type: ignore[arg-type]
        down = SharedInformer(self.classes_down, cluster=TARGET)  # type: ignore[arg-type]
        self.syncer.types[STORAGE_CLASSES] = SyncedType(STORAGE_CLASSES, SC, SC, self.classes_up,  # type: ignore[arg-type]
                                                        self.classes_down, self.classes, down)
        down.replace([], "10")

    def applied(self) -> dict[str, Any]:
        return next(call[2] for call in self.down.calls if call[0] == "patch")


async def test_a_claim_naming_the_tenants_class_names_its_mapped_name_downstream() -> None:
    h = ClaimHarness()
    h.classes.replace([storage_class()], "10")
    h.caches([claim("fast")], [])
    await h.reconcile()
    assert h.applied()["spec"]["storageClassName"] == downstream_name(LC, "fast")
    assert h.applied()["metadata"]["namespace"] == MAPPED


async def test_a_class_not_yet_in_the_cache_is_asked_of_kcp() -> None:
    h = ClaimHarness()
    h.classes.replace([], "10")
    h.classes_up.get_answer = storage_class()
    h.caches([claim("fast")], [])
    await h.reconcile()
    assert h.applied()["spec"]["storageClassName"] == downstream_name(LC, "fast")


async def test_a_class_the_tenant_lacks_is_the_clusters_own_and_stays_decided() -> None:
    h = ClaimHarness()
    h.classes.replace([], "10")
    h.classes_up.get_answer = APINotFoundError('storageclasses "standard" not found', status=404,
                                               reason="NotFound", details={"name": "standard"})
    h.caches([claim("standard")], [])
    await h.reconcile()
    body = h.applied()
    assert body["spec"]["storageClassName"] == "standard"

    h.down.calls.clear()
    h.classes_up.calls.clear()
    live = copy.deepcopy(body)
    live["metadata"].update(uid="down-web", resourceVersion="9")
    h.caches([claim("standard")], [live])
    await h.reconcile()
    assert h.down.calls == [] and h.classes_up.calls == []  # decided: no lookup, no apply


async def test_a_class_deleted_before_its_claim_leaves_the_claim_downstream_as_it_is() -> None:
    h = ClaimHarness()
    h.classes.replace([storage_class()], "10")
    h.caches([claim("fast")], [])
    await h.reconcile()
    live = copy.deepcopy(h.applied())
    live["metadata"].update(uid="down-web", resourceVersion="9")
    h.down.calls.clear()
    h.classes.replace([], "11")  # `kubectl delete -f` deleted the class first
    h.classes_up.get_answer = APINotFoundError("gone", status=404, reason="NotFound", details={"name": "fast"})
    h.caches([claim("fast")], [live])
    await h.reconcile()
    assert h.down.calls == []  # an immutable storageClassName is not touched


def test_the_rename_is_part_of_the_apply_body_and_its_hash() -> None:
    names = {(STORAGE_CLASSES, "fast"): "kcp-1"}
    plain = downstream_object(claim("fast"), api_version="v1", kind="PersistentVolumeClaim", namespace=MAPPED,
                              logical_cluster=LC, sync_target=TARGET)
    mapped = downstream_object(claim("fast"), api_version="v1", kind="PersistentVolumeClaim", namespace=MAPPED,
                               logical_cluster=LC, sync_target=TARGET, class_names=names)
    assert mapped["spec"]["storageClassName"] == "kcp-1" and plain["spec"]["storageClassName"] == "fast"
    assert mapped["metadata"]["annotations"] != plain["metadata"]["annotations"]  # the spec hash differs


async def test_a_type_kcp_does_not_serve_is_reported_once_and_the_rest_still_syncs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """kcp without ReplicaSets: not mirrored, one log line however often it is looked for; ConfigMaps sync."""
    syncer = Harness().syncer
    syncer._unserved = {"replicasets.apps", "configmaps"}

    async def resolve(_: object, name: str) -> APIType | None:
        return CM if name == "configmaps" else None

    async def readable(*_: object) -> bool:
        return True

    monkeypatch.setattr("kcpsyncer.engine.resolve", resolve)
    monkeypatch.setattr("kcpsyncer.engine.readable_cluster_wide", readable)
    with structlog.testing.capture_logs() as logs:
        await syncer._discover()
        await syncer._discover()
    assert [e["resource"] for e in logs if e["event"] == "type not served; not synced yet"] == ["replicasets.apps"]
    assert "configmaps" in syncer.types and syncer._unserved == {"replicasets.apps"}
