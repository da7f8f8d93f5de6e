"""The sim's view of a shared informer: its indexes follow every change, its handlers see (old, new) as the
cache changes, other logical clusters' objects are not its business, and the objects are read-only."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.embedding import WatchCacheInformer
from kcp_sim_cluster.controlplane.informer import Informer, new_informer
from kcpcommon.keys import ObjectKey


def _pod(name: str, rv: str, *, owner: str = "", cluster: str = "c1", namespace: str = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv,
                            "annotations": {"kcp.io/cluster": cluster}}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True}]
    return {"metadata": meta}


def _informer() -> tuple[WatchCacheInformer, Informer, list[tuple[Any, Any]]]:
    shared = WatchCacheInformer(None, name="pods")  # type: ignore[arg-type]  # fed by hand below
    shared.keep_decoded()
    informer = new_informer(shared, True, frozenset({"c1"}))
    seen: list[tuple[Any, Any]] = []
    informer.add_handler(lambda old, new: seen.append((old, new)))
    return shared, informer, seen


def _names(objs: list[Any]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def test_indexes_and_handlers_follow_adds_updates_and_deletes_as_they_happen() -> None:
    shared, informer, seen = _informer()
    shared.apply("ADDED", _pod("a", "1", owner="rs1"))
    shared.apply("ADDED", _pod("b", "2"))
    assert len(seen) == 2  # inline: no task had to run
    assert _names(informer.by_index("owner", "rs1")) == ["a"]
    assert _names(informer.by_index("orphan", "c1/ns")) == ["b"]
    shared.apply("MODIFIED", _pod("b", "3", owner="rs1"))  # adopted
    assert _names(informer.by_index("owner", "rs1")) == ["a", "b"]
    assert informer.by_index("orphan", "c1/ns") == []
    shared.apply("DELETED", _pod("a", "4", owner="rs1"))
    assert _names(informer.by_index("owner", "rs1")) == ["b"]
    assert informer.get(ObjectKey("c1", "ns", "a")) is None
    assert [(o is None, n is None) for o, n in seen] == [(True, False), (True, False), (False, False), (False, True)]


def test_a_relisted_unchanged_object_is_no_event_and_a_vanished_one_is_a_delete() -> None:
    shared, informer, seen = _informer()
    shared.replace([_pod("a", "1"), _pod("b", "2")], "2")
    shared.replace([_pod("a", "1")], "3")
    assert [(o and o["metadata"]["name"], n and n["metadata"]["name"]) for o, n in seen] == [
        (None, "a"), (None, "b"), ("b", None)]
    assert _names(informer.in_cluster("c1")) == ["a"]


def test_other_logical_clusters_are_neither_indexed_nor_handled() -> None:
    shared, informer, seen = _informer()
    shared.apply("ADDED", _pod("tenant", "1", cluster="kcp-tenant", owner="rs1"))
    assert seen == []
    assert informer.by_index("owner", "rs1") == [] and informer.in_cluster("kcp-tenant") == []


def test_handlers_get_read_only_objects() -> None:
    shared, _, seen = _informer()
    shared.apply("ADDED", _pod("a", "1"))
    _, pod = seen[0]
    with pytest.raises(TypeError):
        pod["metadata"]["labels"] = {"x": "y"}
