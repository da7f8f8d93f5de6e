"""Logical clusters: /clusters/<name>/..., isolation, first-write creation, the `*` view."""

from __future__ import annotations

from api import Api, configmap


async def test_a_new_logical_cluster_is_born_with_kubes_system_namespaces(api: Api, unique: str) -> None:
    base = f"/clusters/team-{unique}"
    created = await api.post(f"{base}/api/v1/namespaces/default/configmaps", configmap("first"))
    assert created.status == 201, created.body
    namespaces = await api.get(f"{base}/api/v1/namespaces")
    assert [n["metadata"]["name"] for n in namespaces.body["items"]] == [
        "default", "kube-node-lease", "kube-public", "kube-system"]
    assert all(n["status"]["phase"] == "Active" for n in namespaces.body["items"])
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node-1"}}
    assert (await api.post(f"{base}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease)
            ).status == 201  # a node heartbeat has its namespace


async def test_a_deleted_kube_node_lease_namespace_is_made_again(api: Api, unique: str) -> None:
    """As kube-apiserver's system-namespaces controller does (issue 28 item 9); default, kube-system and
    kube-public may not be deleted at all."""
    import asyncio

    base = f"/clusters/lease-{unique}"
    assert (await api.post(f"{base}/api/v1/namespaces/default/configmaps", configmap("first"))).status == 201
    first = (await api.get(f"{base}/api/v1/namespaces/kube-node-lease")).body["metadata"]["uid"]
    assert (await api.delete(f"{base}/api/v1/namespaces/kube-node-lease")).status == 200
    assert (await api.delete(f"{base}/api/v1/namespaces/kube-system")).status == 403
    async with asyncio.timeout(30):
        while True:
            again = await api.get(f"{base}/api/v1/namespaces/kube-node-lease")
            if again.status == 200 and again.body["metadata"]["uid"] != first and \
                    again.body["status"]["phase"] == "Active":
                break
            await asyncio.sleep(0.1)


async def test_objects_are_invisible_across_logical_clusters(api: Api, unique: str) -> None:
    a, b = f"/clusters/a-{unique}", f"/clusters/b-{unique}"
    await api.post(f"{a}/api/v1/namespaces/default/configmaps", configmap("same", {"who": "a"}))
    await api.post(f"{b}/api/v1/namespaces/default/configmaps", configmap("same", {"who": "b"}))
    assert (await api.get(f"{a}/api/v1/namespaces/default/configmaps/same")).body["data"] == {"who": "a"}
    assert (await api.get(f"{b}/api/v1/namespaces/default/configmaps/same")).body["data"] == {"who": "b"}
    await api.post(f"{a}/api/v1/namespaces/default/configmaps", configmap("only-a"))
    assert (await api.get(f"{b}/api/v1/namespaces/default/configmaps/only-a")).status == 404
    listed = await api.get(f"{b}/api/v1/configmaps")
    assert [i["metadata"]["name"] for i in listed.body["items"]] == ["same"]


async def test_unprefixed_paths_serve_the_admin_cluster(api: Api, unique: str) -> None:
    await api.post("/api/v1/namespaces/default/configmaps", configmap(f"adm-{unique}"))
    via_prefix = await api.get(f"/clusters/admin/api/v1/namespaces/default/configmaps/adm-{unique}")
    assert via_prefix.status == 200


async def test_bad_cluster_names_are_400_status(api: Api) -> None:
    for name in ("UPPER", "-lead", "trail-", "a" * 81, "under_score", "a::b"):
        reply = await api.get(f"/clusters/{name}/api/v1/namespaces")
        assert reply.status == 400, name
        assert reply.body["kind"] == "Status" and reply.body["reason"] == "BadRequest"
    ok = await api.get("/clusters/root:org:team-1/api/v1/namespaces")
    assert ok.status == 200


async def test_wildcard_list_spans_clusters_and_annotates_each_object(api: Api, unique: str) -> None:
    label = {"spread": unique}
    for cluster in ("w1", "w2"):
        await api.post(f"/clusters/{cluster}-{unique}/api/v1/namespaces/default/configmaps",
                       configmap("x", labels=label))
    reply = await api.get("/clusters/*/api/v1/configmaps", params={"labelSelector": f"spread={unique}"})
    assert reply.status == 200
    clusters = sorted(i["metadata"]["annotations"]["kcp.io/cluster"] for i in reply.body["items"])
    assert clusters == [f"w1-{unique}", f"w2-{unique}"]


async def test_wildcard_watch_sees_every_cluster(api: Api, unique: str) -> None:
    listed = await api.get("/clusters/*/api/v1/configmaps", params={"labelSelector": f"ww={unique}"})
    rv = listed.body["metadata"]["resourceVersion"]
    for cluster in ("v1", "v2"):
        await api.post(f"/clusters/{cluster}-{unique}/api/v1/namespaces/default/configmaps",
                       configmap("y", labels={"ww": unique}))
    seen = []
    async for event in api.watch("/clusters/*/api/v1/configmaps",
                                 {"resourceVersion": rv, "labelSelector": f"ww={unique}", "timeoutSeconds": "5"}):
        seen.append((event["type"], event["object"]["metadata"]["annotations"]["kcp.io/cluster"]))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", f"v1-{unique}"), ("ADDED", f"v2-{unique}")]


async def test_writes_under_the_wildcard_are_405(api: Api) -> None:
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        path = "/clusters/*/api/v1/namespaces/default/configmaps" + ("" if method == "POST" else "/x")
        reply = await api.request(method, path, configmap("x"), content_type="application/merge-patch+json"
                                  if method == "PATCH" else "application/json")
        assert reply.status == 405, method
        assert reply.body["kind"] == "Status"
    get_one = await api.get("/clusters/*/api/v1/namespaces/default/configmaps/x")
    assert get_one.status == 405


async def test_discovery_and_openapi_under_a_cluster_prefix(api: Api, unique: str) -> None:
    base = f"/clusters/disc-{unique}"
    assert (await api.get(f"{base}/api/v1")).status == 200
    index = await api.get(f"{base}/openapi/v3")
    url = index.body["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith(f"{base}/openapi/v3/api/v1")
    doc = await api.get(url.split("?")[0])
    assert doc.status == 200 and "io.k8s.api.core.v1.ConfigMap" in doc.body["components"]["schemas"]
