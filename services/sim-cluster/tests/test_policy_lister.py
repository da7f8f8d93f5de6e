"""Admission's policy reads come from the informer, and from storage only where the informer may lag."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kcp_apiserver.embedding import CREATE, DELETE, Attributes, Obj
from kcp_sim_cluster.api.limits import limit_ranges
from kcp_sim_cluster.api.policylister import LIVE_SECONDS, PolicyLister
from kcp_sim_cluster.api.quota import resource_quotas
from kcpcommon.keys import ObjectKey

RANGES = limit_ranges("1.35")


class Storage:
    """Counts the lists admission asks of etcd."""

    def __init__(self, objects: dict[str, Obj]) -> None:
        self.objects = objects
        self.lists: list[str] = []

    async def list(self, prefix: str) -> tuple[list[Any], int, bool]:
        self.lists.append(prefix)
        return [SimpleNamespace(key=k, obj=o) for k, o in self.objects.items() if k.startswith(prefix)], 1, False


class Indexer:
    def __init__(self, objects: dict[ObjectKey, Obj]) -> None:
        self.objects = objects

    def keys(self) -> list[ObjectKey]:
        return list(self.objects)

    def get(self, key: ObjectKey) -> Obj | None:
        return self.objects.get(key)


class Informer:
    """The server's informer as the lister uses it: an indexer and one inline handler."""

    def __init__(self, synced: bool, objects: dict[ObjectKey, Obj]) -> None:
        self.has_synced = synced
        self.indexer = Indexer(objects)
        self.handlers: dict[str, Any] = {}

    def keep_decoded(self) -> None:
        pass

    def add_handler(self, **handlers: Any) -> None:
        self.handlers = handlers

    def changed(self, key: ObjectKey) -> None:
        self.handlers["on_update"](None, SimpleNamespace(key=key))


def attrs(operation: str, namespace: str, resource: Any = RANGES) -> Attributes:
    return Attributes(SimpleNamespace(cluster="admin"), resource, operation, namespace, "r",  # type: ignore[arg-type]
                      {} if operation != DELETE else None, None)


def lister(synced: bool = True) -> tuple[PolicyLister, Storage, list[float], Informer]:
    stored = {f"{RANGES.prefix}admin/a/live": {"metadata": {"name": "live"}}}
    cached = {ObjectKey("admin", "a", "cached"): {"metadata": {"name": "cached"}},
              ObjectKey("admin", "b", "other"): {"metadata": {"name": "other"}},
              ObjectKey("other-cluster", "a", "theirs"): {"metadata": {"name": "theirs"}}}
    informer = Informer(synced, cached)
    storage = Storage(stored)
    now = [100.0]
    policy = PolicyLister(storage, RANGES, informer, clock=lambda: now[0])  # type: ignore[arg-type]
    return policy, storage, now, informer


def names(objs: list[Obj]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_a_synced_informer_answers_without_reading_storage() -> None:
    policy, storage, _, _ = lister()
    assert names(asyncio.run(policy.list("admin", "a"))) == ["cached"]  # only this cluster's namespace
    assert storage.lists == []


def test_storage_answers_until_the_informer_has_synced() -> None:
    policy, storage, _, _ = lister(synced=False)
    assert names(asyncio.run(policy.list("admin", "a"))) == ["live"]
    assert storage.lists == [f"{RANGES.prefix}admin/a/"]


def test_a_write_of_the_kind_makes_its_namespace_read_storage_at_most_a_while() -> None:
    policy, storage, now, _ = lister()
    policy.saw(attrs(CREATE, "a"))
    assert names(asyncio.run(policy.list("admin", "a"))) == ["live"]  # the new object, even if the cache lags
    assert names(asyncio.run(policy.list("admin", "b"))) == ["other"]  # another namespace: the cache
    now[0] += LIVE_SECONDS + 1
    assert names(asyncio.run(policy.list("admin", "a"))) == ["cached"]
    assert storage.lists == [f"{RANGES.prefix}admin/a/"]


def test_a_delete_counts_as_a_write_and_other_kinds_do_not() -> None:
    policy, _, _, _ = lister()
    policy.saw(attrs(CREATE, "a", resource_quotas("1.35")))
    assert names(asyncio.run(policy.list("admin", "a"))) == ["cached"]
    policy.saw(attrs(DELETE, "a"))
    assert names(asyncio.run(policy.list("admin", "a"))) == ["live"]


def test_storage_answers_until_the_informer_has_seen_as_many_changes_as_writes_were_admitted() -> None:
    policy, storage, _, informer = lister()
    policy.saw(attrs(CREATE, "a"))
    policy.saw(attrs(CREATE, "a"))
    informer.changed(ObjectKey("admin", "b", "other"))  # another namespace's change
    informer.changed(ObjectKey("admin", "a", "first"))
    assert names(asyncio.run(policy.list("admin", "a"))) == ["live"]  # one write not seen yet
    informer.changed(ObjectKey("admin", "a", "second"))
    assert names(asyncio.run(policy.list("admin", "a"))) == ["cached"]
    assert len(storage.lists) == 1
