"""The shared informer against a real kcp-apiserver: order, wildcard keys, disconnects, 410, restarts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from structlog.testing import capture_logs

from kcp_process import KcpServer
from kcpcommon.clients import ClientFactory
from kcpcommon.dynamic import DynamicResource
from kcpcommon.errors import APIGoneError
from kcpcommon.informer import DeletedFinalStateUnknown, SharedInformer, strip_managed_fields
from kcpcommon.keys import ObjectKey
from kcpcommon.reflector import ReflectorOptions
from kcpcommon.tasks import cancel_and_wait, spawn

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")

FAST = ReflectorOptions(backoff_initial=0.05, backoff_cap=0.3)


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


class Recorder:
    """Handler calls, in order, as (event, name, object)."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()

    def on_add(self, obj: Any) -> None:
        self.events.put_nowait(("add", obj["metadata"]["name"], obj))

    def on_update(self, old: Any, new: Any) -> None:
        self.events.put_nowait(("update", new["metadata"]["name"], new))

    def on_delete(self, obj: Any) -> None:
        name = obj.key.name if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
        self.events.put_nowait(("delete", name, obj))

    async def next(self, timeout: float = 10.0) -> tuple[str, str, Any]:
        return await asyncio.wait_for(self.events.get(), timeout)

    async def until(self, event: str, name: str, timeout: float = 15.0) -> Any:
        """Skip to the first `event` for `name`; returns its object."""
        async with asyncio.timeout(timeout):
            while True:
                kind, got, obj = await self.events.get()
                if (kind, got) == (event, name):
                    return obj


@asynccontextmanager
async def running(informer: SharedInformer) -> AsyncIterator[Recorder]:
    recorder = Recorder()
    informer.add_handler(on_add=recorder.on_add, on_update=recorder.on_update, on_delete=recorder.on_delete,
                         name="recorder")
    task = spawn(informer.run(), name=informer.name)
    try:
        assert await informer.wait_for_sync(10), "informer did not sync"
        yield recorder
    finally:
        await cancel_and_wait(task)


def configmaps(clients: ClientFactory, cluster: str) -> DynamicResource:
    return clients.dynamic(cluster).resource("v1", "configmaps", namespaced=True)


async def test_informer_sees_create_update_delete_in_order(clients: ClientFactory, namespace: str) -> None:
    api = configmaps(clients, "admin")
    await api.create(configmap("before", v="0"), namespace=namespace)
    informer = SharedInformer(api, cluster="admin", namespace=namespace, options=FAST)
    async with running(informer) as seen:
        assert (await seen.next())[:2] == ("add", "before")
        await api.create(configmap("cm", v="1"), namespace=namespace)
        await api.patch("cm", {"data": {"v": "2"}}, namespace=namespace)
        await api.delete("cm", namespace=namespace)
        events = [await seen.next() for _ in range(3)]
        assert [e[:2] for e in events] == [("add", "cm"), ("update", "cm"), ("delete", "cm")]
        assert events[1][2]["data"] == {"v": "2"}
        assert ObjectKey("admin", namespace, "before") in informer.indexer
        assert ObjectKey("admin", namespace, "cm") not in informer.indexer


async def test_informer_over_all_clusters_keys_objects_by_their_logical_cluster(
        clients: ClientFactory, unique: str) -> None:
    one, two = f"team-a-{unique}", f"team-b-{unique}"
    await configmaps(clients, one).create(configmap(f"a-{unique}"), namespace="default")
    informer = SharedInformer(configmaps(clients, "*"), cluster="*", label_selector=f"test={unique}", options=FAST)
    async with running(informer) as seen:
        await configmaps(clients, one).patch(f"a-{unique}", {"metadata": {"labels": {"test": unique}}},
                                             namespace="default")
        labelled = configmap(f"b-{unique}")
        labelled["metadata"]["labels"] = {"test": unique}
        await configmaps(clients, two).create(labelled, namespace="default")
        await seen.until("add", f"a-{unique}")
        await seen.until("add", f"b-{unique}")
        assert sorted(informer.indexer.keys()) == [ObjectKey(one, "default", f"a-{unique}"),
                                                   ObjectKey(two, "default", f"b-{unique}")]
        await configmaps(clients, two).delete(f"b-{unique}", namespace="default")
        await seen.until("delete", f"b-{unique}")
        assert informer.indexer.keys() == [ObjectKey(one, "default", f"a-{unique}")]
        assert [o["metadata"]["name"] for o in informer.indexer.by_index("cluster", one)] == [f"a-{unique}"]


ProxyMaker = Callable[[int], Awaitable[Any]]


async def until_expired(api: DynamicResource, namespace: str, resource_version: str, timeout: float = 10.0) -> None:
    """Wait until the server's watch cache has moved past `resource_version`: a watch from it is 410 Gone."""
    async with asyncio.timeout(timeout):
        while True:
            try:
                async with contextlib.aclosing(api.watch_stream(namespace=namespace, timeout_seconds=1,
                                                                resource_version=resource_version)) as events:
                    async for _ in events:  # still replayable: the cache has not caught up yet
                        break
            except APIGoneError:
                return
            await asyncio.sleep(0.05)


async def test_informer_delivers_a_delete_missed_during_a_disconnect_as_a_tombstone(
        kcp: KcpServer, clients: ClientFactory, namespace: str, make_proxy: ProxyMaker,
        kubeconfig_text: Callable[..., str], unique: str) -> None:
    """The delete happens while the watch is cut and 200+ other changes push it out of the server's
    watch cache: resuming is 410 Gone, so only the relist can notice the object is missing."""
    api = configmaps(clients, "admin")
    await api.create(configmap("doomed"), namespace=namespace)
    await api.create(configmap("survivor"), namespace=namespace)
    proxy = await make_proxy(kcp.port)
    async with await ClientFactory.load(kubeconfig_text(kcp, port=proxy.port), component="test", version="0",
                                        qps=0, burst=0) as cut_off:
        informer = SharedInformer(configmaps(cut_off, "admin"), cluster="admin", namespace=namespace, options=FAST)
        async with running(informer) as seen:
            await seen.until("add", "survivor")
            lists = informer.reflector.lists
            proxy.cut()
            await api.delete("doomed", namespace=namespace)
            filler = f"fill-{unique}"
            await configmaps(clients, "admin").create(configmap(filler), namespace="default")
            for i in range(210):  # the server's watch cache holds 200 events
                await api.patch(filler, {"data": {"i": str(i)}}, namespace="default")
            await until_expired(api, namespace, informer.last_sync_resource_version)
            proxy.restore()
            tombstone = await seen.until("delete", "doomed")
            assert isinstance(tombstone, DeletedFinalStateUnknown)
            assert tombstone.key == ObjectKey("admin", namespace, "doomed")
            assert tombstone.obj["metadata"]["name"] == "doomed"
            assert informer.reflector.lists == lists + 1
            assert informer.indexer.keys() == [ObjectKey("admin", namespace, "survivor")]
            await api.create(configmap("after"), namespace=namespace)
            await seen.until("add", "after")


async def test_informer_survives_an_apiserver_restart_without_losing_a_delete(
        restartable_kcp: KcpServer, make_proxy: ProxyMaker, kubeconfig_text: Callable[..., str]) -> None:
    server = restartable_kcp
    proxy = await make_proxy(server.port)
    async with await ClientFactory.load(server.kubeconfig, component="test", version="0", qps=0, burst=0) as direct, \
            await ClientFactory.load(kubeconfig_text(server, port=proxy.port), component="test", version="0",
                                     qps=0, burst=0) as through_proxy:
        api = configmaps(direct, "admin")
        await api.create(configmap("kept"), namespace="default")
        await api.create(configmap("deleted-while-down"), namespace="default")
        informer = SharedInformer(configmaps(through_proxy, "admin"), cluster="admin", namespace="default",
                                  options=FAST)
        async with running(informer) as seen:
            await seen.until("add", "deleted-while-down")
            await asyncio.to_thread(server.stop)
            proxy.cut()  # from here until restore(), the informer cannot reach the restarted server
            await asyncio.to_thread(server.start)
            await api.delete("deleted-while-down", namespace="default")
            proxy.restore()
            # the restarted server may still hold the delete in its watch cache (then it arrives as a
            # DELETED event) or not (410, relist, tombstone): either way it must arrive
            deleted = await seen.until("delete", "deleted-while-down", timeout=20)
            assert isinstance(deleted, DeletedFinalStateUnknown) or deleted["metadata"]["name"] == "deleted-while-down"
            await api.create(configmap("created-after-restart"), namespace="default")
            await seen.until("add", "created-after-restart")
            assert sorted(k.name for k in informer.indexer.keys()) == ["created-after-restart", "kept"]


async def test_the_first_list_is_read_in_pages(clients: ClientFactory, namespace: str) -> None:
    api = configmaps(clients, "admin")
    await asyncio.gather(*(api.create(configmap(f"p{i}"), namespace=namespace) for i in range(5)))
    informer = SharedInformer(api, cluster="admin", namespace=namespace,
                              options=ReflectorOptions(page_size=2, backoff_initial=0.05))
    async with running(informer):
        assert sorted(k.name for k in informer.indexer.keys()) == [f"p{i}" for i in range(5)]
        assert all(o["kind"] == "ConfigMap" and o["apiVersion"] == "v1" for o in informer.indexer.list())


async def test_a_handler_added_after_sync_first_gets_every_cached_object(
        clients: ClientFactory, namespace: str) -> None:
    api = configmaps(clients, "admin")
    for name in ("one", "two"):
        await api.create(configmap(name), namespace=namespace)
    informer = SharedInformer(api, cluster="admin", namespace=namespace, options=FAST)
    async with running(informer):
        late = Recorder()
        registration = informer.add_handler(on_add=late.on_add, name="late")
        assert sorted([(await late.next())[1], (await late.next())[1]]) == ["one", "two"]
        async with asyncio.timeout(5):
            while not registration.has_synced:
                await asyncio.sleep(0.01)


async def test_a_failing_handler_is_logged_keeps_its_later_events_and_never_stops_the_others(
        clients: ClientFactory, namespace: str) -> None:
    api = configmaps(clients, "admin")
    informer = SharedInformer(api, cluster="admin", namespace=namespace, options=FAST)
    attempted: list[str] = []
    both_attempted = asyncio.Event()

    def explode(obj: Any) -> None:
        attempted.append(obj["metadata"]["name"])
        if len(attempted) == 2:
            both_attempted.set()
        raise RuntimeError("handler bug")

    informer.add_handler(on_add=explode, name="exploding")
    with capture_logs() as logs:
        async with running(informer) as seen:
            await api.create(configmap("x"), namespace=namespace)
            await seen.until("add", "x")
            await api.create(configmap("y"), namespace=namespace)
            await seen.until("add", "y")
            await asyncio.wait_for(both_attempted.wait(), 5)  # that handler runs in its own task
    assert attempted == ["x", "y"]  # one failure did not stop that handler either
    failures = [e for e in logs if e["event"] == "event handler failed"]
    assert [(e["informer"], e["handler"], e["notification"], e["log_level"]) for e in failures] == [
        (informer.name, "exploding", "add", "error")] * 2
    assert all(e["exc_info"] for e in failures)  # the traceback is logged


async def test_cached_objects_are_read_only(clients: ClientFactory, namespace: str) -> None:
    api = configmaps(clients, "admin")
    await api.create(configmap("ro", k="v"), namespace=namespace)
    informer = SharedInformer(api, cluster="admin", namespace=namespace, options=FAST)
    async with running(informer):
        key = ObjectKey("admin", namespace, "ro")
        cached = informer.indexer.get(key)
        assert cached is not None
        with pytest.raises(TypeError):
            cached["data"]["k"] = "changed"  # type: ignore[index]
        copy = informer.indexer.get_copy(key)
        assert copy is not None
        copy["data"]["k"] = "changed"
        assert informer.indexer.get(key)["data"] == {"k": "v"}  # type: ignore[index]


async def test_a_transform_trims_listed_and_watched_objects_before_they_are_cached(
        clients: ClientFactory, namespace: str) -> None:
    api = configmaps(clients, "admin")
    listed = await api.create(configmap("listed", k="v"), namespace=namespace)
    assert listed["metadata"].get("managedFields"), "the server records managed fields"
    informer = SharedInformer(api, cluster="admin", namespace=namespace, options=FAST,
                              transform=strip_managed_fields)
    async with running(informer) as seen:
        assert "managedFields" not in (await seen.until("add", "listed"))["metadata"]
        await api.create(configmap("watched", k="v"), namespace=namespace)
        await api.patch("watched", {"data": {"k": "w"}}, namespace=namespace)
        assert "managedFields" not in (await seen.until("add", "watched"))["metadata"]
        updated = await seen.until("update", "watched")
        assert updated["data"] == {"k": "w"} and "managedFields" not in updated["metadata"]
        await api.delete("watched", namespace=namespace)
        assert "managedFields" not in (await seen.until("delete", "watched"))["metadata"]
        cached = informer.indexer.get(ObjectKey("admin", namespace, "listed"))
        assert cached is not None and "managedFields" not in cached["metadata"]
