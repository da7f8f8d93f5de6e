"""OpenAPI v3 → CRD schema: $refs inlined, kube's special types mapped as its CRD tooling maps them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kcp_cluster_controller.openapi import UnknownType, crd_schema

REF = "#/components/schemas/"


def document(**schemas: Any) -> dict[str, Any]:
    return {"components": {"schemas": schemas}}


WIDGET = {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "example.io", "version": "v1", "kind": "Widget"}],
    "properties": {
        "metadata": {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        "spec": {"allOf": [{"$ref": REF + "WidgetSpec"}], "description": "the desired state", "default": {}},
        "status": {"$ref": REF + "WidgetStatus"},
    },
}
SPEC = {
    "type": "object",
    "properties": {
        "port": {"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
        "size": {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"},
        "raw": {"$ref": REF + "io.k8s.apimachinery.pkg.runtime.RawExtension"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "ports": {"type": "array", "items": {"$ref": REF + "Port"}, "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                  "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "containerPort"},
        "refs": {"type": "array", "items": {"$ref": REF + "Ref"}, "x-kubernetes-list-type": "map",
                 "x-kubernetes-list-map-keys": ["name"]},
        "self": {"$ref": REF + "WidgetSpec"},
        "untyped": {"description": "anything"},
        "legacy": {"type": "string", "format": "int-or-string"},
    },
}
STATUS = {"type": "object", "properties": {"since": {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                                                     "description": "when"}}}
PORT = {"type": "object", "required": ["containerPort"],
        "properties": {"containerPort": {"type": "integer"}, "protocol": {"type": "string"}}}
NAMED = {"type": "object", "properties": {"name": {"type": "string"}}}
OBJECT_META = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.fixture
def schema() -> dict[str, Any]:
    doc = document(Widget=WIDGET, WidgetSpec=SPEC, WidgetStatus=STATUS, Port=PORT, Ref=NAMED,
                   **{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": OBJECT_META})
    return crd_schema(doc, "example.io", "v1", "Widget")


def test_refs_are_inlined_keeping_their_description(schema: dict[str, Any]) -> None:
    spec = schema["properties"]["spec"]
    assert spec["type"] == "object" and spec["description"] == "the desired state"
    assert "default" not in spec  # an object default ({}) is the physical cluster's business
    assert "$ref" not in str(schema) and "allOf" not in str(schema)


def test_the_root_metadata_is_left_to_the_server(schema: dict[str, Any]) -> None:
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["type"] == "object"


def test_int_or_string_and_quantity_become_x_kubernetes_int_or_string(schema: dict[str, Any]) -> None:
    props = schema["properties"]["spec"]["properties"]
    for name in ("port", "size", "legacy"):
        assert props[name]["x-kubernetes-int-or-string"] is True
        assert props[name]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
        assert "type" not in props[name]


def test_time_is_a_date_time_string_and_raw_extension_keeps_unknown_fields(schema: dict[str, Any]) -> None:
    since = schema["properties"]["status"]["properties"]["since"]
    assert since == {"type": "string", "format": "date-time", "description": "when"}
    raw = schema["properties"]["spec"]["properties"]["raw"]
    assert raw == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_keywords_a_crd_does_not_take_are_dropped(schema: dict[str, Any]) -> None:
    ports = schema["properties"]["spec"]["properties"]["ports"]
    assert ports["x-kubernetes-list-type"] == "map"
    assert "x-kubernetes-group-version-kind" not in schema


def test_patch_strategies_stay_on_their_fields_for_negotiation_and_the_crds_annotation() -> None:
    spec = {**SPEC, "properties": {**SPEC["properties"], "strategy": {
        "allOf": [{"$ref": REF + "Ref"}], "x-kubernetes-patch-strategy": "retainKeys", "default": {}}}}
    doc = document(Widget=WIDGET, WidgetSpec=spec, WidgetStatus=STATUS, Port=PORT, Ref=NAMED,
                   **{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": OBJECT_META})
    props = crd_schema(doc, "example.io", "v1", "Widget")["properties"]["spec"]["properties"]
    assert props["ports"]["x-kubernetes-patch-strategy"] == "merge"
    assert props["ports"]["x-kubernetes-patch-merge-key"] == "containerPort"
    assert props["strategy"]["x-kubernetes-patch-strategy"] == "retainKeys"  # beside a $ref
    assert props["strategy"]["properties"] == NAMED["properties"]


def test_list_map_keys_get_a_default_or_become_required(schema: dict[str, Any]) -> None:
    props = schema["properties"]["spec"]["properties"]
    assert props["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"
    assert props["refs"]["items"]["required"] == ["name"]


def test_untyped_nodes_and_self_references_keep_unknown_fields(schema: dict[str, Any]) -> None:
    props = schema["properties"]["spec"]["properties"]
    assert props["untyped"]["x-kubernetes-preserve-unknown-fields"] is True
    assert props["untyped"]["type"] == "object"
    assert props["self"]["x-kubernetes-preserve-unknown-fields"] is True


def test_scalar_defaults_stay(schema: dict[str, Any]) -> None:
    assert schema["properties"]["spec"]["properties"]["labels"]["additionalProperties"]["default"] == ""


def test_an_unknown_kind_is_an_error() -> None:
    with pytest.raises(UnknownType):
        crd_schema(document(Widget=WIDGET), "example.io", "v1", "Gadget")


def test_a_v2_document_converts_as_its_v3_twin() -> None:
    """kube before 1.24 serves only /openapi/v2: `definitions` and `#/definitions/` refs instead of components."""
    v3 = {"Widget": WIDGET, "WidgetSpec": SPEC, "WidgetStatus": STATUS, "Port": PORT, "Ref": NAMED,
          "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": OBJECT_META}
    v2 = json.loads(json.dumps(v3).replace(REF, "#/definitions/"))
    converted = crd_schema({"swagger": "2.0", "definitions": v2}, "example.io", "v1", "Widget")
    assert converted == crd_schema(document(**v3), "example.io", "v1", "Widget")
    assert converted["properties"]["spec"]["properties"]["ports"]["items"]["properties"]["containerPort"] == {
        "type": "integer"}
