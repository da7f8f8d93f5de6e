"""The watch cache on a real etcd: one etcd watch, many watchers, resumable window."""

from __future__ import annotations

import asyncio

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.storage.cachestate import Cached, CacheState
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import (
    ADDED,
    DELETED,
    MODIFIED,
    Batch,
    TooOld,
    WatchCache,
    Watcher,
    WatchEvent,
)


async def next_event(watcher, timeout: float = 5):  # type: ignore[no-untyped-def]
    return await asyncio.wait_for(watcher.queue.get(), timeout)


def probe(cache: WatchCache) -> Watcher:
    """A watcher on everything from now on, to learn how far the cache has dispatched."""
    return cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=cache.revision)


async def dispatched(probe: Watcher, revision: int, timeout: float = 5) -> None:
    """Wait until the probe has been handed the event at `revision`: the cache has dispatched that far."""
    async with asyncio.timeout(timeout):
        while (await probe.queue.get())[1].revision < revision:  # type: ignore[index]
            pass


@pytest.fixture
async def cache(etcd: Etcd3Client, prefix: str):  # type: ignore[no-untyped-def]
    cache = WatchCache(etcd, Storage(etcd), prefix, namespaced=True, capacity=5)
    await cache.start()
    yield cache
    await cache.stop()


async def test_events_arrive_in_order_with_types(cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    watcher = cache.subscribe(cluster="c1", namespace=None, name=None, matches=None, after_revision=cache.revision)
    created = await storage.create(prefix + "c1/ns/a", {"metadata": {"name": "a"}})
    updated = await storage.update(prefix + "c1/ns/a", {"metadata": {"name": "a"}, "x": 1}, created.mod_revision)
    await storage.delete(prefix + "c1/ns/a", updated.mod_revision)
    types = [(await next_event(watcher))[0] for _ in range(3)]
    assert types == [ADDED, MODIFIED, DELETED]


async def test_watchers_only_see_their_cluster_and_namespace(cache: WatchCache, etcd: Etcd3Client,
                                                             prefix: str) -> None:
    storage = Storage(etcd)
    mine = cache.subscribe(cluster="c1", namespace="ns", name=None, matches=None, after_revision=cache.revision)
    everyone = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=cache.revision)
    await storage.create(prefix + "c2/ns/a", {"metadata": {"name": "a"}})
    await storage.create(prefix + "c1/other/a", {"metadata": {"name": "a"}})
    await storage.create(prefix + "c1/ns/b", {"metadata": {"name": "b"}})
    _, event = await next_event(mine)
    assert (event.key.cluster, event.key.namespace, event.key.name) == ("c1", "ns", "b")
    assert [(await next_event(everyone))[1].key.cluster for _ in range(3)] == ["c2", "c1", "c1"]


async def test_event_bytes_are_encoded_once_and_shared(cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    watchers = [cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                                after_revision=cache.revision) for _ in range(3)]
    await Storage(etcd).create(prefix + "c/ns/a", {"metadata": {"name": "a"}})
    events = [(await next_event(w))[1] for w in watchers]
    assert events[0] is events[1] is events[2]
    assert events[0].encoded() is events[1].encoded()


async def test_resume_replays_the_window_and_older_is_too_old(cache: WatchCache, etcd: Etcd3Client,
                                                              prefix: str) -> None:
    storage = Storage(etcd)
    start = cache.revision
    everything = probe(cache)
    revs = [(await storage.create(f"{prefix}c/ns/{i}", {"metadata": {"name": str(i)}})).mod_revision
            for i in range(8)]
    await dispatched(everything, revs[-1])
    resumed = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=revs[5])
    names = [(await next_event(resumed))[1].key.name for _ in range(2)]
    assert names == ["6", "7"]
    with pytest.raises(TooOld):  # capacity 5: the first events fell out of the window
        cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=start)


async def test_selector_transitions_become_added_and_deleted(cache: WatchCache, etcd: Etcd3Client,
                                                             prefix: str) -> None:
    storage = Storage(etcd)
    watcher = cache.subscribe(cluster=None, namespace=None, name=None, after_revision=cache.revision,
                              matches=lambda o: o["metadata"].get("labels", {}).get("in") == "yes")
    a = await storage.create(prefix + "c/ns/a", {"metadata": {"name": "a"}})
    b = await storage.update(prefix + "c/ns/a", {"metadata": {"name": "a", "labels": {"in": "yes"}}}, a.mod_revision)
    await storage.update(prefix + "c/ns/a", {"metadata": {"name": "a", "labels": {"in": "no"}}}, b.mod_revision)
    assert [(await next_event(watcher))[0] for _ in range(2)] == [ADDED, DELETED]


async def test_the_window_keeps_only_bytes_yet_a_resumed_watch_sees_whole_objects(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    start = cache.revision
    watching = probe(cache)
    a = await storage.create(prefix + "c/ns/a", {"metadata": {"name": "a"}, "data": {"k": "1"}})
    b = await storage.update(prefix + "c/ns/a", {"metadata": {"name": "a", "labels": {"in": "yes"}}, "data": {"k": "2"}},
                             a.mod_revision)
    gone_rev = await storage.delete(prefix + "c/ns/a", b.mod_revision)
    await dispatched(watching, gone_rev)
    assert all(e._obj is None and e._prev is None for e in cache.events)  # decoded dicts were dropped
    everything = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=start)
    seen = [await next_event(everything) for _ in range(3)]
    assert [(t, e.obj["data"]["k"], e.obj["metadata"]["resourceVersion"]) for t, e in seen] == [
        (ADDED, "1", str(a.mod_revision)), (MODIFIED, "2", str(b.mod_revision)),
        (DELETED, "2", str(gone_rev))]
    assert seen[1][1].prev["data"]["k"] == "1"
    labelled = cache.subscribe(cluster=None, namespace=None, name=None, after_revision=start,
                               matches=lambda o: o["metadata"].get("labels", {}).get("in") == "yes")
    assert [(await next_event(labelled))[0] for _ in range(2)] == [ADDED, DELETED]


async def test_a_slow_watcher_is_closed_not_the_cache(etcd: Etcd3Client, prefix: str) -> None:
    cache = WatchCache(etcd, Storage(etcd), prefix, namespaced=True, watcher_queue=2)
    await cache.start()
    try:
        watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                                  after_revision=cache.revision)
        storage = Storage(etcd)
        for i in range(4):
            last = await storage.create(f"{prefix}c/ns/{i}", {"metadata": {"name": str(i)}})
        await asyncio.wait_for(watcher.done.wait(), 5)  # closed: it never read its queue of 2
        assert watcher.closed and watcher not in cache.watchers
        async with asyncio.timeout(5):  # the cache has dispatched every create: `fresh` starts after them
            while cache.revision < last.mod_revision:
                await asyncio.sleep(0.01)
        fresh = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=cache.revision)
        await storage.create(f"{prefix}c/ns/new", {"metadata": {"name": "new"}})
        assert (await next_event(fresh))[1].key.name == "new"
    finally:
        await cache.stop()


async def test_the_state_is_loaded_at_start_and_follows_every_change(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    before = await storage.create(prefix + "c/ns/before", {"metadata": {"name": "before"}})
    cache = WatchCache(etcd, storage, prefix, namespaced=True)
    await cache.start()
    try:
        assert [(k, c.revision) for k, c in cache.snapshot(prefix)[0]] == [(before.key, before.mod_revision)]
        watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                                  after_revision=cache.revision)
        b = await storage.create(prefix + "c/ns/b", {"metadata": {"name": "b"}, "v": 1})
        b2 = await storage.update(b.key, {"metadata": {"name": "b"}, "v": 2}, b.mod_revision)
        await storage.delete(before.key, before.mod_revision)
        a = await storage.create(prefix + "c/other/a", {"metadata": {"name": "a"}})
        for _ in range(4):
            await next_event(watcher)
        entries, revision = cache.snapshot(prefix)
        assert revision == a.mod_revision
        assert [(k, c.revision) for k, c in entries] == [(b.key, b2.mod_revision), (a.key, a.mod_revision)]
        assert all(type(c.raw) is bytes for _, c in entries)  # bytes, decoded only by readers
        assert entries[0][1].decode()["v"] == 2
        assert entries[0][1].decode()["metadata"]["resourceVersion"] == str(b2.mod_revision)
        assert [k for k, _ in cache.snapshot(prefix + "c/other/")[0]] == [a.key]
    finally:
        await cache.stop()


def test_cache_state_scans_in_key_order_through_deletes_and_recreates() -> None:
    state = CacheState([("/p/b", Cached(b"{}", 1))])
    for key, rev in (("/p/d", 2), ("/p/a", 3), ("/q/x", 4), ("/p/c", 5)):
        state.put(key, Cached(b"{}", rev))
    state.delete("/p/a")
    state.delete("/p/nothing")
    state.put("/p/a", Cached(b"{}", 6))  # back again: listed once
    state.delete("/p/d")
    assert [(k, c.revision) for k, c in state.scan("/p/")] == [("/p/a", 6), ("/p/b", 1), ("/p/c", 5)]
    assert [k for k, _ in state.scan("/q/")] == ["/q/x"] and len(state) == 4
    for i in range(3000):  # many deletions compact the key list without losing live keys
        state.put(f"/p/t{i:04}", Cached(b"{}", 10 + i))
        state.delete(f"/p/t{i:04}")
    assert [k for k, _ in state.scan("/p/")] == ["/p/a", "/p/b", "/p/c"]


def test_cache_state_counts_a_scope_without_scanning_it() -> None:
    state = CacheState((f"/r/c1/ns/{i:03}", Cached(b"{}", i)) for i in range(40))
    state.put("/r/c1/nt/x", Cached(b"{}", 50))
    state.put("/r/c2/ns/y", Cached(b"{}", 51))
    assert state.count_hint("/r/c1/ns/") == 40
    assert state.count_hint("/r/c1/") == 41 and state.count_hint("/r/") == 42 and state.count_hint("/s/") == 0


class BatchSink:
    """A sink that keeps the batches it is handed (the shared bytes of its group, or its own)."""

    encoding = "stored"

    def __init__(self) -> None:
        self.batches: list[Batch] = []

    def encode(self, type_: str, event: WatchEvent) -> bytes:
        return event.encoded(type_)

    def write(self, batch: Batch) -> bool:
        self.batches.append(batch)
        return True


async def batches_until(sink: BatchSink, name: bytes, timeout: float = 5) -> None:
    async with asyncio.timeout(timeout):
        while not any(name in b.data for b in sink.batches):
            await asyncio.sleep(0.01)


async def test_a_watch_from_past_the_caches_revision_skips_up_to_it_then_shares_its_groups_bytes(
        cache: WatchCache, etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    await storage.create(prefix + "c/ns/skipped", {"metadata": {"name": "skipped"}})  # dispatched or not yet
    elsewhere = await storage.create(prefix.rstrip("/") + "-other/c/ns/x", {"metadata": {"name": "x"}})
    assert elsewhere.mod_revision > cache.revision  # a list's revision: etcd's, which this cache has not seen
    late, early = BatchSink(), BatchSink()
    member = cache.subscribe(cluster=None, namespace=None, name=None, matches=None, after_revision=cache.revision,
                             sink=early)
    watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                              after_revision=elsewhere.mod_revision, sink=late)
    assert watcher.group is None and member.group is not None  # it must skip what comes before its start
    await storage.create(prefix + "c/ns/first", {"metadata": {"name": "first"}})
    await batches_until(late, b'"first"')
    await batches_until(early, b'"first"')
    assert watcher.group is member.group  # the cache passed its start: it joined the group
    await storage.create(prefix + "c/ns/second", {"metadata": {"name": "second"}})
    await batches_until(late, b'"second"')
    assert late.batches[-1] is early.batches[-1]  # one Batch for both: the same bytes object, never a copy
    assert b'"skipped"' not in b"".join(b.data for b in late.batches)
