"""Writes that start from the watch cache's state, as kube's GuaranteedUpdate starts from its cacher's
object: the revision-guarded write proves the cached state current, so most writes cost one etcd txn.
A stale cache must never decide alone: not a no-op (a swallowed write), not an error (a false 409/404)."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.admission import AdmissionChain
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.cachestate import Cached
from kcp_apiserver.storage.etcd import RevisionConflict, Stored
from kcp_apiserver.storage.memory import MemoryStorage
from kcp_apiserver.storage.watchcache import WatchCache

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")


class CountingStorage(MemoryStorage):
    """MemoryStorage that counts reads and writes."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.updates = 0
        self.deletes = 0

    async def get(self, key: str) -> Stored:
        self.gets += 1
        return await super().get(key)

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int) -> Stored:
        self.updates += 1
        return await super().update(key, obj, expected_revision)

    async def delete(self, key: str, expected_revision: int) -> int:
        self.deletes += 1
        return await super().delete(key, expected_revision)

    def reset(self) -> None:
        self.gets = self.updates = self.deletes = 0


async def _nothing(*_args: object) -> None:
    return None


class Setup:
    def __init__(self) -> None:
        self.storage = CountingStorage()
        self.caches = WatchCaches(None, self.storage, capacity=100)  # type: ignore[arg-type]
        self.cache = WatchCache(None, self.storage, CONFIGMAP.prefix, namespaced=True)  # type: ignore[arg-type]
        self.caches.caches[CONFIGMAP.prefix] = self.cache  # never started: the test sets its state
        self.registry = Registry(self.storage, admit=AdmissionChain([]), ensure_cluster=_nothing,
                                 caches=self.caches)

    def key(self, name: str) -> str:
        return self.registry.key(CONFIGMAP, "c1", "default", name)

    def sync(self) -> None:
        """The cache catches up with storage."""
        for key, (value, revision) in self.storage._data.items():
            self.cache.state.put(key, Cached(value, revision))
        for key in [k for k in self.cache.state.items if k not in self.storage._data]:
            self.cache.state.delete(key)

    async def create(self, name: str, **data: str) -> dict[str, Any]:
        obj = await self.registry.create(CONFIGMAP, "c1", "default", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
        return obj

    async def behind_the_cache(self, name: str, **data: str) -> int:
        """Another writer's write (another replica's), which the cache has not seen yet; returns its revision."""
        stored = await MemoryStorage.get(self.storage, self.key(name))
        obj = stored.obj
        obj["data"] = {**obj.get("data", {}), **data}
        revision = (await MemoryStorage.update(self.storage, self.key(name), obj, stored.mod_revision)).mod_revision
        self.storage.recent.pop(self.key(name))  # not this process's: it cannot know
        return revision

    def merge(self, name: str, patch: dict[str, Any]):  # type: ignore[no-untyped-def]
        def apply(doc: dict[str, Any]) -> dict[str, Any]:
            for k, v in patch.items():
                doc[k] = {**(doc.get(k) or {}), **v} if isinstance(v, dict) else v
            return doc
        return self.registry.patch(CONFIGMAP, "c1", "default", name, apply)

    async def stored(self, name: str) -> dict[str, Any]:
        return (await MemoryStorage.get(self.storage, self.key(name))).obj

    def forget(self) -> None:
        """As if this process had written nothing (the writes were another replica's)."""
        self.storage.recent.clear()


@pytest.fixture
def s() -> Setup:
    return Setup()


async def test_a_write_from_a_current_cache_reads_nothing_from_etcd(s: Setup) -> None:
    created = await s.create("a", k="v")
    s.sync()
    s.storage.reset()
    patched = await s.merge("a", {"data": {"k": "w"}})
    assert (s.storage.gets, s.storage.updates) == (0, 1)
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert (await s.stored("a"))["data"] == {"k": "w"}
    s.sync()
    s.storage.reset()
    body = {**patched, "data": {"k": "x"}}
    updated = await s.registry.update(CONFIGMAP, "c1", "default", "a", body)
    assert (s.storage.gets, s.storage.updates) == (0, 1) and updated["data"] == {"k": "x"}


async def test_an_object_the_cache_lacks_is_read_from_etcd(s: Setup) -> None:
    await s.create("a", k="v")
    s.storage.reset()
    await s.merge("a", {"data": {"k": "w"}})
    assert (s.storage.gets, s.storage.updates) == (1, 1)


async def test_a_stale_cache_does_not_swallow_a_write_that_looks_like_a_no_op(s: Setup) -> None:
    await s.create("a", k="v")
    s.sync()  # the cache has k=v
    newer = await s.behind_the_cache("a", k="changed")  # etcd has k=changed
    s.storage.reset()
    patched = await s.merge("a", {"data": {"k": "v"}})  # a no-op against the cache, not against etcd
    assert (await s.stored("a"))["data"] == {"k": "v"}
    assert int(patched["metadata"]["resourceVersion"]) > newer and s.storage.gets == 1


async def test_a_cache_behind_this_process_own_write_is_not_used(s: Setup) -> None:
    await s.create("a", k="v")
    s.sync()
    await s.merge("a", {"data": {"k": "w"}})  # the cache has not seen it (a busy event loop)
    s.storage.reset()
    await s.merge("a", {"data": {"k": "x"}})
    assert (s.storage.gets, s.storage.updates) == (1, 1)  # a read, not a txn bound to fail
    assert (await s.stored("a"))["data"] == {"k": "x"}


async def test_a_no_op_from_a_current_cache_keeps_its_resource_version_after_asking_etcd(s: Setup) -> None:
    created = await s.create("a", k="v")
    s.sync()
    s.storage.reset()
    same = await s.merge("a", {"data": {"k": "v"}})
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert (s.storage.gets, s.storage.updates) == (1, 0)


async def test_a_stale_cache_gives_no_false_conflict_to_a_newer_resource_version(s: Setup) -> None:
    await s.create("a", k="v")
    s.sync()
    newer = await s.behind_the_cache("a", k="w")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": str(newer)},
            "data": {"k": "x"}}
    updated = await s.registry.update(CONFIGMAP, "c1", "default", "a", body)
    assert updated["data"] == {"k": "x"} and int(updated["metadata"]["resourceVersion"]) > newer
    newest = int(updated["metadata"]["resourceVersion"])
    s.forget()
    patched = await s.merge("a", {"metadata": {"resourceVersion": str(newest)}, "data": {"k": "y"}})
    assert patched["data"] == {"k": "y"}  # the cache is at the first revision still


async def test_a_current_cache_still_answers_a_real_conflict(s: Setup) -> None:
    created = await s.create("a", k="v")
    await s.merge("a", {"data": {"k": "w"}})
    s.sync()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "x"},
            "metadata": {"name": "a", "resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(st.APIError) as exc:
        await s.registry.update(CONFIGMAP, "c1", "default", "a", body)
    assert exc.value.code == 409


async def test_a_conflict_retries_from_the_state_the_failed_write_returned(s: Setup) -> None:
    await s.create("a", k="v")
    s.sync()
    await s.behind_the_cache("a", other="kept")
    s.storage.reset()
    await s.merge("a", {"data": {"k": "w"}})
    assert (await s.stored("a"))["data"] == {"k": "w", "other": "kept"}  # the patch applied over etcd's state
    assert (s.storage.gets, s.storage.updates) == (0, 2)  # the txn that failed told the current state


async def test_an_object_gone_from_etcd_but_not_from_the_cache_is_not_found(s: Setup) -> None:
    await s.create("a", k="v")
    await s.create("b", k="v")
    s.sync()
    for name in ("a", "b"):
        stored = await MemoryStorage.get(s.storage, s.key(name))
        await MemoryStorage.delete(s.storage, s.key(name), stored.mod_revision)
    s.forget()
    with pytest.raises(st.APIError) as exc:
        await s.merge("a", {"data": {"k": "w"}})
    assert exc.value.code == 404
    with pytest.raises(st.APIError) as exc:
        await s.registry.delete(CONFIGMAP, "c1", "default", "b")
    assert exc.value.code == 404


async def test_a_delete_from_a_stale_cache_meets_a_newer_precondition(s: Setup) -> None:
    await s.create("a", k="v")
    s.sync()
    newer = await s.behind_the_cache("a", k="w")
    gone, now = await s.registry.delete(CONFIGMAP, "c1", "default", "a", preconditions={"resourceVersion": str(newer)})
    assert now and gone["data"] == {"k": "w"}
    assert s.key("a") not in s.storage._data


async def test_a_delete_from_a_current_cache_reads_nothing_and_finalizers_are_honoured(s: Setup) -> None:
    await s.create("a", k="v")
    await s.merge("a", {"metadata": {"finalizers": ["example.com/hold"]}})
    s.sync()
    s.storage.reset()
    marked, now = await s.registry.delete(CONFIGMAP, "c1", "default", "a")
    assert not now and marked["metadata"]["deletionTimestamp"] and (s.storage.gets, s.storage.updates) == (0, 1)
    s.sync()
    s.storage.reset()
    released = await s.merge("a", {"metadata": {"finalizers": None}})  # the last finalizer goes: removed
    assert "finalizers" not in released["metadata"] and s.key("a") not in s.storage._data
    assert (s.storage.gets, s.storage.deletes) == (0, 1)


async def test_guaranteed_update_retries_from_the_conflicting_state(s: Setup) -> None:
    await s.create("a", k="v")
    s.storage.reset()
    calls = 0

    async def mutate(current: Stored) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await s.behind_the_cache("a", k="raced")
        return {**current.obj, "data": {**current.obj["data"], "mine": "yes"}}

    result = await s.storage.guaranteed_update(s.key("a"), mutate)
    assert result.obj["data"] == {"k": "raced", "mine": "yes"} and calls == 2 and s.storage.gets == 1


async def test_a_revision_conflict_carries_the_current_state(s: Setup) -> None:
    created = await s.create("a", k="v")
    await s.merge("a", {"data": {"k": "w"}})
    with pytest.raises(RevisionConflict) as exc:
        await s.storage.update(s.key("a"), created, int(created["metadata"]["resourceVersion"]))
    assert exc.value.current is not None and exc.value.current.obj["data"] == {"k": "w"}
