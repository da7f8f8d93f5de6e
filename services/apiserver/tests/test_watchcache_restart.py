"""The watch cache's etcd watch breaks and restarts: open watchers must still see every acknowledged write."""

from __future__ import annotations

import asyncio
import random

from etcd3aio import Etcd3Client
from etcd3aio._protobuf import kv_pb2, rpc_pb2

from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import WatchCache


async def test_a_watch_that_restarts_mid_stream_loses_no_acknowledged_create(
        etcd: Etcd3Client, cuttable_etcd, prefix: str) -> None:  # type: ignore[no-untyped-def]
    proxy = cuttable_etcd
    flaky = Etcd3Client([proxy.endpoint], rpc_max_attempts=1, watch_reconnect_backoff_seconds=0.05,
                        watch_max_reconnect_backoff_seconds=0.2)
    await flaky.connect()
    cache = WatchCache(flaky, Storage(flaky), prefix, namespaced=True, capacity=100_000)
    await cache.start()
    try:
        watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                                  after_revision=cache.revision)
        storage = Storage(etcd)  # writes go straight to etcd: only the cache's connection is flaky
        acked: set[str] = set()
        last_revision = 0
        writing = True

        async def write(worker: int) -> None:
            """80 creates each, and more until the watch was cut and resumed twice (a loaded machine may write
            the 80 within one reconnect's backoff)."""
            i = 0
            while i < 80 or (cache.restarts < 2 and i < 4000):
                name = f"w{worker}-{i}"
                i += 1
                nonlocal last_revision
                stored = await storage.create(f"{prefix}c/ns/{name}", {"metadata": {"name": name},
                                                                       "data": {"i": str(i)}})
                acked.add(name)
                last_revision = max(last_revision, stored.mod_revision)

        async def cut_while_writing() -> None:
            while writing:
                await asyncio.sleep(random.uniform(0.005, 0.04))
                proxy.cut()

        cutter = asyncio.create_task(cut_while_writing())
        await asyncio.gather(*(write(w) for w in range(8)))
        writing = False
        await cutter
        assert proxy.connections > 2 and cache.restarts >= 2  # the watch really was cut and resumed

        seen: set[str] = set()

        async def drain() -> None:
            while not acked <= seen:
                item = await watcher.queue.get()
                assert item is not None, f"watcher closed: {watcher.close_reason}"
                seen.add(item[1].key.name)

        try:
            await asyncio.wait_for(drain(), 15)
        except TimeoutError:
            pass
        assert acked - seen == set(), f"{len(acked - seen)} of {len(acked)} acknowledged creates never arrived"
        assert cache.revision >= last_revision
        listed, _, _ = await storage.list(prefix)  # the cache's state is etcd's, object for object
        assert [(key, c.revision) for key, c in cache.snapshot(prefix)[0]] == [
            (s.key, s.mod_revision) for s in listed]
    finally:
        await cache.stop()
        await flaky.close()


async def test_a_resume_point_lost_to_compaction_closes_watchers_with_410_and_reloads_the_state(
        etcd: Etcd3Client, cuttable_etcd, prefix: str) -> None:  # type: ignore[no-untyped-def]
    proxy = cuttable_etcd
    flaky = Etcd3Client([proxy.endpoint], rpc_max_attempts=1)
    await flaky.connect()
    storage = Storage(etcd)
    kept = await storage.create(f"{prefix}c/ns/kept", {"metadata": {"name": "kept"}})
    cache = WatchCache(flaky, Storage(flaky), prefix, namespaced=True)
    await cache.start()
    try:
        watcher = cache.subscribe(cluster=None, namespace=None, name=None, matches=None,
                                  after_revision=cache.revision)
        proxy.refuse = True
        proxy.cut()  # the cache is offline while etcd moves on and compacts what it missed
        await storage.delete(kept.key, kept.mod_revision)
        added = await storage.create(f"{prefix}c/ns/added", {"metadata": {"name": "added"}})
        await storage.compact(added.mod_revision)
        proxy.refuse = False
        assert await asyncio.wait_for(watcher.queue.get(), 15) is None  # closed, nothing skipped silently
        assert "too old resource version" in watcher.close_reason
        assert [key for key, _ in cache.snapshot(prefix)[0]] == [added.key]
        assert cache.revision >= added.mod_revision and cache.window_start == cache.revision
    finally:
        await cache.stop()
        await flaky.close()


def _kv(key: str, revision: int, created: int) -> kv_pb2.KeyValue:
    return kv_pb2.KeyValue(key=key.encode(), value=b'{"metadata":{"name":"x"}}', mod_revision=revision,
                           create_revision=created)


def test_only_genuine_progress_notifications_advance_the_revision(etcd: Etcd3Client, prefix: str) -> None:
    cache = WatchCache(etcd, Storage(etcd), prefix, namespaced=True)
    cache.revision = cache.window_start = 10
    header = rpc_pb2.ResponseHeader(revision=50)
    cache._dispatch(rpc_pb2.WatchResponse(header=header, created=True))  # etcd's head, older events to come
    assert cache.revision == 10
    cache._dispatch(rpc_pb2.WatchResponse(header=rpc_pb2.ResponseHeader(revision=60), events=[
        kv_pb2.Event(type=kv_pb2.Event.PUT, kv=_kv(f"{prefix}c/ns/x", 11, 11))]))  # a catching-up batch
    assert cache.revision == 11 and [key for key, _ in cache.snapshot(prefix)[0]] == [f"{prefix}c/ns/x"]
    cache._dispatch(rpc_pb2.WatchResponse(header=header))  # a progress notify: nothing older is left
    assert cache.revision == 50
    cache._dispatch(rpc_pb2.WatchResponse(header=rpc_pb2.ResponseHeader(revision=70), events=[
        kv_pb2.Event(type=kv_pb2.Event.DELETE, kv=kv_pb2.KeyValue(key=f"{prefix}c/ns/x".encode(), mod_revision=51))]))
    assert cache.revision == 51 and cache.snapshot(prefix)[0] == []
    assert [(e.type, e.revision) for e in cache.events] == [("ADDED", 11), ("DELETED", 51)]
