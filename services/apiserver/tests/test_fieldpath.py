"""Field-path sets in their FieldsV1 form, and the sets objects make through their schema."""

from __future__ import annotations

import pytest

from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry import fieldpath as fp
from kcp_apiserver.registry.fieldsets import DuplicateItem, compare, object_set
from kcp_apiserver.registry.typeschema import TypeSchema

POD = builtinschemas.type_schema("io.k8s.api.core.v1.Pod")


def test_union_keeps_membership_of_either_side() -> None:
    a = {"f:data": {"f:a": {}}}
    b = {"f:data": {".": {}, "f:b": {}}}
    assert fp.union(a, b) == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}


def test_difference_drops_empty_parents_and_keeps_unowned_members() -> None:
    owned = {"f:data": {".": {}, "f:a": {}, "f:b": {}}}
    assert fp.difference(owned, {"f:data": {"f:a": {}, "f:b": {}}}) == {"f:data": {}}
    assert fp.difference(owned, {"f:data": {".": {}, "f:a": {}, "f:b": {}}}) == {}
    assert fp.difference(owned, {"f:other": {}}) == owned


def test_intersection_is_only_what_both_hold() -> None:
    a = {"f:spec": {"f:x": {}, "f:y": {}}}
    b = {"f:spec": {".": {}, "f:y": {}}}
    assert fp.intersection(a, b) == {"f:spec": {"f:y": {}}}
    assert fp.intersection(a, {"f:status": {}}) == {}


def test_members_are_listed_parents_first_and_rendered_as_kube_prints_them() -> None:
    s = {"f:spec": {"f:ports": {'k:{"name":"http","protocol":"TCP"}': {".": {}, "f:port": {}}},
                    "f:tags": {'v:"a"': {}}, "f:args": {"i:0": {}}}}
    rendered = [fp.render(p) for p in fp.members(s)]
    assert rendered == [".spec.args[0]", '.spec.ports[name="http",protocol="TCP"]',
                        '.spec.ports[name="http",protocol="TCP"].port', '.spec.tags[="a"]']


def test_encode_puts_self_first_and_sorts_elements() -> None:
    encoded = fp.encode({"f:b": {}, "f:a": {"f:z": {}, ".": {}, "f:y": {}}})
    assert list(encoded) == ["f:a", "f:b"]
    assert list(encoded["f:a"]) == [".", "f:y", "f:z"]


@pytest.mark.parametrize("bad", [[], {"x:a": {}}, {".": {}}, {"f:a": {".": {"f:b": {}}}}, {"k:notjson": {}},
                                 {"i:x": {}}, {"f:a": []}])
def test_malformed_fields_v1_is_refused(bad: object) -> None:
    assert not fp.valid(bad)


def test_a_configuration_owns_leaves_and_keyed_items_not_its_declared_parents() -> None:
    """kube's Pod schema: containers keyed by name, their ports by containerPort, nodeSelector an atomic map."""
    pod = {"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}],
                    "nodeSelector": {"disk": "ssd"}}}
    s = object_set(pod, POD)
    assert s == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:containers": {'k:{"name":"app"}': {
            ".": {}, "f:name": {}, "f:image": {},
            "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}},
            "f:nodeSelector": {}}}


def test_a_key_field_left_out_is_keyed_by_its_default_but_not_owned() -> None:
    """kube's `+default="TCP"` on ports' protocol: `{port: 80}` is the item `{port: 80, protocol: TCP}`."""
    service = builtinschemas.type_schema("io.k8s.api.core.v1.Service")
    assert object_set({"spec": {"ports": [{"port": 80}]}}, service) == {
        "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}}}}
    with pytest.raises(DuplicateItem):  # one item twice, once with the default spelt out
        object_set({"spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]}}, service, strict=True)
    udp = {"spec": {"ports": [{"port": 53, "protocol": "UDP"}]}}
    assert list(object_set(udp, service)["f:spec"]["f:ports"]) == ['k:{"port":53,"protocol":"UDP"}']
    changed, removed = compare({"spec": {"ports": [{"port": 80}]}},
                               {"spec": {"ports": [{"port": 80, "protocol": "TCP"}]}}, service)
    assert (changed, removed) == ({"f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {"f:protocol": {}}}}},
                                  {})


def test_custom_resources_use_list_and_map_types_of_the_crd_schema(widget_schema: TypeSchema) -> None:
    widget = {"spec": {"tags": ["a", "b"], "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
                       "args": ["x"], "selector": {"k": "v"}, "labels": {"k": "v"}, "raw": {"free": {"x": 1}}}}
    s = object_set(widget, widget_schema)
    assert s["f:spec"] == {
        "f:tags": {'v:"a"': {}, 'v:"b"': {}},
        "f:ports": {'k:{"name":"http","protocol":"TCP"}': {".": {}, "f:name": {}, "f:protocol": {}, "f:port": {}}},
        "f:args": {}, "f:selector": {}, "f:labels": {"f:k": {}},
        "f:raw": {"f:free": {".": {}, "f:x": {}}}}


def test_duplicate_keys_in_a_map_list_name_the_list(widget_schema: TypeSchema) -> None:
    widget = {"spec": {"ports": [{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "TCP"}]}}
    with pytest.raises(DuplicateItem) as caught:
        object_set(widget, widget_schema, strict=True)
    assert str(caught.value) == ".spec.ports"


def test_compare_reports_added_subtrees_whole_and_modified_leaves_only(widget_schema: TypeSchema) -> None:
    old = {"spec": {"tags": ["a"], "labels": {"k": "v"}}}
    new = {"spec": {"tags": ["a", "b"], "labels": {"k": "w"}, "settings": {"mode": "slow"}}}
    changed, removed = compare(old, new, widget_schema)
    assert changed == {"f:spec": {"f:tags": {'v:"b"': {}}, "f:labels": {"f:k": {}},
                                  "f:settings": {".": {}, "f:mode": {}}}}
    assert removed == {}
    changed, removed = compare(new, old, widget_schema)
    assert removed == {"f:spec": {"f:tags": {'v:"b"': {}}, "f:settings": {".": {}, "f:mode": {}}}}


def test_compare_skips_equal_subtrees(widget_schema: TypeSchema) -> None:
    obj = {"spec": {"tags": ["a"]}, "data": {"x": "1"}}
    assert compare(obj, {**obj}, widget_schema) == ({}, {})


def test_managed_fields_never_nest_deeper_than_the_deepest_object_accepted() -> None:
    from kcp_apiserver.apimachinery.jsonvalues import MAX_DEPTH, exceeds_depth
    from kcp_apiserver.registry.ownership import UpdateOwnership

    deep: object = "leaf"
    for _ in range(MAX_DEPTH - 2):
        deep = {"a": deep}
    obj = {"apiVersion": "g/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": deep}
    assert not exceeds_depth(obj)
    UpdateOwnership("maker", "g/v1", None).record(None, obj, "2026-01-01T00:00:00Z")
    assert obj["metadata"]["managedFields"][0]["manager"] == "maker"
    assert not exceeds_depth(obj)
