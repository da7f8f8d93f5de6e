"""The one schema interface over a CRD's structural schema: topology, prune, default, validate, sharing."""

from __future__ import annotations

import copy
from typing import Any

from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.typeschema import SchemaNode, TypeSchema, node_at

STRINGS = {"type": "array", "items": {"type": "string"}}
PORT = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}
SPEC = {"type": "object", "properties": {
    "tags": {**STRINGS, "x-kubernetes-list-type": "set"},
    "ports": {"type": "array", "items": PORT, "x-kubernetes-list-type": "map",
              "x-kubernetes-list-map-keys": ["name", "protocol"]},
    "args": {**STRINGS, "x-kubernetes-list-type": "atomic"},
    "plain": STRINGS,
    "selector": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "granular"},
    "settings": {"type": "object", "properties": {"mode": {"type": "string", "default": "fast"}}},
    "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "version": {"type": "integer", "x-kubernetes-validations": [
        {"rule": "self >= oldSelf", "message": "version only grows"}]},
}}
SCHEMA = {"type": "object", "properties": {"spec": SPEC, "status": {"type": "object"}}}


def crd(group: str = "example.com", schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": copy.deepcopy(schema)}}
    return {"metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "versions": [version],
                     "names": {"plural": "widgets", "kind": "Widget"}}}


def widgets(group: str = "example.com") -> Resource:
    [res] = resources_for(crd(group))
    return res


def schema_of(res: Resource) -> TypeSchema:
    assert res.type_schema is not None
    return res.type_schema


def at(schema: SchemaNode, *path: str | int) -> SchemaNode:
    node = node_at(schema, path)
    assert node is not None, path
    return node


def test_list_types_come_from_the_schema_and_default_to_atomic() -> None:
    schema = schema_of(widgets())
    assert (at(schema, "spec", "tags").list_type, at(schema, "spec", "tags").list_map_keys) == ("set", ())
    ports = at(schema, "spec", "ports")
    assert (ports.list_type, ports.list_map_keys) == ("map", ("name", "protocol"))
    assert at(schema, "spec", "ports", 0, "port").type == "integer"
    assert at(schema, "spec", "args").list_type == "atomic"
    assert at(schema, "spec", "plain").list_type == "atomic"
    assert ports.patch_strategies == () and ports.patch_merge_key is None  # CRDs carry no patch metadata


def test_map_types_and_preserved_fields() -> None:
    schema = schema_of(widgets())
    assert at(schema, "spec", "selector").map_type == "atomic"
    assert at(schema, "spec", "labels").map_type == "granular"
    assert at(schema, "spec", "labels", "app").type == "string"
    assert at(schema, "spec").map_type == "granular"
    assert at(schema, "spec", "raw").preserves_unknown_fields
    assert not at(schema, "status").preserves_unknown_fields  # structural: a bare object keeps nothing
    assert node_at(schema, ["spec", "raw", "anything"]) is None


def test_metadata_is_object_meta_whatever_the_crd_says() -> None:
    schema = schema_of(widgets())
    assert at(schema, "metadata", "finalizers").list_type == "set"
    assert at(schema, "metadata", "ownerReferences").list_map_keys == ("uid",)
    assert at(schema, "metadata", "labels").map_type == "granular"


def test_prune_default_and_validate_through_the_interface() -> None:
    schema = schema_of(widgets())
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                           "spec": {"ports": [{"name": "http"}], "settings": {}, "unknown": 1,
                                    "raw": {"kept": True}}}
    assert schema.prune(obj) == ["spec.unknown"]
    assert schema.has_defaults
    schema.default(obj)
    assert obj["spec"]["ports"] == [{"name": "http", "protocol": "TCP"}]
    assert obj["spec"]["settings"] == {"mode": "fast"} and obj["spec"]["raw"] == {"kept": True}
    assert schema.decode_errors({"spec": {"tags": 3}}) == []  # custom resources decode into plain maps
    assert schema.validate(obj, None) == []
    duplicate = {**obj, "spec": {"tags": ["a", "a"]}}
    assert [(c.reason, c.field) for c in schema.validate(duplicate, None)] == [("FieldValueDuplicate", "spec.tags[1]")]


def test_validate_runs_transition_rules_against_the_old_object() -> None:
    res = widgets()
    schema = schema_of(res)
    old = {"spec": {"version": 2}}
    assert schema.validate({"spec": {"version": 3}}, old) == []
    causes = schema.validate({"spec": {"version": 1}}, old)
    assert [(c.field, c.message) for c in causes] == [("spec.version", 'Invalid value: "integer": version only grows')]
    assert res.strategy.validate_update({"spec": {"version": 1}}, old) == causes


def test_one_type_schema_per_distinct_schema_across_crds_and_logical_clusters() -> None:
    assert widgets("a.example.com").type_schema is widgets("b.example.com").type_schema
    other = crd(schema={"type": "object", "properties": {"spec": {"type": "object"}}})
    assert resources_for(other)[0].type_schema is not widgets().type_schema


def test_field_validation_prunes_and_defaults_custom_resources_through_the_type_schema() -> None:
    res = widgets()
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                           "spec": {"settings": {}, "colour": "red"}}
    assert FieldValidator().check(res, obj, None, "") == ['unknown field "spec.colour"']
    assert obj["spec"] == {"settings": {"mode": "fast"}}
    assert FieldValidator().patch_meta(res) is None  # strategic merge is 415 for custom resources
