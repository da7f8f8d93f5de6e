"""Objects near the size limits: lists of large objects are served, oversized objects refused as kube does.

gRPC's default 4 MiB message limit once made every list of five ~900 KiB ConfigMaps answer 503
(namespaced, per cluster and across `*`), and left their namespace stuck deleting.
"""

from __future__ import annotations

import asyncio
from typing import Any

from test_crds import CRD_PATH, served, wait_established, widget, widget_crd

from api import Api, configmap

BIG = 900 * 1024


async def wait_deleted(api: Api, prefix: str, namespace: str, resource_version: str, timeout: float = 30) -> None:
    """Until the namespace's DELETED event arrives."""
    params = {"fieldSelector": f"metadata.name={namespace}", "resourceVersion": resource_version}

    async def run() -> None:
        async for event in api.watch(f"{prefix}/api/v1/namespaces", params):
            if event["type"] == "DELETED":
                return

    await asyncio.wait_for(run(), timeout)


async def test_lists_of_large_configmaps_are_served_and_their_namespace_deletes(api: Api, unique: str) -> None:
    prefix, ns = f"/clusters/big-{unique}", "big"
    assert (await api.post(f"{prefix}/api/v1/namespaces", {"metadata": {"name": ns}})).status == 201
    for i in range(5):
        reply = await api.post(f"{prefix}/api/v1/namespaces/{ns}/configmaps",
                               configmap(f"cm{i}", {"payload": str(i) * BIG}))
        assert reply.status == 201, reply.body
    for path in (f"{prefix}/api/v1/namespaces/{ns}/configmaps", f"{prefix}/api/v1/configmaps",
                 "/clusters/*/api/v1/configmaps"):
        for params in ({}, {"resourceVersion": "0"}, {"limit": "3"}):
            reply = await api.get(path, params=params)
            assert reply.status == 200, (path, params, reply.body)
            mine = [o for o in reply.body["items"] if o["metadata"].get("namespace") == ns
                    and o["metadata"]["name"].startswith("cm") and len(o["data"]["payload"]) == BIG]
            if "limit" in params:  # under *, other clusters' ConfigMaps may come first
                assert len(reply.body["items"]) == 3 and reply.body["metadata"]["continue"], (path, params)
            else:
                assert len(mine) == 5, (path, params)
            assert all(o["metadata"]["resourceVersion"] for o in reply.body["items"])
    deleting = await api.delete(f"{prefix}/api/v1/namespaces/{ns}")
    assert deleting.status == 200, deleting.body
    await wait_deleted(api, prefix, ns, deleting.body["metadata"]["resourceVersion"])
    assert (await api.get(f"{prefix}/api/v1/namespaces/{ns}/configmaps")).body["items"] == []


async def test_a_paged_list_counts_the_remaining_items(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(5):
        assert (await api.post(path, configmap(f"c{i}", labels={"odd": str(i % 2)}))).status == 201
    first = await api.get(path, params={"limit": "2"})
    assert first.body["metadata"]["remainingItemCount"] == 3 and first.body["metadata"]["continue"]
    second = await api.get(path, params={"limit": "2", "continue": first.body["metadata"]["continue"]})
    assert second.body["metadata"]["remainingItemCount"] == 1
    last = await api.get(path, params={"limit": "2", "continue": second.body["metadata"]["continue"]})
    assert [o["metadata"]["name"] for o in last.body["items"]] == ["c4"]
    assert "remainingItemCount" not in last.body["metadata"] and "continue" not in last.body["metadata"]
    filtered = await api.get(path, params={"limit": "1", "labelSelector": "odd=0"})
    assert filtered.body["metadata"]["continue"] and "remainingItemCount" not in filtered.body["metadata"]


async def test_configmap_and_secret_data_over_1_mib_is_422(api: Api, namespace: str) -> None:
    cm: dict[str, Any] = configmap("huge", {"a": "x" * (600 * 1024), "b": "y" * (600 * 1024)})
    reply = await api.post(f"/api/v1/namespaces/{namespace}/configmaps", cm)
    assert reply.status == 422, reply.body
    assert reply.body["message"] == 'ConfigMap "huge" is invalid: []: Too long: may not be more than 1048576 bytes'
    assert reply.body["details"]["causes"] == [{"reason": "FieldValueTooLong", "field": "[]",
                                                "message": "Too long: may not be more than 1048576 bytes"}]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "huge"},
              "stringData": {"a": "x" * (1024 * 1024 + 1)}}
    reply = await api.post(f"/api/v1/namespaces/{namespace}/secrets", secret)
    assert reply.status == 422, reply.body
    assert reply.body["message"] == 'Secret "huge" is invalid: data: Too long: may not be more than 1048576 bytes'
    exactly = configmap("limit", {"a": "x" * (1024 * 1024)})
    assert (await api.post(f"/api/v1/namespaces/{namespace}/configmaps", exactly)).status == 201


async def test_an_object_over_etcds_request_limit_is_refused_with_etcds_error(api: Api, unique: str) -> None:
    prefix, group = f"/clusters/huge-{unique}", f"h{unique}.example.com"
    crd = widget_crd(group, extra_props={"blob": {"type": "string"}})
    assert (await api.post(f"{prefix}{CRD_PATH}", crd)).status == 201
    await wait_established(api, prefix, f"widgets.{group}")
    path = f"{prefix}/apis/{group}/v1/namespaces/default/widgets"
    await served(api, path)
    for size in (1700 * 1024, 2600 * 1024):  # over etcd's 1.5 MiB; over that and gRPC's overhead too
        reply = await api.post(path, widget("w", group=group, blob="z" * size))
        assert reply.status == 413, reply.body
        assert reply.body["kind"] == "Status" and reply.body["reason"] == "RequestEntityTooLarge"
        assert "request is too large" in reply.body["message"] or "larger than max" in reply.body["message"]
    assert (await api.get(f"{path}/w")).status == 404
