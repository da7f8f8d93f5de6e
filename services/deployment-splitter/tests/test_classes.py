"""The classes workloads name, placed where the objects naming them run (classes.py, reconcile_classes.py)."""

from __future__ import annotations

from typing import Any

from kcp_deployment_splitter.classes import CLASSES_INDEX, class_references, classes_index
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, PLACED_ANNOTATION
from kcp_deployment_splitter.reconcile_classes import ClassPlacer

from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey, key_for
from kcpcommon.store import Indexer

TENANT = "tenant"


class Cache:
    """What the placer reads of an informer: its indexer, and whether it has listed."""

    def __init__(self, kind: str | None, *objs: dict[str, Any], synced: bool = True) -> None:
        self.indexer = Indexer(key_for, {CLASSES_INDEX: classes_index(kind)} if kind else {})
        self.has_synced = synced
        for obj in objs:
            self.indexer.upsert(obj)


class Recorder:
    """A kcp ClientFactory that records the patches."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, str, dict[str, Any]]] = []

    def dynamic(self, cluster: str) -> Recorder:
        return self

    def resource(self, api_version: str, plural: str, *, namespaced: bool) -> Any:
        recorder = self

        class Resource:
            async def patch(self, name: str, body: dict[str, Any]) -> None:
                recorder.patches.append((plural, name, body))
        return Resource()


def meta(name: str, labels: dict[str, str] | None = None, namespace: str | None = "default",
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "labels": labels or {},
                           "annotations": {CLUSTER_ANNOTATION: TENANT, **(annotations or {})}}
    if namespace:
        out["namespace"] = namespace
    return out


def stateful_set(target: str | None, storage_class: str = "fast") -> dict[str, Any]:
    return {"metadata": meta("db", {ASSIGNMENT_LABEL: target} if target else {}),
            "spec": {"template": {"spec": {"priorityClassName": "high"}},
                     "volumeClaimTemplates": [{"spec": {"storageClassName": storage_class}}]}}


def claim(target: str, storage_class: str = "fast") -> dict[str, Any]:
    return {"metadata": meta(f"data-{target}", {f"state.workload.kcp.io/{target}": "Sync"}),
            "spec": {"storageClassName": storage_class}}


def storage_class(name: str = "fast", **extra: Any) -> dict[str, Any]:
    return {"metadata": meta(name, namespace=None, **extra), "provisioner": "example.com/disk"}


def placer(classes: list[dict[str, Any]], *referrers: tuple[str, list[dict[str, Any]]],
           recorder: Recorder) -> ClassPlacer:
    return ClassPlacer(recorder, classes={"StorageClass": Cache(None, *classes)},  # type: ignore[arg-type]
                       referrers={kind: Cache(kind, *objs) for kind, objs in referrers})  # type: ignore[misc]


def test_every_field_that_names_a_class_is_found() -> None:
    assert class_references("StatefulSet", stateful_set("east")) == {("StorageClass", "fast"),
                                                                    ("PriorityClass", "high")}
    assert class_references("PersistentVolumeClaim", claim("east")) == {("StorageClass", "fast")}
    assert class_references("CronJob", {"spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "runtimeClassName": "gvisor"}}}}}}) == {("RuntimeClass", "gvisor")}
    assert class_references("Ingress", {"spec": {"ingressClassName": "nginx"}}) == {("IngressClass", "nginx")}
    assert classes_index("StatefulSet")(stateful_set(None)) == []  # placed nowhere: uses nothing yet


async def test_a_class_goes_where_the_objects_naming_it_run() -> None:
    recorder = Recorder()
    await placer([storage_class()], ("StatefulSet", [stateful_set("east")]),
                 ("PersistentVolumeClaim", [claim("west"), claim("north", "slow")]),
                 recorder=recorder).reconcile(ObjectKey(TENANT, "", ""))
    (plural, name, patch), = recorder.patches
    assert (plural, name) == ("storageclasses", "fast")
    assert patch["metadata"]["labels"] == {"state.workload.kcp.io/east": "Sync", "state.workload.kcp.io/west": "Sync"}
    assert patch["metadata"]["annotations"][PLACED_ANNOTATION] == "east,west"


async def test_a_class_leaves_a_cluster_with_its_last_user_there_and_another_tenants_users_do_not_count() -> None:
    placed = storage_class(labels={"state.workload.kcp.io/east": "Sync", "state.workload.kcp.io/west": "Sync"},
                           annotations={PLACED_ANNOTATION: "east,west"})
    other_tenant = stateful_set("west")
    other_tenant["metadata"]["annotations"][CLUSTER_ANNOTATION] = "someone-else"
    recorder = Recorder()
    await placer([placed], ("StatefulSet", [stateful_set("east"), other_tenant]),
                 recorder=recorder).reconcile(ObjectKey(TENANT, "", ""))
    (_, _, patch), = recorder.patches
    assert patch["metadata"]["labels"] == {"state.workload.kcp.io/west": None}


async def test_a_class_a_person_assigned_is_left_alone() -> None:
    recorder = Recorder()
    await placer([storage_class(labels={ASSIGNMENT_LABEL: "north"})], ("StatefulSet", [stateful_set("east")]),
                 recorder=recorder).reconcile(ObjectKey(TENANT, "", ""))
    assert recorder.patches == []
