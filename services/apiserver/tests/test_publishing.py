"""CRD schemas in /openapi/v2 and /openapi/v3 as kube publishes them."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.publishing import published_schema
from kcp_apiserver.endpoints.openapi import swagger, v3_document
from kcp_apiserver.registry.resource import Resource

OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
META_V2 = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def crd(schema: dict[str, Any]) -> Resource:
    return Resource("example.com", "v1", "Widget", "widgets", "widget", True, schema=schema)


def test_v2_lists_nothing_under_a_node_that_preserves_unknown_fields() -> None:
    schema = {"type": "object", "properties": {
        "settings": {**OPEN, "properties": {"known": {"type": "string"}}, "required": ["known"]},
        "raw": {"type": "array", "x-kubernetes-preserve-unknown-fields": True, "items": {"type": "string"}},
        "kept": {"type": "object", "properties": {"a": {"type": "string"}}}}}
    v2 = published_schema(schema, v2=True)
    assert v2["properties"]["settings"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                            "required": ["known"]}
    assert v2["properties"]["raw"] == {"x-kubernetes-preserve-unknown-fields": True}  # an array without items
    assert v2["properties"]["kept"] == schema["properties"]["kept"]
    assert published_schema(schema, v2=False) == schema  # v3 says it all


def test_v2_drops_junctors_and_untypes_nullable_nodes() -> None:
    schema = {"type": "object", "required": ["maybe", "size"], "properties": {
        "maybe": {"type": "object", "nullable": True, "properties": {"x": {"type": "string"}}},
        "size": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                 "pattern": "^[0-9]+$"},
        "either": {"type": "object", "oneOf": [{"required": ["a"]}], "not": {"required": ["b"]},
                   "allOf": [{"required": ["c"]}], "properties": {"a": {"type": "string"}}},
        "labels": {"type": "object", "required": ["k"], "additionalProperties": {"type": "string",
                                                                               "nullable": True}}}}
    v2 = published_schema(schema, v2=True)
    props = v2["properties"]
    assert v2["required"] == ["size"]  # a nullable property is no longer required
    assert props["maybe"] == {}
    assert props["size"] == {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+$"}
    assert props["either"] == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert props["labels"] == {"type": "object", "additionalProperties": {}}
    assert schema["properties"]["maybe"]["nullable"] is True  # the CRD's own schema is untouched


def test_embedded_resources_gain_type_and_object_meta_except_under_v2_open_nodes() -> None:
    embedded = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": OPEN}}
    schema = {"type": "object", "properties": {"template": embedded,
                                               "raw": {**OPEN, "x-kubernetes-embedded-resource": True}}}
    for v2 in (True, False):
        template = published_schema(schema, v2=v2)["properties"]["template"]
        assert set(template["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
        assert template["properties"]["metadata"]["$ref"] == META_V2
        assert template["required"] == ["kind", "apiVersion"]
    assert "properties" not in published_schema(schema, v2=True)["properties"]["raw"]
    assert set(published_schema(schema, v2=False)["properties"]["raw"]["properties"]) == {
        "apiVersion", "kind", "metadata"}


def test_a_kind_whose_root_preserves_unknown_fields_is_a_bare_object_in_v2() -> None:
    res = crd({**OPEN, "properties": {"spec": {"type": "object"}}})
    definition = swagger([res])["definitions"]["com.example.v1.Widget"]
    assert definition == {"type": "object", "x-kubernetes-group-version-kind": [
        {"group": "example.com", "version": "v1", "kind": "Widget"}]}
    v3 = v3_document([res], "apis/example.com/v1")
    assert v3 is not None
    v3_props = v3["components"]["schemas"]["com.example.v1.Widget"]["properties"]
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(v3_props)
