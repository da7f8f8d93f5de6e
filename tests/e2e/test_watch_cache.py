"""Reads served from the watch cache's state, as kube's are, and objects across logical clusters shown
by their own cluster's definition of the resource."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from test_crds import CRD_PATH, served, wait_established, widget, widget_crd

from api import Api, configmap

CM = "/api/v1/namespaces/{ns}/configmaps"


async def test_a_list_at_resource_version_0_is_the_whole_cached_state_and_ignores_limit(api: Api,
                                                                                       namespace: str) -> None:
    path = CM.format(ns=namespace)
    for name in ("c", "a", "b"):
        await api.post(path, configmap(name))
    any_state = await api.get(path, params={"resourceVersion": "0", "limit": "1"})
    assert [i["metadata"]["name"] for i in any_state.body["items"]] == ["a", "b", "c"]  # etcd's key order
    assert "continue" not in any_state.body["metadata"]
    consistent = await api.get(path, params={"limit": "1"})  # a limit at "" pages through etcd, as kube
    assert [i["metadata"]["name"] for i in consistent.body["items"]] == ["a"]
    assert consistent.body["metadata"]["continue"]


async def test_consistent_and_cached_lists_see_a_write_as_soon_as_it_is_acknowledged(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    for i in range(20):
        created = (await api.post(path, configmap(f"rw-{i}"))).body
        rv = created["metadata"]["resourceVersion"]
        consistent = await api.get(path)  # read-your-writes, from the cache only when it has caught up
        assert f"rw-{i}" in {o["metadata"]["name"] for o in consistent.body["items"]}
        at_least = await api.get(path, params={"resourceVersion": rv})
        assert int(at_least.body["metadata"]["resourceVersion"]) >= int(rv)
        assert f"rw-{i}" in {o["metadata"]["name"] for o in at_least.body["items"]}
    await api.delete(f"{path}/rw-0")
    assert "rw-0" not in {o["metadata"]["name"] for o in (await api.get(path)).body["items"]}


async def _add_default(api: Api, prefix: str, group: str, shape: str) -> None:
    """Give the cluster's CRD a new defaulted field, and wait until reads apply it."""
    crd = (await api.get(f"{prefix}{CRD_PATH}/widgets.{group}")).body
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] = {
        "type": "string", "default": shape}
    assert (await api.put(f"{prefix}{CRD_PATH}/widgets.{group}", crd)).status == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = await api.get(f"{prefix}/apis/{group}/v1/namespaces/default/widgets/w")
        if got.body["spec"].get("shape") == shape:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{prefix} never defaulted shape to {shape}")


async def test_across_clusters_each_object_is_shown_by_its_own_clusters_crd(api: Api, unique: str) -> None:
    group = f"own{unique}.example.com"
    shapes = {f"round-{unique}": "round", f"square-{unique}": "square"}
    for cluster in shapes:
        prefix = f"/clusters/{cluster}"
        assert (await api.post(f"{prefix}{CRD_PATH}", widget_crd(group))).status == 201
        await wait_established(api, prefix, f"widgets.{group}")
        await served(api, f"{prefix}/apis/{group}/v1/namespaces/default/widgets")
        assert (await api.post(f"{prefix}/apis/{group}/v1/namespaces/default/widgets",
                               widget("w", group=group))).status == 201
    for cluster, shape in shapes.items():  # stored without a shape; each cluster's CRD defaults it its own way
        await _add_default(api, f"/clusters/{cluster}", group, shape)

    def shown(objs: list[dict[str, Any]]) -> dict[str, str]:
        return {o["metadata"]["annotations"]["kcp.io/cluster"]: o["spec"]["shape"] for o in objs}

    for rv in ("", "0"):
        listed = await api.get(f"/clusters/*/apis/{group}/v1/widgets", params={"resourceVersion": rv} if rv else {})
        assert shown(listed.body["items"]) == shapes
    initial: list[dict[str, Any]] = []
    async for event in api.watch(f"/clusters/*/apis/{group}/v1/widgets", {"timeoutSeconds": "5"}):
        initial.append(event["object"])
        if len(initial) == 2:
            break
    assert shown(initial) == shapes
    start = listed.body["metadata"]["resourceVersion"]
    for cluster in shapes:
        assert (await api.patch(f"/clusters/{cluster}/apis/{group}/v1/namespaces/default/widgets/w",
                                {"metadata": {"labels": {"seen": "yes"}}}, "application/merge-patch+json")).status == 200
    changed: list[dict[str, Any]] = []
    async for event in api.watch(f"/clusters/*/apis/{group}/v1/widgets",
                                 {"resourceVersion": start, "timeoutSeconds": "5"}):
        changed.append(event["object"])
        if len(changed) == 2:
            break
    assert shown(changed) == shapes
