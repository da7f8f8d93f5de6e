"""The shared in-process informer's store: indexes follow every change, handlers see (old, new), and an
unchanged object relisted is no event."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.embedding import Resource
from kcp_sim_cluster.controlplane.informer import Informer, new_informer
from kcpcommon.keys import ObjectKey

PODS = Resource("", "v1", "Pod", "pods", "pod", True)


def _pod(name: str, rv: str, *, owner: str = "", cluster: str = "c1", namespace: str = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv,
                            "annotations": {"kcp.io/cluster": cluster}}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True}]
    return {"metadata": meta}


def _informer() -> tuple[Informer, list[tuple[Any, Any]]]:
    informer = new_informer(None, None, PODS, frozenset({"c1"}))  # type: ignore[arg-type]
    seen: list[tuple[Any, Any]] = []
    informer.add_handler(lambda old, new: seen.append((old, new)))
    return informer, seen


def test_indexes_follow_adds_updates_and_deletes() -> None:
    informer, seen = _informer()
    informer._apply(_pod("a", "1", owner="rs1"), False)
    informer._apply(_pod("b", "2"), False)
    assert [p["metadata"]["name"] for p in informer.by_index("owner", "rs1")] == ["a"]
    assert [p["metadata"]["name"] for p in informer.by_index("orphan", "c1/ns")] == ["b"]
    informer._apply(_pod("b", "3", owner="rs1"), False)  # adopted
    assert sorted(p["metadata"]["name"] for p in informer.by_index("owner", "rs1")) == ["a", "b"]
    assert informer.by_index("orphan", "c1/ns") == []
    informer._apply(_pod("a", "4", owner="rs1"), True)
    assert [p["metadata"]["name"] for p in informer.by_index("owner", "rs1")] == ["b"]
    assert informer.get(ObjectKey("c1", "ns", "a")) is None
    assert [(o is None, n is None) for o, n in seen] == [(True, False), (True, False), (False, False), (False, True)]


def test_an_unchanged_object_is_no_event_and_a_missing_delete_is_ignored() -> None:
    informer, seen = _informer()
    informer._apply(_pod("a", "1"), False)
    informer._apply(_pod("a", "1"), False)
    informer._apply(_pod("zz", "9"), True)
    assert len(seen) == 1
    assert [p["metadata"]["name"] for p in informer.in_cluster("c1")] == ["a"]
