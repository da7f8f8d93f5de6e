"""The Indexer: frozen objects by key, with indexes that follow every change."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import pytest

from kcpcommon.frozen import freeze, thaw
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.store import (
    CLUSTER_INDEX,
    CLUSTER_NAMESPACE_INDEX,
    LABELS_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    cluster_namespace_value,
    label_value,
)


def obj(name: str, namespace: str = "default", cluster: str = "a", rv: str = "1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": labels,
                         "annotations": {"kcp.io/cluster": cluster}}, "spec": {"items": [1, 2]}}


@pytest.fixture
def indexer() -> Indexer:
    return Indexer(functools.partial(key_for, cluster=None))


def names(objs: list[Any]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_objects_are_found_by_key_namespace_cluster_and_label(indexer: Indexer) -> None:
    indexer.upsert(obj("web", app="web"))
    indexer.upsert(obj("db", app="db"))
    indexer.upsert(obj("web", cluster="b", namespace="prod", app="web"))
    assert indexer.get(ObjectKey("b", "prod", "web")) is not None
    assert names(indexer.by_index(NAMESPACE_INDEX, "default")) == ["db", "web"]
    assert names(indexer.by_index(CLUSTER_INDEX, "b")) == ["web"]
    assert names(indexer.by_index(CLUSTER_NAMESPACE_INDEX, cluster_namespace_value("a", "default"))) == ["db", "web"]
    assert sorted(indexer.index_keys(LABELS_INDEX, label_value("app", "web"))) == [
        ObjectKey("a", "default", "web"), ObjectKey("b", "prod", "web")]


def test_an_update_moves_the_object_between_index_values(indexer: Indexer) -> None:
    indexer.upsert(obj("web", tier="front"))
    old, new = indexer.upsert(obj("web", rv="2", tier="back"))
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert new["metadata"]["resourceVersion"] == "2"
    assert indexer.by_index(LABELS_INDEX, label_value("tier", "front")) == []
    assert names(indexer.by_index(LABELS_INDEX, "label:tier=back")) == ["web"]
    assert indexer.index_values(LABELS_INDEX) == ["label:tier=back"]


def test_removing_an_object_clears_it_from_every_index(indexer: Indexer) -> None:
    indexer.upsert(obj("web", app="web"))
    removed = indexer.remove(ObjectKey("a", "default", "web"))
    assert removed is not None and len(indexer) == 0
    assert indexer.index_values(LABELS_INDEX) == [] and indexer.index_values(NAMESPACE_INDEX) == []
    assert indexer.remove(ObjectKey("a", "default", "web")) is None


def test_a_custom_index_added_later_covers_objects_already_stored(indexer: Indexer) -> None:
    indexer.upsert(obj("web"))
    indexer.add_indexers({"by-item-count": lambda o: [str(len(o["spec"]["items"]))]})
    assert names(indexer.by_index("by-item-count", "2")) == ["web"]
    with pytest.raises(ValueError):
        indexer.add_indexers({"by-item-count": lambda o: []})
    indexer.add_indexers({"by-item-count": lambda o: []}, skip_existing=True)  # a second controller's ask
    assert names(indexer.by_index("by-item-count", "2")) == ["web"]


def test_a_failing_index_function_leaves_the_store_unchanged(indexer: Indexer) -> None:
    indexer.add_indexers({"owner": lambda o: [o["metadata"]["labels"]["owner"]]})
    indexer.upsert(obj("web", owner="me"))
    with pytest.raises(KeyError):
        indexer.upsert(obj("web", rv="2"))
    assert indexer.get(ObjectKey("a", "default", "web"))["metadata"]["resourceVersion"] == "1"  # type: ignore[index]
    assert names(indexer.by_index("owner", "me")) == ["web"]


def test_stored_objects_are_read_only_and_get_copy_is_mutable(indexer: Indexer) -> None:
    original = obj("web")
    indexer.upsert(original)
    original["spec"]["items"].append(3)  # the caller's dict was copied, not kept
    key = ObjectKey("a", "default", "web")
    cached = indexer.get(key)
    assert cached is not None and cached["spec"]["items"] == [1, 2]
    with pytest.raises(TypeError):
        cached["spec"]["items"].append(3)
    with pytest.raises(TypeError):
        cached["metadata"]["labels"]["x"] = "y"
    mutable = indexer.get_copy(key)
    assert mutable is not None
    mutable["spec"]["items"].append(3)
    assert indexer.get(key)["spec"]["items"] == [1, 2]  # type: ignore[index]


def test_keep_loaded_turns_every_stored_form_into_its_object_once() -> None:
    loads: list[str] = []

    def load(stored: str) -> Any:
        loads.append(stored)
        return freeze(json.loads(stored))

    indexer = Indexer(functools.partial(key_for, cluster=None), load=load)
    indexer.upsert(obj("web", app="web"), stored=json.dumps(obj("web", app="web")))
    indexer.keep_loaded()
    key = ObjectKey("a", "default", "web")
    assert indexer.get(key) is indexer.get(key)  # the object itself, not loaded on every read
    indexer.upsert(obj("db", app="db"))  # from now on the owner passes objects
    assert names(indexer.by_index(LABELS_INDEX, label_value("app", "db"))) == ["db"]
    assert len(loads) == 1


def test_frozen_objects_serialize_compare_and_deep_copy_like_plain_ones() -> None:
    plain = obj("web", app="web")
    frozen = freeze(plain)
    assert frozen == plain and json.dumps(frozen) == json.dumps(plain)
    copied = copy.deepcopy(frozen)
    copied["metadata"]["name"] = "changed"
    assert type(copied) is dict and thaw(frozen) == plain


def test_an_upsert_reads_back_a_stored_old_state_only_when_asked_or_indexed() -> None:
    loads: list[str] = []

    def load(stored: str) -> Any:
        loads.append(stored)
        return freeze(json.loads(stored))

    bare = Indexer(functools.partial(key_for, cluster=None), with_defaults=False, load=load)
    indexed = Indexer(functools.partial(key_for, cluster=None), load=load)
    for indexer in (bare, indexed):
        indexer.upsert(obj("web", app="web"), stored=json.dumps(obj("web", app="web")))
    old, new = bare.upsert(obj("web", rv="2"), stored=json.dumps(obj("web", rv="2")), read_old=False)
    assert old is None and new["metadata"]["resourceVersion"] == "2" and loads == []
    old, _ = indexed.upsert(obj("web", rv="2"), stored=json.dumps(obj("web", rv="2")), read_old=False)
    assert old is not None and len(loads) == 1  # its index entries must be removed: read back all the same
    assert names(indexed.by_index(LABELS_INDEX, label_value("app", "web"))) == []
