"""The server's shared informers on a real etcd: one per resource, fed by the watch cache, kcpcommon's handler API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.registry import informers as informers_module
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.informers import Informers, WatchCacheInformer, add_observer
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import WatchCache
from kcpcommon.frozen import FrozenDict
from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey
from kcpcommon.sharedcache import DeletedFinalStateUnknown
from kcpcommon.tasks import cancel_and_wait, spawn

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
DEADLINE = 10.0


def obj(name: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": {CLUSTER_ANNOTATION: "c1"}}, **extra}


class Recorder:
    """A handler that records (kind, name) and lets a test wait for a given count."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.changed = asyncio.Event()

    def add(self, o: Any) -> None:
        self._record("add", o)

    def update(self, old: Any, new: Any) -> None:
        self._record("update", new)

    def delete(self, o: Any) -> None:
        self._record("delete", o)

    def _record(self, kind: str, o: Any) -> None:
        self.seen.append((kind, o))
        self.changed.set()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(DEADLINE):
            while len(self.seen) < count:
                self.changed.clear()
                await self.changed.wait()

    def names(self) -> list[tuple[str, str]]:
        return [(kind, (o.obj if isinstance(o, DeletedFinalStateUnknown) else o)["metadata"]["name"])
                for kind, o in self.seen]


@pytest.fixture
async def cache(etcd: Etcd3Client, prefix: str) -> AsyncIterator[WatchCache]:
    cache = WatchCache(etcd, Storage(etcd), prefix, namespaced=True)
    await cache.start()
    yield cache
    await cache.stop()


async def test_handlers_get_frozen_objects_of_every_state_then_every_change(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    await storage.create(prefix + "c1/ns/before", obj("before"))
    informer = WatchCacheInformer(cache, name="test")
    recorder = Recorder()
    registration = informer.add_handler(on_add=recorder.add, on_update=recorder.update, on_delete=recorder.delete)
    task = spawn(informer.run(), name="informer:test")
    try:
        await asyncio.wait_for(registration.wait_for_sync(), DEADLINE)
        created = await storage.create(prefix + "c1/ns/after", obj("after"))
        updated = await storage.update(prefix + "c1/ns/after", obj("after", data={"k": "v"}), created.mod_revision)
        await storage.delete(prefix + "c1/ns/after", updated.mod_revision)
        await recorder.until(4)
        assert recorder.names() == [("add", "before"), ("add", "after"), ("update", "after"), ("delete", "after")]
        assert all(isinstance(o, FrozenDict) for _, o in recorder.seen)
        cached = informer.indexer.get(ObjectKey("c1", "ns", "before"))
        assert isinstance(cached, FrozenDict) and cached["metadata"]["name"] == "before"
        with pytest.raises(TypeError):
            cached["metadata"]["name"] = "changed"  # type: ignore[index]
        assert ObjectKey("c1", "ns", "after") not in informer.indexer
    finally:
        await cancel_and_wait(task)


async def test_a_relist_reports_what_vanished_meanwhile_as_a_tombstone(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    kept = await storage.create(prefix + "c1/ns/kept", obj("kept"))
    doomed = await storage.create(prefix + "c1/ns/doomed", obj("doomed"))
    informer = WatchCacheInformer(cache, name="test")
    recorder = Recorder()
    informer.add_handler(on_add=recorder.add, on_update=recorder.update, on_delete=recorder.delete)
    task = spawn(informer.run(), name="informer:test")
    await recorder.until(2)
    await cancel_and_wait(task)  # not watching while these happen
    await storage.delete(prefix + "c1/ns/doomed", doomed.mod_revision)
    await storage.create(prefix + "c1/ns/born", obj("born"))
    assert await cache.reached(await storage.current_revision(), DEADLINE)
    task = spawn(informer.run(), name="informer:test")
    try:
        await recorder.until(4)
        assert sorted(recorder.names()[2:]) == [("add", "born"), ("delete", "doomed")]
        tombstone = next(o for kind, o in recorder.seen if kind == "delete")
        assert isinstance(tombstone, DeletedFinalStateUnknown)
        assert tombstone.key == ObjectKey("c1", "ns", "doomed") and tombstone.obj["metadata"]["name"] == "doomed"
        assert informer.indexer.get(ObjectKey("c1", "ns", "kept"))["metadata"]["resourceVersion"] == str(
            kept.mod_revision)  # unchanged: listed again, not reported again
    finally:
        await cancel_and_wait(task)


async def test_a_closed_watch_is_followed_again_from_a_fresh_list(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    informer = WatchCacheInformer(cache, name="test")
    recorder = Recorder()
    registration = informer.add_handler(on_add=recorder.add)
    task = spawn(informer.run(), name="informer:test")
    try:
        await asyncio.wait_for(registration.wait_for_sync(), DEADLINE)
        for watcher in list(cache.watchers):
            watcher.close("too old resource version: the watch cache was reset")  # what a cache reset does
        await storage.create(prefix + "c1/ns/later", obj("later"))
        await recorder.until(1)
        assert recorder.names() == [("add", "later")]
    finally:
        await cancel_and_wait(task)


async def test_a_decoded_informer_holds_objects_not_bytes_before_and_after_the_switch(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    created = await storage.create(prefix + "c1/ns/before", obj("before"))
    assert await cache.reached(created.mod_revision, DEADLINE)
    informer = WatchCacheInformer(cache, name="test")
    recorder = Recorder()
    registration = informer.add_handler(on_add=recorder.add)
    task = spawn(informer.run(), name="informer:test")
    try:
        await asyncio.wait_for(registration.wait_for_sync(), DEADLINE)
        before = ObjectKey("c1", "ns", "before")
        assert informer.indexer.get(before) is not informer.indexer.get(before)  # bytes: decoded on each read
        informer.keep_decoded()
        assert informer.indexer.get(before) is informer.indexer.get(before)
        await storage.create(prefix + "c1/ns/after", obj("after"))
        await recorder.until(2)
        after = ObjectKey("c1", "ns", "after")
        assert informer.indexer.get(after) is informer.indexer.get(after)
        assert isinstance(informer.indexer.get(after), FrozenDict)
    finally:
        await cancel_and_wait(task)


async def test_one_informer_and_one_watcher_per_resource_whatever_the_consumers(etcd: Etcd3Client) -> None:
    caches = WatchCaches(etcd, Storage(etcd), capacity=100)
    informers = Informers(caches)
    try:
        first, second = await asyncio.gather(informers.get(CONFIGMAP), informers.get(CONFIGMAP))
        assert first is second
        registrations = [first.add_handler(name=f"consumer-{i}") for i in range(3)]
        for registration in registrations:
            await asyncio.wait_for(registration.wait_for_sync(), DEADLINE)
        assert len(caches.caches[CONFIGMAP.prefix].watchers) == 1
    finally:
        await informers.stop()
        await caches.stop()


async def test_a_decoded_informer_s_update_shares_what_did_not_change_with_the_state_it_replaces(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    informer = WatchCacheInformer(cache, name="test")
    informer.keep_decoded()
    recorder = Recorder()
    informer.add_handler(on_add=recorder.add, on_update=recorder.update, inline=True)
    task = spawn(informer.run(), name="informer:test")
    try:
        created = await storage.create(prefix + "c1/ns/web", obj("web", spec={"image": "nginx"}, data={"k": "1"}))
        await recorder.until(1)
        key = ObjectKey("c1", "ns", "web")
        before = informer.indexer.get(key)
        await storage.update(prefix + "c1/ns/web", obj("web", spec={"image": "nginx"}, data={"k": "2"}),
                             created.mod_revision)
        await recorder.until(2)
        after = informer.indexer.get(key)
        assert before is not None and after is not None
        assert after["data"] == {"k": "2"} and after["spec"] is before["spec"]
        assert isinstance(after["data"], FrozenDict)
    finally:
        await cancel_and_wait(task)


async def test_an_observer_s_update_decodes_no_old_state(
        cache: WatchCache, etcd: Etcd3Client, prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[Any] = []
    load = informers_module._load

    def counting_load(stored: Any) -> Any:
        loads.append(stored)
        return load(stored)

    monkeypatch.setattr(informers_module, "_load", counting_load)  # read when the informer is made
    storage = Storage(etcd)
    informer = WatchCacheInformer(cache, name="test")
    observed: list[tuple[str, bool]] = []
    changed = asyncio.Event()

    def observe(o: Any, deleted: bool) -> None:
        observed.append((o["data"]["k"], deleted))
        changed.set()

    add_observer(informer, observe, name="test")
    task = spawn(informer.run(), name="informer:test")
    try:
        created = await storage.create(prefix + "c1/ns/web", obj("web", data={"k": "1"}))
        await storage.update(prefix + "c1/ns/web", obj("web", data={"k": "2"}), created.mod_revision)
        async with asyncio.timeout(DEADLINE):
            while len(observed) < 2:
                changed.clear()
                await changed.wait()
        assert observed == [("1", False), ("2", False)] and loads == []
    finally:
        await cancel_and_wait(task)
