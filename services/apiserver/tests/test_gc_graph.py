"""The collector's graph: who owns whom per logical cluster, and what needs another look."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.controllers.gc_graph import Graph

CM = "/registry/core/configmaps/"
SECRETS = "/registry/core/secrets/"


def obj(cluster: str, name: str, uid: str, *owners: dict[str, Any], kind: str = "ConfigMap", namespace: str = "ns",
        deleting: bool = False, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid,
                            "annotations": {"kcp.io/cluster": cluster}}
    if owners:
        meta["ownerReferences"] = list(owners)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def owner(name: str, uid: str, *, block: bool = False, kind: str = "ConfigMap") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, "blockOwnerDeletion": block}


def names(refs: set[Any]) -> set[str]:
    return {r.name for r in refs}


def test_a_dependent_whose_owner_is_known_and_alive_needs_no_look() -> None:
    graph = Graph()
    assert graph.observe(CM, obj("a", "owner", "u1"), False) == set()
    assert graph.observe(CM, obj("a", "dep", "u2", owner("owner", "u1")), False) == set()
    assert [d.name for d in graph.dependents("a", "u1")] == ["dep"]


def test_a_dependent_of_an_owner_the_graph_has_not_seen_is_checked() -> None:
    graph = Graph()
    assert names(graph.observe(CM, obj("a", "dep", "u2", owner("owner", "u1")), False)) == {"dep"}


def test_a_reference_that_names_a_known_uid_in_the_wrong_place_is_checked() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "owner", "u1", namespace="other"), False)
    assert names(graph.observe(CM, obj("a", "dep", "u2", owner("owner", "u1")), False)) == {"dep"}
    graph.observe(SECRETS, obj("a", "s", "u3", kind="Secret"), False)
    assert names(graph.observe(CM, obj("a", "dep2", "u4", owner("s", "u3")), False)) == {"dep2"}


def test_an_owner_that_goes_sends_its_dependents_for_collection() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "owner", "u1"), False)
    graph.observe(CM, obj("a", "dep", "u2", owner("owner", "u1")), False)
    assert names(graph.observe(CM, obj("a", "owner", "u1"), True)) == {"dep"}
    assert graph.node("a", "u1") is None


def test_foreground_deletion_sends_every_dependent_and_the_owner() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "owner", "u1"), False)
    graph.observe(CM, obj("a", "blocking", "u2", owner("owner", "u1", block=True)), False)
    graph.observe(CM, obj("a", "free", "u3", owner("owner", "u1")), False)
    todo = graph.observe(CM, obj("a", "owner", "u1", deleting=True, finalizers=("foregroundDeletion",)), False)
    assert names(todo) == {"owner", "blocking", "free"}
    assert [d.name for d in graph.blocking_dependents("a", "u1")] == ["blocking"]


def test_a_blocking_dependent_that_goes_brings_its_waiting_owner_back() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "owner", "u1", deleting=True, finalizers=("foregroundDeletion",)), False)
    graph.observe(CM, obj("a", "blocking", "u2", owner("owner", "u1", block=True)), False)
    assert names(graph.observe(CM, obj("a", "blocking", "u2", owner("owner", "u1", block=True)), True)) == {"owner"}
    assert graph.blocking_dependents("a", "u1") == []


def test_orphan_deletion_sends_the_owner() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "owner", "u1"), False)
    assert names(graph.observe(CM, obj("a", "owner", "u1", deleting=True, finalizers=("orphan",)), False)) == {
        "owner"}


def test_logical_clusters_never_share_owners_even_with_the_same_uid() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "owner", "same"), False)
    graph.observe(CM, obj("a", "dep-a", "da", owner("owner", "same")), False)
    assert names(graph.observe(CM, obj("b", "dep-b", "db", owner("owner", "same")), False)) == {"dep-b"}
    assert [d.name for d in graph.dependents("a", "same")] == ["dep-a"]
    assert [d.name for d in graph.dependents("b", "same")] == ["dep-b"]
    assert names(graph.observe(CM, obj("a", "owner", "same"), True)) == {"dep-a"}


def test_changing_owner_references_moves_the_dependent() -> None:
    graph = Graph()
    graph.observe(CM, obj("a", "o1", "u1"), False)
    graph.observe(CM, obj("a", "o2", "u2"), False)
    graph.observe(CM, obj("a", "dep", "d", owner("o1", "u1")), False)
    graph.observe(CM, obj("a", "dep", "d", owner("o2", "u2")), False)
    assert graph.dependents("a", "u1") == []
    assert [d.name for d in graph.dependents("a", "u2")] == ["dep"]
