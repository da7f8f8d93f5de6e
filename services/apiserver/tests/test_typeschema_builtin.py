"""The one schema interface over kube's built-in OpenAPI definitions: topology as structured-merge-diff sees it."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.builtintypeschema import OpenAPINodes
from kcp_apiserver.registry.patch import apply_strategic_merge_patch
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.typeschema import SchemaNode, TypeSchema, node_at

POD = builtinschemas.type_schema("io.k8s.api.core.v1.Pod")
SERVICE = builtinschemas.type_schema("io.k8s.api.core.v1.Service")
CONFIG_MAP = builtinschemas.type_schema("io.k8s.api.core.v1.ConfigMap")
DEPLOYMENT = builtinschemas.type_schema("io.k8s.api.apps.v1.Deployment")


def at(schema: SchemaNode, *path: str | int) -> SchemaNode:
    node = node_at(schema, path)
    assert node is not None, path
    return node


def test_pod_containers_are_a_map_keyed_by_name() -> None:
    containers = at(POD, "spec", "containers")
    assert containers.type == "array"
    assert (containers.list_type, containers.list_map_keys) == ("map", ("name",))
    assert (containers.patch_strategies, containers.patch_merge_key) == (("merge",), "name")
    ports = at(POD, "spec", "containers", 0, "ports")
    assert (ports.list_type, ports.list_map_keys) == ("map", ("containerPort", "protocol"))
    assert at(POD, "spec", "containers", 0, "env").list_map_keys == ("name",)
    assert at(POD, "spec", "containers", 0).map_type == "granular"


def test_service_ports_are_keyed_by_port_and_protocol_while_strategic_merge_keys_by_port() -> None:
    ports = at(SERVICE, "spec", "ports")
    assert (ports.list_type, ports.list_map_keys) == ("map", ("port", "protocol"))
    assert ports.patch_merge_key == "port"


def test_config_map_data_is_a_granular_map_of_strings() -> None:
    data = at(CONFIG_MAP, "data")
    assert (data.type, data.map_type, data.list_type) == ("object", "granular", None)
    values = data.values()
    assert values is not None and values.type == "string"
    assert data.field("any-key") is values


def test_object_meta_lists_and_maps_as_kube_declares_them() -> None:
    finalizers = at(CONFIG_MAP, "metadata", "finalizers")
    assert finalizers.list_type == "set" and finalizers.list_map_keys == ()
    owners = at(CONFIG_MAP, "metadata", "ownerReferences")
    assert (owners.list_type, owners.list_map_keys) == ("map", ("uid",))
    assert at(CONFIG_MAP, "metadata", "labels").map_type == "granular"


def test_lists_without_a_topology_are_atomic_and_a_declared_list_type_wins_over_the_patch_strategy() -> None:
    assert at(POD, "spec", "containers", 0, "command").list_type == "atomic"
    assert at(builtinschemas.type_schema("io.k8s.api.core.v1.PodList"), "items").list_type == "atomic"
    host_ips = at(POD, "status", "hostIPs")  # patch strategy merge on ip, but x-kubernetes-list-type atomic
    assert (host_ips.patch_strategies, host_ips.patch_merge_key) == (("merge",), "ip")
    assert (host_ips.list_type, host_ips.list_map_keys) == ("atomic", ())


def test_atomic_structs_and_maps_and_a_field_that_overrides_its_type() -> None:
    assert at(DEPLOYMENT, "spec", "selector").map_type == "atomic"  # LabelSelector is an atomic struct
    assert at(SERVICE, "spec", "selector").map_type == "atomic"  # a map of strings marked atomic
    event = builtinschemas.type_schema("io.k8s.api.core.v1.Event")
    assert at(event, "involvedObject").map_type == "atomic"  # ObjectReference, as declared
    volume = builtinschemas.type_schema("io.k8s.api.core.v1.PersistentVolume")
    assert at(volume, "spec", "claimRef").map_type == "granular"  # the same type, the field says granular


def test_strategic_merge_metadata_comes_from_the_field() -> None:
    volumes = at(POD, "spec", "volumes")
    assert volumes.patch_strategies == ("merge", "retainKeys") and volumes.list_map_keys == ("name",)
    assert at(DEPLOYMENT, "spec", "strategy").patch_strategies == ("retainKeys",)
    assert at(DEPLOYMENT, "spec", "strategy").list_type is None
    budget = builtinschemas.type_schema("io.k8s.api.policy.v1.PodDisruptionBudget")
    assert at(budget, "spec", "selector").patch_strategies == ("replace",)


def test_free_form_objects_preserve_unknown_fields() -> None:
    revision = builtinschemas.type_schema("io.k8s.api.apps.v1.ControllerRevision")
    assert at(revision, "data").preserves_unknown_fields  # a RawExtension
    assert not at(POD, "spec").preserves_unknown_fields


def test_unknown_fields_and_definitions_know_nothing() -> None:
    assert node_at(POD, ["spec", "noSuchField", "deeper"]) is None
    assert at(POD, "spec").items() is None and at(POD, "spec").values() is None
    unknown = builtinschemas.type_schema("no.such.Type")
    assert unknown.root is None and unknown.field("spec") is None and unknown.list_type is None
    assert unknown.prune({"a": 1}) == [] and unknown.decode_errors({"a": 1}) == []


@pytest.mark.parametrize(("extensions", "expected"), [
    ({"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"}, ("map", ("name",))),
    ({"x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name"},
     ("map", ("name",))),
    ({"x-kubernetes-patch-strategy": "merge"}, ("set", ())),
    ({"x-kubernetes-patch-strategy": "retainKeys"}, ("atomic", ())),
    ({"x-kubernetes-patch-strategy": "replace"}, ("atomic", ())),
    ({}, ("atomic", ())),
    ({"x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge",
      "x-kubernetes-patch-merge-key": "name"}, ("set", ())),
    ({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"]}, ("map", ("a", "b"))),
])
def test_without_a_list_type_the_patch_strategy_decides_as_schemaconv_does(
        extensions: dict[str, Any], expected: tuple[str, tuple[str, ...]]) -> None:
    definitions = {"T": {"type": "object", "properties": {
        "things": {"type": "array", "items": {"$ref": "#/definitions/Item"}, **extensions}}},
        "Item": {"type": "object", "properties": {"name": {"type": "string"}}}}
    things = at(OpenAPINodes(definitions).definition("T"), "things")  # type: ignore[arg-type]
    assert (things.list_type, things.list_map_keys) == expected
    assert at(things, 0, "name").type == "string"


def test_one_node_per_schema_position_and_one_type_schema_per_definition() -> None:
    assert at(POD, "spec", "containers") is at(DEPLOYMENT, "spec", "template", "spec", "containers")
    assert builtinschemas.type_schema("io.k8s.api.core.v1.Pod") is POD
    config_maps = [r for r in BUILTINS if r.kind == "ConfigMap"]
    assert config_maps and config_maps[0].type_schema is CONFIG_MAP
    no_definition = Resource("example.com", "v1", "Widget", "widgets", "widget", True)
    assert no_definition.type_schema is None


def test_prune_drops_unknown_fields_and_reports_their_paths() -> None:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "extra": 1,
                           "metadata": {"name": "p", "labels": {"any": "label"}, "bogus": True},
                           "spec": {"containers": [{"name": "c", "image": "i", "colour": "red"}]}}
    assert POD.prune(pod) == ["extra", "metadata.bogus", "spec.containers[0].colour"]
    assert pod == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"any": "label"}},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_decode_errors_are_worded_as_go_decoding_them() -> None:
    pod = {"metadata": {"name": 3}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}
    assert POD.decode_errors(pod) == [
        "json: cannot unmarshal number into Go struct field metadata.name of type string",
        "json: cannot unmarshal string into Go struct field spec.containers[0].ports[0].containerPort of type int"]
    assert DEPLOYMENT.decode_errors({"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}}) == [
        "spec.strategy.rollingUpdate.maxSurge: expected an integer or a string, got bool"]


def test_a_quantity_written_as_a_json_number_decodes_to_its_canonical_text() -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 0.1, "memory": 128},
                                                               "requests": {"cpu": 1000, "memory": "1Gi"}}}],
                    "overhead": {"cpu": 2.5}}}
    assert POD.decode_errors(pod) == []
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "100m", "memory": "128"},
                                                         "requests": {"cpu": "1k", "memory": "1Gi"}}
    assert pod["spec"]["overhead"] == {"cpu": "2500m"}


def test_a_quantity_written_as_text_decodes_to_kubes_canonical_text() -> None:
    """A real kube-apiserver reads `0.5` back as `500m` and `1024Mi` as `1Gi`, in built-in and imported types."""
    pod = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"},
                                                               "requests": {"cpu": "0.5", "memory": "1e3"}}}]}}
    assert POD.decode_errors(pod) == []
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"},
                                                         "requests": {"cpu": "500m", "memory": "1e3"}}


def test_a_quantity_kube_cannot_parse_is_refused_in_kubes_words() -> None:
    for bad in ("abc", True, [1]):
        pod = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": bad}}}]}}
        assert POD.decode_errors(pod) == [
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]


def test_a_null_list_item_or_map_value_decodes_to_its_go_zero_value() -> None:
    pod: dict[str, Any] = {"metadata": {"labels": {"a": None}},
                           "spec": {"containers": [{"name": "c", "args": [None, "x"], "image": None,
                                                    "ports": [None]}]}}
    assert POD.decode_errors(pod) == []
    container = pod["spec"]["containers"][0]
    assert container["args"] == ["", "x"] and container["ports"] == [{}] and pod["metadata"]["labels"] == {"a": ""}
    assert container["image"] is None  # a field's null is the field unset, as before


def test_built_in_defaults_and_validation_are_the_types_own_code() -> None:
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "c"}]}}
    POD.default(pod)
    assert not POD.has_defaults and pod == {"spec": {"containers": [{"name": "c"}]}}
    assert POD.validate(pod, None) == []


def test_field_validation_reads_the_resources_type_schema() -> None:
    config_map = next(r for r in BUILTINS if r.kind == "ConfigMap")
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dat": {}}
    assert FieldValidator().check(config_map, obj, None, "Warn") == ['unknown field "dat"']
    assert "dat" not in obj
    with pytest.raises(APIError) as err:
        FieldValidator().check(config_map, {"data": {"k": 1}}, None, "Ignore")
    assert err.value.code == 400 and "cannot be handled as a ConfigMap" in err.value.message


def test_strategic_merge_walks_the_type_schema() -> None:
    deployment_schema: TypeSchema = DEPLOYMENT
    doc = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}}}}
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}]}}}}
    merged = apply_strategic_merge_patch(doc, patch, deployment_schema)
    assert merged["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "1"},
                                                                {"name": "b", "image": "2"}]
    assert FieldValidator().patch_meta(next(r for r in BUILTINS if r.kind == "Secret")) is not None
