"""kcp's syncer virtual workspace: its paths, its one authorization question, and what it shows."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import SyncTargetRef
from kcp_apiserver.filters.requestinfo import split_syncer
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.tenancy.syncerview import SyncerViews, sync_request
from kcpcommon.keys import ASSIGNMENT_LABEL, CLUSTER_ANNOTATION, placed_label

REF = SyncTargetRef("compute", "north")
CONFIG_MAP = Resource("", "v1", "ConfigMap", "configmaps", "configmap", True)
STORAGE_CLASS = Resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False)


def test_the_path_names_the_sync_target_and_the_workspace_reached() -> None:
    ref, rest = split_syncer("/services/syncer/compute/north/clusters/team/api/v1/namespaces/default/configmaps")
    assert ref == REF and rest == "/clusters/team/api/v1/namespaces/default/configmaps"
    assert split_syncer("/clusters/team/api") == (None, "/clusters/team/api")
    for bad in ("/services/syncer/compute/north", "/services/syncer/compute//clusters/x/api",
                "/services/syncer/*/north/clusters/x/api", "/services/syncer/compute/north/api"):
        with pytest.raises(st.APIError) as caught:
            split_syncer(bad)
        assert caught.value.code == 404


def test_using_the_view_is_sync_on_the_sync_target_in_its_workspace() -> None:
    info = sync_request(REF)
    assert (info.cluster, info.verb, info.group, info.resource, info.name) == (
        "compute", "sync", "workload.kcp.io", "synctargets", "north")


def obj(cluster: str, name: str, namespace: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": {CLUSTER_ANNOTATION: cluster}, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta}


def test_it_shows_the_namespaces_placed_on_the_sync_target_and_what_is_in_them_only() -> None:
    views = SyncerViews(namespaces=None)  # type: ignore[arg-type]  # fed by hand below, as its observer would be
    here = {placed_label("compute", "north"): "Placed"}
    draining = {placed_label("compute", "north"): "Draining"}
    elsewhere = {placed_label("compute", "south"): "Placed"}
    for ns, deleted in ((obj("team", "default", labels=here), False), (obj("team", "old", labels=draining), False),
                        (obj("team", "other", labels=elsewhere), False), (obj("team", "gone", labels=here), True)):
        views._observe(ns, deleted)
    assert views.placed(REF, "team", "default") and views.placed(REF, "team", "old")
    assert not views.placed(REF, "team", "other") and not views.placed(REF, "team", "gone")
    assert not views.placed(REF, "elsewhere", "default")
    namespaces = views.shows(REF, NAMESPACE)
    assert namespaces(obj("team", "default", labels=here)) and not namespaces(obj("team", "private"))
    configmaps = views.shows(REF, CONFIG_MAP)
    assert configmaps(obj("team", "x", "default")) and not configmaps(obj("team", "x", "other"))
    assert not configmaps(obj("another-team", "x", "default"))
    classes = views.shows(REF, STORAGE_CLASS)  # cluster-scoped: what is assigned to the SyncTarget
    assert classes(obj("team", "fast", labels={ASSIGNMENT_LABEL: "north"}))
    assert not classes(obj("team", "slow", labels={ASSIGNMENT_LABEL: "south"}))
