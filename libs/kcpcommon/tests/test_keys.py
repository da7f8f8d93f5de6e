"""ObjectKey and its one text encoding."""

from __future__ import annotations

import pytest

from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey, decode, encode, key_for


def test_a_namespaced_key_encodes_as_cluster_bar_namespace_slash_name() -> None:
    assert encode(ObjectKey("root:org", "default", "web")) == "root:org|default/web"


def test_a_cluster_scoped_key_encodes_without_a_namespace() -> None:
    assert encode(ObjectKey("admin", "", "cluster-1")) == "admin|cluster-1"


@pytest.mark.parametrize("key", [
    ObjectKey("admin", "default", "web"),
    ObjectKey("root:org:team", "", "system:controller:x"),
    ObjectKey("a", "ns", "odd|name"),  # a name may hold '|': only the first one splits
    ObjectKey("a", "", "odd|name"),
])
def test_decode_inverts_encode(key: ObjectKey) -> None:
    assert decode(encode(key)) == key


@pytest.mark.parametrize("text", ["default/web", "|default/web", "admin|default/", "admin|", "admin|ns/a/b"])
def test_decode_rejects_what_encode_cannot_produce(text: str) -> None:
    with pytest.raises(ValueError):
        decode(text)


def test_encode_rejects_parts_that_would_make_it_ambiguous() -> None:
    for bad in (ObjectKey("a|b", "ns", "n"), ObjectKey("a", "n/s", "n"), ObjectKey("a", "ns", "x/y")):
        with pytest.raises(ValueError):
            encode(bad)


def test_keys_are_hashable_and_sort_by_cluster_then_namespace_then_name() -> None:
    keys = [ObjectKey("b", "", "a"), ObjectKey("a", "z", "a"), ObjectKey("a", "a", "b"), ObjectKey("a", "a", "a")]
    assert sorted(keys) == [keys[3], keys[2], keys[1], keys[0]]
    assert len({ObjectKey("a", "b", "c"), ObjectKey("a", "b", "c")}) == 1


def obj(name: str, namespace: str = "", cluster: str | None = None) -> dict:
    metadata: dict = {"name": name, "namespace": namespace}
    if cluster:
        metadata["annotations"] = {CLUSTER_ANNOTATION: cluster}
    return {"metadata": metadata}


def test_over_the_wildcard_the_key_takes_the_cluster_from_the_annotation() -> None:
    assert key_for(obj("web", "default", "team-a"), cluster="*") == ObjectKey("team-a", "default", "web")
    assert key_for(obj("web", "default", "team-a")) == ObjectKey("team-a", "default", "web")


def test_a_cluster_given_by_the_caller_wins() -> None:
    assert key_for(obj("web", "default"), cluster="team-b") == ObjectKey("team-b", "default", "web")


def test_without_an_annotation_or_a_cluster_there_is_no_key() -> None:
    with pytest.raises(ValueError):
        key_for(obj("web", "default"), cluster="*")


def test_a_located_object_is_in_the_cluster_it_is_stored_in_whatever_its_annotation_says() -> None:
    from kcpcommon.keys import cluster_of, located

    plain = {"metadata": {"name": "web", "annotations": {"kcp.io/cluster": "stamped"}}}
    assert cluster_of(plain) == "stamped"
    found = located({"metadata": {"name": "web", "namespace": "default"}}, ObjectKey("east-2", "default", "web"))
    assert cluster_of(found) == "east-2" and key_for(found) == ObjectKey("east-2", "default", "web")
    assert cluster_of(located(plain, ObjectKey("east-1", "", "web"))) == "east-1"
    with pytest.raises(TypeError):
        found["metadata"]["name"] = "other"
