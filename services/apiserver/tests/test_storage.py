"""Storage on a real etcd: revisions are resourceVersions, writes are guarded transactions."""

from __future__ import annotations

import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.storage.etcd import (
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    Storage,
    Unavailable,
)


async def test_create_sets_resource_version_from_the_etcd_revision(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    stored = await storage.create(prefix + "a", {"metadata": {"name": "a", "resourceVersion": "999"}})
    assert stored.obj["metadata"]["resourceVersion"] == str(stored.mod_revision)
    again = await storage.get(prefix + "a")
    assert again.mod_revision == stored.mod_revision and again.obj == stored.obj


async def test_create_of_an_existing_key_fails(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    await storage.create(prefix + "a", {"metadata": {}})
    with pytest.raises(KeyExists):
        await storage.create(prefix + "a", {"metadata": {}})


async def test_update_at_a_stale_revision_conflicts(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    first = await storage.create(prefix + "a", {"metadata": {}, "v": 1})
    second = await storage.update(prefix + "a", {"metadata": {}, "v": 2}, first.mod_revision)
    with pytest.raises(RevisionConflict):
        await storage.update(prefix + "a", {"metadata": {}, "v": 3}, first.mod_revision)
    assert (await storage.get(prefix + "a")).obj["v"] == 2 and second.mod_revision > first.mod_revision
    with pytest.raises(KeyNotFound):
        await storage.update(prefix + "missing", {"metadata": {}}, 1)


async def test_delete_is_guarded_by_revision(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    stored = await storage.create(prefix + "a", {"metadata": {}})
    await storage.update(prefix + "a", {"metadata": {}, "x": 1}, stored.mod_revision)
    with pytest.raises(RevisionConflict):
        await storage.delete(prefix + "a", stored.mod_revision)
    current = await storage.get(prefix + "a")
    await storage.delete(prefix + "a", current.mod_revision)
    with pytest.raises(KeyNotFound):
        await storage.get(prefix + "a")


async def test_list_pages_at_one_revision(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    for i in range(5):
        await storage.create(f"{prefix}{i}", {"metadata": {"name": str(i)}})
    page, revision, more = await storage.list(prefix, limit=2)
    assert [s.obj["metadata"]["name"] for s in page] == ["0", "1"] and more
    await storage.create(prefix + "9", {"metadata": {"name": "9"}})
    rest, same_revision, _ = await storage.list(prefix, revision=revision, start_key=page[-1].key + "\x00")
    assert same_revision == revision
    assert [s.obj["metadata"]["name"] for s in rest] == ["2", "3", "4"]


async def test_guaranteed_update_retries_until_it_wins(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    await storage.create(prefix + "n", {"metadata": {}, "n": 0})
    import asyncio

    async def bump(current):  # type: ignore[no-untyped-def]
        return {**current.obj, "n": current.obj["n"] + 1}

    await asyncio.gather(*(storage.guaranteed_update(prefix + "n", bump) for _ in range(10)))
    assert (await storage.get(prefix + "n")).obj["n"] == 10


async def test_an_unreachable_etcd_is_unavailable() -> None:
    from kcp_process import free_port

    client = Etcd3Client([f"127.0.0.1:{free_port()}"])
    await client.connect()
    try:
        with pytest.raises(Unavailable):
            await Storage(client).get("/x")
    finally:
        await client.close()
