"""Lists served from the watch cache's state: when the cache may answer, and what it answers."""

from __future__ import annotations

import uuid

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.registry import store
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.watchcache import WatchCache


async def _nothing(*_args: object) -> None:
    return None


@pytest.fixture
async def setup(etcd: Etcd3Client, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(store, "CONSISTENT_FROM_CACHE_MIN", 3)
    plural = f"things{uuid.uuid4().hex[:8]}"
    res = Resource(group="test.kcp.io", version="v1", kind="Thing", plural=plural, singular="thing", namespaced=True)
    storage = Storage(etcd)
    registry = Registry(storage, admit=_nothing, ensure_cluster=_nothing)  # type: ignore[arg-type]
    revision = 0
    for name in ("b", "a", "c", "d"):
        revision = (await storage.create(registry.key(res, "c1", "ns", name),
                                         {"metadata": {"name": name, "namespace": "ns"}})).mod_revision
    cache = WatchCache(etcd, storage, res.prefix, namespaced=True)
    await cache.start()
    assert cache.revision >= revision
    yield res, registry, cache
    await cache.stop()


async def test_a_consistent_read_uses_the_cache_only_when_it_has_reached_etcd(setup) -> None:  # type: ignore[no-untyped-def]
    res, registry, cache = setup
    assert await registry.cache_can_serve(res, cache, "c1", "ns", "")
    listed = await registry.list(res, "c1", "ns", cache=cache)
    assert [o["metadata"]["name"] for o in listed.items] == ["a", "b", "c", "d"] and listed.revision == cache.revision
    elsewhere = await registry.storage.create(f"/registry/test/{uuid.uuid4().hex[:8]}/x", {"metadata": {"name": "x"}})
    assert not await registry.cache_can_serve(res, cache, "c1", "ns", "")  # etcd moved on: not provably fresh
    listed = await registry.list(res, "c1", "ns", cache=cache)  # so etcd answers, at its newer revision
    assert listed.revision >= elsewhere.mod_revision and len(listed.items) == 4
    assert await registry.cache_can_serve(res, cache, "c1", "ns", "0")
    assert await registry.cache_can_serve(res, cache, "c1", "ns", str(cache.revision))
    assert not await registry.cache_can_serve(res, cache, "c1", "ns", str(cache.revision + 1))
    assert not await registry.cache_can_serve(res, cache, "c1", "other", "")  # too small to be worth asking etcd


async def test_a_list_at_0_is_the_cached_scope_whole_and_a_limit_elsewhere_pages_through_etcd(setup) -> None:  # type: ignore[no-untyped-def]
    res, registry, cache = setup
    any_state = await registry.list(res, "c1", "ns", cache=cache, resource_version="0", limit=2,
                                    matches=lambda o: o["metadata"]["name"] != "c")
    assert [o["metadata"]["name"] for o in any_state.items] == ["a", "b", "d"] and not any_state.continue_token
    paged = await registry.list(res, "c1", "ns", cache=cache, limit=2)
    assert [o["metadata"]["name"] for o in paged.items] == ["a", "b"] and paged.continue_token
    one = registry.list_cached(res, cache, "c1", "ns", name="c")
    assert [o["metadata"]["name"] for o in one.items] == ["c"]
    across = registry.list_cached(res, cache, None, "", name="d")
    assert [(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in across.items] == [
        ("d", str(cache.state.get(registry.key(res, "c1", "ns", "d")).revision))]
