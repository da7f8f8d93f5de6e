"""SharedCache's handlers: queued ones run in their own task, inline ones as the cache changes."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from kcpcommon.frozen import freeze
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.sharedcache import SharedCache


def obj(name: str, rv: str, owner: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
                         "annotations": {"kcp.io/cluster": "c1"}, "labels": {"owner": owner}}}


def cache() -> SharedCache:
    return SharedCache("test", functools.partial(key_for, cluster=None), with_default_indexers=False,
                       indexers={"owner": lambda o: [o["metadata"]["labels"]["owner"]]})


def test_an_inline_handler_runs_as_the_cache_changes_and_sees_the_indexes_of_its_event() -> None:
    shared = cache()
    seen: list[tuple[str, list[str]]] = []

    def look(kind: str, o: Any) -> None:
        seen.append((kind, sorted(x["metadata"]["name"] for x in shared.indexer.by_index("owner", "rs1"))))

    shared.add_handler(on_add=lambda o: look("add", o), on_update=lambda _, o: look("update", o),
                       on_delete=lambda o: look("delete", o), inline=True)
    shared.replace([obj("a", "1", "rs1")], "1")  # no handler task was started, none ran: still called
    shared.apply("ADDED", obj("b", "2", "rs1"))
    shared.apply("MODIFIED", obj("a", "3", "rs2"))
    shared.apply("DELETED", obj("b", "4", "rs1"))
    assert seen == [("add", ["a"]), ("add", ["a", "b"]), ("update", ["b"]), ("delete", [])]


def test_an_inline_handler_added_late_first_sees_every_cached_object_and_is_synced() -> None:
    shared = cache()
    shared.replace([obj("a", "1"), obj("b", "2")], "2")
    added: list[str] = []
    registration = shared.add_handler(on_add=lambda o: added.append(o["metadata"]["name"]), inline=True)
    assert sorted(added) == ["a", "b"] and registration.has_synced


def test_a_failing_inline_handler_does_not_stop_the_feed_or_the_others() -> None:
    shared = cache()
    seen: list[str] = []

    def broken(o: Any) -> None:
        raise RuntimeError("boom")

    shared.add_handler(on_add=broken, inline=True)
    shared.add_handler(on_add=lambda o: seen.append(o["metadata"]["name"]), inline=True)
    shared.apply("ADDED", obj("a", "1"))
    shared.apply("ADDED", obj("b", "2"))
    assert seen == ["a", "b"] and shared.indexer.get(ObjectKey("c1", "ns", "b")) is not None


def test_an_inline_handler_cannot_be_a_coroutine_function() -> None:
    async def handler(o: Any) -> None:
        return None

    with pytest.raises(TypeError):
        cache().add_handler(on_add=handler, inline=True)


async def test_a_queued_handler_runs_in_its_own_task_after_the_change() -> None:
    shared = cache()
    seen: list[str] = []
    registration = shared.add_handler(on_add=lambda o: seen.append(o["metadata"]["name"]))
    shared.start_handlers()
    try:
        shared.replace([obj("a", "1")], "1")
        assert seen == []  # not yet: its task has not run
        await registration.wait_for_sync()
        assert seen == ["a"]
    finally:
        await shared.stop_handlers()


def stored_cache(loads: list[str]) -> SharedCache:
    """A cache that keeps each object as its JSON text, as the API server's keeps etcd's bytes."""

    def load(stored: str) -> Any:
        loads.append(stored)
        return freeze(json.loads(stored))

    return SharedCache("stored", functools.partial(key_for, cluster=None), with_default_indexers=False, load=load)


def feed_update(shared: SharedCache) -> None:
    for rv in ("1", "2"):
        shared.apply("ADDED" if rv == "1" else "MODIFIED", obj("a", rv), stored=json.dumps(obj("a", rv)))


def test_an_update_does_not_read_back_the_old_state_when_no_handler_needs_it() -> None:
    loads: list[str] = []
    shared = stored_cache(loads)
    seen: list[tuple[Any, str]] = []
    shared.add_handler(on_add=lambda o: seen.append((None, o["metadata"]["resourceVersion"])),
                       on_update=lambda old, new: seen.append((old, new["metadata"]["resourceVersion"])),
                       inline=True, needs_old=False)
    feed_update(shared)
    assert seen == [(None, "1"), (None, "2")]  # still an update, not a second add
    assert loads == []


def test_an_update_hands_the_old_state_to_every_handler_when_one_needs_it() -> None:
    loads: list[str] = []
    shared = stored_cache(loads)
    olds: list[str] = []
    for needs_old in (False, True):
        shared.add_handler(on_update=lambda old, _: olds.append(old["metadata"]["resourceVersion"]), inline=True,
                           needs_old=needs_old)
    feed_update(shared)
    assert olds == ["1", "1"] and len(loads) == 1
