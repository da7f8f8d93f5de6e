"""storage's GuaranteedUpdate and the registry's writes over it: a write without a precondition retries its
conflicts until its deadline (never a fixed count of attempts), a write meant for another object (uid,
resourceVersion) is a conflict at once, and a read at a future revision waits on the watch cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.admission import Attributes
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.patch import apply_json_patch
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.cachestate import Cached
from kcp_apiserver.storage.etcd import PreconditionFailed, Preconditions, RevisionConflict, Storage, Stored
from kcp_apiserver.storage.memory import MemoryStorage
from kcp_apiserver.storage.turns import Turns, Written

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
CLIENTS = 32  # more concurrent writers of one object than the 16 attempts writes used to get


async def _nothing(*_args: object) -> None:
    return None


async def _yielding_admission(_attributes: Attributes) -> None:
    await asyncio.sleep(0)  # every writer decides before any writes: each round, one wins and the rest conflict


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class CountingStorage(MemoryStorage):
    def __init__(self) -> None:
        super().__init__()
        self.updates = 0

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int) -> Stored:
        self.updates += 1
        return await super().update(key, obj, expected_revision)


async def test_concurrent_writers_of_one_key_take_turns_so_none_computes_in_vain() -> None:
    storage = MemoryStorage()
    await storage.create("/k", {"metadata": {}, "n": 0})
    attempts: list[int] = []

    async def bump(current: Stored) -> dict[str, Any]:
        attempts.append(1)
        await asyncio.sleep(0)
        return {**current.obj, "n": current.obj["n"] + 1}

    await asyncio.gather(*(storage.guaranteed_update("/k", bump) for _ in range(CLIENTS)))
    assert (await storage.get("/k")).obj["n"] == CLIENTS
    assert len(attempts) == CLIENTS  # each started from the state the one before it wrote: no conflict


async def test_a_write_that_never_wins_gives_up_at_its_deadline_not_after_a_count() -> None:
    storage = MemoryStorage()
    await storage.create("/k", {"metadata": {}, "n": 0})
    attempts = 0

    async def always_raced(current: Stored) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        latest = await storage.get("/k")
        await MemoryStorage.update(storage, "/k", {**latest.obj, "n": latest.obj["n"] + 1}, latest.mod_revision)
        await asyncio.sleep(0.001)
        return {**current.obj, "mine": True}

    deadline = asyncio.get_running_loop().time() + 0.3
    with pytest.raises(RevisionConflict):
        await storage.guaranteed_update("/k", always_raced, deadline=deadline)
    assert asyncio.get_running_loop().time() >= deadline and attempts > 16


async def test_a_precondition_that_does_not_hold_fails_at_once_without_trying() -> None:
    storage = CountingStorage()
    await storage.create("/k", {"metadata": {"uid": "u-1"}})
    called = False

    async def change(current: Stored) -> dict[str, Any]:
        nonlocal called
        called = True
        return current.obj

    with pytest.raises(PreconditionFailed, match="UID in precondition: u-2, UID in object meta: u-1"):
        await storage.guaranteed_update("/k", change, preconditions=Preconditions(uid="u-2"))
    assert not called and storage.updates == 0


async def test_a_stale_copy_that_fails_a_precondition_is_checked_against_etcd_first() -> None:
    storage = MemoryStorage()
    old = await storage.create("/k", {"metadata": {"uid": "u-1"}})
    await storage.delete("/k", old.mod_revision)
    await storage.create("/k", {"metadata": {"uid": "u-2"}})
    storage.recent.clear()  # another replica's writes: nothing tells this process the copy is stale

    async def mark(current: Stored) -> dict[str, Any]:
        return {**current.obj, "marked": True}

    stale = Cached(b'{"metadata":{"uid":"u-1"}}', old.mod_revision)
    done = await storage.guaranteed_update("/k", mark, preconditions=Preconditions(uid="u-2"), suggestion=stale)
    assert done.obj["marked"] and done.obj["metadata"]["uid"] == "u-2"


class Setup:
    def __init__(self, *, yielding: bool = False) -> None:
        self.storage = CountingStorage()
        self.registry = Registry(self.storage, admit=_yielding_admission if yielding else _nothing,
                                 ensure_cluster=_nothing)

    def json_patch(self, name: str, ops: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
        return self.registry.patch(CONFIGMAP, "c1", "default", name, lambda doc: apply_json_patch(doc, ops))


async def test_blind_json_patches_from_many_clients_all_land_without_a_conflict() -> None:
    s = Setup(yielding=True)
    await s.registry.create(CONFIGMAP, "c1", "default", configmap("shared"))
    rounds = 3

    async def client(i: int) -> None:
        for j in range(rounds):
            await s.json_patch("shared", [{"op": "add", "path": f"/data/c{i}-{j}", "value": "x"}])

    await asyncio.gather(*(client(i) for i in range(CLIENTS)))
    got = await s.registry.get(CONFIGMAP, "c1", "default", "shared")
    assert sorted(got["data"]) == sorted(f"c{i}-{j}" for i in range(CLIENTS) for j in range(rounds))


async def test_a_patch_with_a_stale_resource_version_is_a_conflict_at_once() -> None:
    s = Setup()
    created = await s.registry.create(CONFIGMAP, "c1", "default", configmap("a", k="v"))
    await s.json_patch("a", [{"op": "add", "path": "/data/k", "value": "w"}])
    s.storage.updates = 0
    stale = created["metadata"]["resourceVersion"]
    with pytest.raises(st.APIError) as exc:
        await s.json_patch("a", [{"op": "add", "path": "/metadata/resourceVersion", "value": stale},
                                 {"op": "add", "path": "/data/k", "value": "x"}])
    assert exc.value.code == 409 and exc.value.reason == "Conflict"
    assert s.storage.updates == 0  # refused before any write, not after retries


async def test_an_update_of_an_object_whose_uid_changed_is_a_precondition_conflict() -> None:
    s = Setup()
    first = await s.registry.create(CONFIGMAP, "c1", "default", configmap("a", k="v"))
    await s.registry.delete(CONFIGMAP, "c1", "default", "a")
    second = await s.registry.create(CONFIGMAP, "c1", "default", configmap("a", k="again"))
    body = {**first, "data": {"k": "mine"}}
    del body["metadata"]["resourceVersion"]  # no resourceVersion: only the uid says which object it is for
    with pytest.raises(st.APIError) as exc:
        await s.registry.update(CONFIGMAP, "c1", "default", "a", body)
    assert exc.value.code == 409
    assert (f"Precondition failed: UID in precondition: {first['metadata']['uid']}, UID in object meta: "
            f"{second['metadata']['uid']}") in exc.value.message
    assert (await s.registry.get(CONFIGMAP, "c1", "default", "a"))["data"] == {"k": "again"}


class RevisionCounting(Storage):
    def __init__(self, client: Etcd3Client) -> None:
        super().__init__(client)
        self.revision_reads = 0

    async def current_revision(self) -> int:
        self.revision_reads += 1
        return await super().current_revision()


@pytest.fixture
async def cached_registry(etcd: Etcd3Client):  # type: ignore[no-untyped-def]
    storage = RevisionCounting(etcd)
    caches = WatchCaches(etcd, storage, capacity=100)
    registry = Registry(storage, admit=_nothing, ensure_cluster=_nothing, caches=caches)
    yield registry
    for cache in caches.caches.values():
        await cache.stop()


async def test_a_read_at_a_future_revision_is_woken_by_the_watch_cache_not_by_polling(
        cached_registry: Registry, prefix: str) -> None:
    registry, storage = cached_registry, cached_registry.storage
    cache = await registry.caches.get(CONFIGMAP)  # type: ignore[union-attr]
    cluster = prefix.strip("/").replace("/", "-")
    wanted = await storage.current_revision() + 1
    storage.revision_reads = 0
    waiting = asyncio.create_task(registry.wait_for_revision(CONFIGMAP, wanted))
    async with asyncio.timeout(5):
        while not cache._reaching:  # the wait is parked on the cache
            await asyncio.sleep(0)
    await registry.create(CONFIGMAP, cluster, "default", configmap("a"))
    async with asyncio.timeout(5):
        await waiting
    assert storage.revision_reads == 1  # asked etcd once, before waiting; then woken by the cache


async def test_a_revision_never_reached_is_too_large_and_leaves_no_waiter(cached_registry: Registry) -> None:
    registry = cached_registry
    cache = await registry.caches.get(CONFIGMAP)  # type: ignore[union-attr]
    wanted = await registry.storage.current_revision() + 1_000_000
    with pytest.raises(st.APIError) as exc:
        await registry.wait_for_revision(CONFIGMAP, wanted, patience=0.2)
    assert exc.value.code == 504 and "Too large resource version" in exc.value.message
    assert not cache._reaching


async def test_a_writer_that_stops_waiting_for_its_turn_leaves_the_key_to_the_next() -> None:
    turns = Turns()
    loop = asyncio.get_running_loop()
    assert await turns.take("/k", loop.time() + 1) is None  # free: taken at once
    with pytest.raises(TimeoutError):
        await turns.take("/k", loop.time() + 0.05)
    next_writer = asyncio.create_task(turns.take("/k", loop.time() + 5))
    while not turns.wanted("/k"):
        await asyncio.sleep(0)
    turns.give("/k", Written(b"{}", 7))
    assert await next_writer == Written(b"{}", 7)  # the one that gave up was skipped
    turns.give("/k", None)
    assert not turns.wanted("/k") and await turns.take("/k", loop.time() + 1) is None
