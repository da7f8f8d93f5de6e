"""The watch cache's window is bounded in bytes as well as in events (issue 29: the window kept the last
state of every object of a deleted namespace, however large, until as many newer events pushed them out)."""

from __future__ import annotations

import asyncio

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import DELETED, TooOld, WatchCache

VALUE = 10_000  # bytes of data per object
BUDGET = 5 * VALUE  # the window's bytes: room for about four of these objects


@pytest.fixture
async def cache(etcd: Etcd3Client, prefix: str):  # type: ignore[no-untyped-def]
    cache = WatchCache(etcd, Storage(etcd), prefix, namespaced=True, capacity=1000, window_bytes=BUDGET)
    await cache.start()
    yield cache
    await cache.stop()


async def test_deleted_objects_leave_the_window_once_it_holds_its_bytes(cache: WatchCache, etcd: Etcd3Client,
                                                                        prefix: str) -> None:
    storage = Storage(etcd)
    start = cache.revision
    watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=start)
    created = [await storage.create(f"{prefix}c1/ns/o{i}", {"metadata": {"name": f"o{i}"}, "data": "x" * VALUE})
               for i in range(10)]
    for stored in created:
        await storage.delete(stored.key, stored.mod_revision)
    seen = []
    while len(seen) < 20:  # every watcher still gets every event
        type_, _ = await asyncio.wait_for(watcher.queue.get(), 5)  # type: ignore[misc]
        seen.append(type_)
    assert seen.count(DELETED) == 10
    assert sum(event.size for event in cache.events) <= BUDGET
    assert 1 <= len(cache.events) < 10
    assert cache.window_start > start
    with pytest.raises(TooOld):  # resuming from before the window: relist, as kube's 410 says
        cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=start)
    resumed = cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                              after_revision=cache.window_start)
    assert resumed.queue.qsize() == len(cache.events)  # from inside it, every event still there is replayed
