"""The built-in OpenAPI schemas: v2 conversion, GVK lookup, closures, v3 refs, patch metadata."""

from __future__ import annotations

import copy
import json
from typing import Any

from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.builtinschemas import PatchMeta

POD = "io.k8s.api.core.v1.Pod"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _walk(node: Any):  # type: ignore[no-untyped-def]
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_definitions_are_loaded_once_and_shared() -> None:
    assert builtinschemas.definitions() is builtinschemas.definitions()
    assert len(builtinschemas.definitions()) > 600


def test_definitions_use_openapi_v2_refs() -> None:
    refs = [n["$ref"] for n in _walk(builtinschemas.definitions()) if isinstance(n.get("$ref"), str)]
    assert refs and all(r.startswith("#/definitions/") for r in refs)
    assert all(r.removeprefix("#/definitions/") in builtinschemas.definitions() for r in refs)
    assert "$defs" not in json.dumps(builtinschemas.definitions())


def test_definitions_have_single_types_without_null() -> None:
    pod = builtinschemas.definitions()[POD]
    assert pod["type"] == "object"
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    labels = builtinschemas.definitions()[OBJECT_META]["properties"]["labels"]
    assert labels["type"] == "object" and labels["additionalProperties"] == {"type": "string"}
    types = [n["type"] for n in _walk(builtinschemas.definitions()) if isinstance(n.get("type"), (list, str))]
    assert all(isinstance(t, str) and t != "null" for t in types)


def test_definitions_drop_the_enum_on_api_version_and_kind() -> None:
    props = builtinschemas.definitions()["io.k8s.api.core.v1.ConfigMap"]["properties"]
    assert "enum" not in props["apiVersion"] and "enum" not in props["kind"]
    assert props["kind"]["type"] == "string" and props["kind"]["description"]


def test_definitions_keep_descriptions_formats_and_kube_extensions() -> None:
    defs = builtinschemas.definitions()
    assert defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"] == "date-time"
    containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["description"].startswith("List of containers")
    assert defs[POD]["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]


def test_int_or_string_and_quantity_become_kube_string_schemas() -> None:
    defs = builtinschemas.definitions()
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {"type": "string", "format": "int-or-string"}
    assert defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] == {"type": "string"}


def test_schema_keywords_used_as_property_names_survive_conversion() -> None:
    props = builtinschemas.definitions()["io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"][
        "properties"]
    assert props["$ref"] == {"type": "string"}
    assert props["type"] == {"type": "string"}
    assert props["enum"]["type"] == "array"


def test_definition_for_finds_kinds_by_group_version_kind() -> None:
    assert builtinschemas.definition_for("", "v1", "ConfigMap") == "io.k8s.api.core.v1.ConfigMap"
    assert builtinschemas.definition_for("apps", "v1", "Deployment") == "io.k8s.api.apps.v1.Deployment"
    assert builtinschemas.definition_for("rbac.authorization.k8s.io", "v1", "Role") == "io.k8s.api.rbac.v1.Role"
    assert builtinschemas.definition_for("apiextensions.k8s.io", "v1", "CustomResourceDefinition") == \
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    assert builtinschemas.definition_for("", "v1", "Status") == "io.k8s.apimachinery.pkg.apis.meta.v1.Status"


def test_definition_for_falls_back_to_the_definition_name() -> None:
    assert "x-kubernetes-group-version-kind" not in builtinschemas.definitions()["io.k8s.api.core.v1.ObjectReference"]
    assert builtinschemas.definition_for("", "v1", "ObjectReference") == "io.k8s.api.core.v1.ObjectReference"
    assert builtinschemas.definition_for("rbac.authorization.k8s.io", "v1", "Subject") == "io.k8s.api.rbac.v1.Subject"


def test_definition_for_unknown_kinds_is_none() -> None:
    assert builtinschemas.definition_for("example.com", "v1", "Widget") is None
    assert builtinschemas.definition_for("", "v1", "Widget") is None


def test_closure_holds_everything_referenced_transitively() -> None:
    defs = builtinschemas.closure([POD])
    for name in (POD, "io.k8s.api.core.v1.PodSpec", "io.k8s.api.core.v1.Container", OBJECT_META,
                 "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.Time"):
        assert name in defs
    refs = {n["$ref"].removeprefix("#/definitions/") for n in _walk(defs) if isinstance(n.get("$ref"), str)}
    assert refs <= set(defs)
    assert "io.k8s.api.apps.v1.Deployment" not in defs


def test_closure_ignores_unknown_names() -> None:
    assert builtinschemas.closure(["no.such.Type"]) == {}
    assert set(builtinschemas.closure(["io.k8s.apimachinery.pkg.apis.meta.v1.Time", "no.such.Type"])) == {
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time"}


def test_to_v3_rewrites_refs_on_a_deep_copy() -> None:
    defs = builtinschemas.closure([POD])
    before = copy.deepcopy(defs)
    v3 = builtinschemas.to_v3(defs)
    assert defs == before
    assert v3[POD]["properties"]["metadata"]["$ref"] == f"#/components/schemas/{OBJECT_META}"
    assert "#/definitions/" not in json.dumps(v3)
    v3[POD]["properties"]["metadata"]["description"] = "changed"
    assert builtinschemas.definitions()[POD]["properties"]["metadata"]["description"] != "changed"


def test_patch_meta_reports_containers_merge_by_name() -> None:
    containers = PatchMeta.for_definition(POD).field("spec").field("containers")
    assert containers.strategy == "merge" and containers.merges
    assert containers.merge_key == "name"
    env = containers.items().field("env")
    assert (env.strategy, env.merge_key) == ("merge", "name")


def test_patch_meta_reports_metadata_lists() -> None:
    meta = PatchMeta.for_definition(POD).field("metadata")
    finalizers = meta.field("finalizers")
    assert finalizers.merges and finalizers.merge_key is None
    owners = meta.field("ownerReferences")
    assert (owners.strategy, owners.merge_key) == ("merge", "uid")


def test_patch_meta_reports_retain_keys_and_replace_strategies() -> None:
    volumes = PatchMeta.for_definition(POD).field("spec").field("volumes")
    assert volumes.strategy == "merge,retainKeys" and volumes.merges and volumes.retains_keys
    strategy = PatchMeta.for_definition("io.k8s.api.apps.v1.Deployment").field("spec").field("strategy")
    assert strategy.strategies == ("retainKeys",) and not strategy.merges
    selector = PatchMeta.for_definition("io.k8s.api.policy.v1.PodDisruptionBudget").field("spec").field("selector")
    assert selector.replaces


def test_patch_meta_descends_through_refs_and_map_values() -> None:
    template = PatchMeta.for_definition("io.k8s.api.apps.v1.Deployment").field("spec").field("template")
    assert template.field("spec").field("containers").merge_key == "name"
    label = PatchMeta.for_definition(POD).field("metadata").field("labels").field("app")
    assert label.schema == {"type": "string"} and label.strategies == ()


def test_patch_meta_without_schema_knows_nothing() -> None:
    unknown = PatchMeta.for_definition(POD).field("spec").field("noSuchField")
    assert unknown.schema is None and unknown.strategies == () and unknown.merge_key is None
    assert unknown.field("x").items().strategy == ""
    assert PatchMeta.for_definition("no.such.Type").schema is None
    assert PatchMeta.unknown().field("a").items().merges is False
