"""Watch: event stream, resume, bookmarks, timeouts, 410, selector transitions."""

from __future__ import annotations

import asyncio

from api import Api, collect, configmap, watching

CM = "/api/v1/namespaces/{ns}/configmaps"


async def test_watch_streams_added_modified_deleted_in_order(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    rv = (await api.get(path)).body["metadata"]["resourceVersion"]
    watch = await watching(api, path, {"resourceVersion": rv}, 3)
    created = (await api.post(path, configmap("w"))).body
    await api.put(f"{path}/w", dict(created, data={"k": "2"}))
    await api.delete(f"{path}/w")
    events = await watch
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_watch_resumes_from_a_resource_version(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    first = (await api.post(path, configmap("r1"))).body
    await api.post(path, configmap("r2"))
    await api.post(path, configmap("r3"))
    events = await collect(api, path, {"resourceVersion": first["metadata"]["resourceVersion"]}, 2)
    assert [e["object"]["metadata"]["name"] for e in events] == ["r2", "r3"]


async def test_watch_without_resource_version_starts_with_current_state(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    await api.post(path, configmap("s1"))
    await api.post(path, configmap("s2"))
    events = await collect(api, path, {}, 2)
    assert sorted(e["object"]["metadata"]["name"] for e in events) == ["s1", "s2"]
    assert all(e["type"] == "ADDED" for e in events)


async def test_bookmarks_arrive_when_allowed(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    rv = (await api.post(path, configmap("b"))).body["metadata"]["resourceVersion"]
    await api.post("/api/v1/namespaces/default/configmaps", configmap(f"bump-{namespace}"))
    events = await collect(api, path, {"resourceVersion": rv, "allowWatchBookmarks": "true"}, 1, timeout=15)
    assert events[0]["type"] == "BOOKMARK"
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)
    assert events[0]["object"]["kind"] == "ConfigMap"


async def test_timeout_seconds_ends_the_watch(api: Api, namespace: str) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    rv = (await api.get(CM.format(ns=namespace))).body["metadata"]["resourceVersion"]
    events = [e async for e in api.watch(CM.format(ns=namespace), {"resourceVersion": rv, "timeoutSeconds": "1"})]
    assert events == [] and 0.9 < loop.time() - started < 5


async def test_resource_version_older_than_the_cache_window_is_410_expired(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    first = (await api.post(path, configmap("old"))).body["metadata"]["resourceVersion"]
    fills = await asyncio.gather(*(api.post(path, configmap(f"fill-{i}")) for i in range(310)))  # more than the window holds
    revisions = sorted(int(reply.body["metadata"]["resourceVersion"]) for reply in fills)
    # the watch cache has them all once a watch from the last but one hands out the last
    last = await collect(api, path, {"resourceVersion": str(revisions[-2])}, 1)
    assert last[0]["object"]["metadata"]["resourceVersion"] == str(revisions[-1])
    events = await collect(api, path, {"resourceVersion": first}, 1)
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


async def test_label_selector_watch_sees_objects_enter_and_leave(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    created = (await api.post(path, configmap("sel"))).body
    rv = created["metadata"]["resourceVersion"]
    watch = await watching(api, path, {"resourceVersion": rv, "labelSelector": "in=yes"}, 2)
    labelled = await api.patch(f"{path}/sel", {"metadata": {"labels": {"in": "yes"}}}, "application/merge-patch+json")
    assert labelled.status == 200
    await api.patch(f"{path}/sel", {"metadata": {"labels": {"in": "no"}}}, "application/merge-patch+json")
    events = await watch
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


async def test_many_watchers_share_one_stream(api: Api, kcp, namespace: str) -> None:  # type: ignore[no-untyped-def]
    path = CM.format(ns=namespace)
    rv = (await api.get(path)).body["metadata"]["resourceVersion"]
    tasks = [await watching(api, path, {"resourceVersion": rv}, 1) for _ in range(50)]
    metrics = await api.get("/metrics")
    gauge = [line for line in metrics.body.splitlines() if line.startswith("apiserver_registered_watchers")]
    assert gauge and float(gauge[0].split()[-1]) >= 50
    await api.post(path, configmap("fan"))
    results = await asyncio.gather(*tasks)
    assert all(r[0]["object"]["metadata"]["name"] == "fan" for r in results)
