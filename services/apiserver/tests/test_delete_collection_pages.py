"""A collection delete works a page at a time (issue 29: deleting a 50,000-object namespace read and decoded
every object in one step of the event loop and held them all): each page is read, deleted, then the next
one read, over a real etcd."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.registry import store
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Page, Storage
from kcp_apiserver.storage.keys import scope_prefix

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
PAGE = 120
OBJECTS = 400


class Recording(Storage):
    """Storage that remembers, at each range read, how many keys read so far were not deleted yet."""

    def __init__(self, client: Etcd3Client) -> None:
        super().__init__(client)
        self.outstanding: set[str] = set()  # keys read from etcd, not deleted since
        self.most_outstanding = 0
        self.reads = 0

    async def _page(self, prefix: str, revision: int, limit: int, start_key: str | None) -> Page:
        page = await super()._page(prefix, revision, limit, start_key)
        self.reads += 1
        self.outstanding.update(key for key, _, _ in page.items)
        self.most_outstanding = max(self.most_outstanding, len(self.outstanding))
        return page

    async def delete(self, key: str, expected_revision: int) -> int:
        revision = await super().delete(key, expected_revision)
        self.outstanding.discard(key)
        return revision


async def _nothing(*_args: object) -> None:
    return None


@pytest.fixture
async def filled(etcd: Etcd3Client, monkeypatch: pytest.MonkeyPatch) -> tuple[Registry, Recording, str]:
    monkeypatch.setattr(store, "DELETE_PAGE", PAGE)
    storage = Recording(etcd)
    registry = Registry(storage, admit=_nothing, ensure_cluster=_nothing)  # type: ignore[arg-type]
    cluster = f"pages-{uuid.uuid4().hex[:8]}"
    objects: list[tuple[str, dict[str, Any]]] = [
        (registry.key(CONFIGMAP, cluster, "doomed", f"cm-{i:04d}"),
         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04d}", "namespace": "doomed"}})
        for i in range(OBJECTS)]
    for start in range(0, OBJECTS, 100):
        assert await storage.create_many(objects[start:start + 100])
    storage.outstanding.clear()
    return registry, storage, cluster


async def test_each_page_is_deleted_before_the_next_is_read(filled: tuple[Registry, Recording, str]) -> None:
    registry, storage, cluster = filled
    pages = [len(page) async for page in registry.delete_pages(CONFIGMAP, cluster, "doomed")]
    assert pages == [PAGE, PAGE, PAGE, OBJECTS - 3 * PAGE]
    assert await storage.count(scope_prefix(CONFIGMAP.prefix, cluster, "doomed")) == 0
    # a page, and what the list's etcd reads fetched past it (its first read is small, the next a page)
    assert storage.most_outstanding <= 2 * PAGE + 1


async def test_the_answer_of_an_http_deletecollection_still_holds_every_object(
        filled: tuple[Registry, Recording, str]) -> None:
    registry, _, cluster = filled
    deleted = await registry.delete_collection(CONFIGMAP, cluster, "doomed")
    assert [o["metadata"]["name"] for o in deleted] == [f"cm-{i:04d}" for i in range(OBJECTS)]


async def test_a_deletion_goes_on_past_a_compaction_between_pages(filled: tuple[Registry, Recording, str]) -> None:
    registry, storage, cluster = filled
    deleted = 0
    async for page in registry.delete_pages(CONFIGMAP, cluster, "doomed"):
        deleted += len(page)
        await storage.compact(await storage.current_revision())  # what the first page was read at is gone
    assert deleted == OBJECTS
    assert await storage.count(scope_prefix(CONFIGMAP.prefix, cluster, "doomed")) == 0


async def test_objects_with_finalizers_are_only_marked_and_the_pages_still_end(
        filled: tuple[Registry, Recording, str]) -> None:
    registry, _, cluster = filled
    held = [f"cm-{i:04d}" for i in (0, PAGE, OBJECTS - 1)]  # first of a page, first of the next, the last
    for name in held:
        obj = await registry.get(CONFIGMAP, cluster, "doomed", name)
        obj["metadata"]["finalizers"] = ["example.com/hold"]
        await registry.update(CONFIGMAP, cluster, "doomed", name, obj)
    pages = [page async for page in registry.delete_pages(CONFIGMAP, cluster, "doomed")]
    assert sum(len(page) for page in pages) == OBJECTS
    left = await registry.list(CONFIGMAP, cluster, "doomed")
    assert [o["metadata"]["name"] for o in left.items] == held
    assert all(o["metadata"].get("deletionTimestamp") for o in left.items)
