"""encode_swagger must produce bytes that gnostic's openapi.v2.Document parses.

The test declares a subset of gnostic's OpenAPIv2.proto (same message names and
field numbers), compiles it with grpc_tools.protoc, parses the encoder's output
with the generated classes and checks what kubectl reads. It is a second,
independent statement of the wire contract beside the server's openapi_v2.proto,
so its package is its own (the wire carries no package name; the two must not
collide in protobuf's default descriptor pool).
Every decoded message is also checked for unknown fields, which is what a
wrong field number or wire type would leave behind.
"""

from __future__ import annotations

import importlib.util
import math
import types
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import unknown_fields
from google.protobuf.message import Message
from grpc_tools import protoc  # test-only dependency: grpcio-tools

from kcp_apiserver.endpoints.openapi_proto import encode_swagger

# A subset of openapi.v2 from google/gnostic's openapiv2/OpenAPIv2.proto, with
# the same field numbers.  Messages declared here list every field the tests
# use; fields left out point at messages this subset does not declare.
OPENAPI_V2_SUBSET = """
syntax = "proto3";
package openapi.v2.subset;
import "google/protobuf/any.proto";

message Any { google.protobuf.Any value = 1; string yaml = 2; }
message NamedAny { string name = 1; Any value = 2; }

message Document {
  string swagger = 1;
  Info info = 2;
  string host = 3;
  string base_path = 4;
  repeated string schemes = 5;
  repeated string consumes = 6;
  repeated string produces = 7;
  Paths paths = 8;
  Definitions definitions = 9;
  repeated SecurityRequirement security = 12;
  SecurityDefinitions security_definitions = 13;
  repeated NamedAny vendor_extension = 16;
}

message Info {
  string title = 1;
  string version = 2;
  string description = 3;
  repeated NamedAny vendor_extension = 7;
}

message Paths {
  repeated NamedAny vendor_extension = 1;
  repeated NamedPathItem path = 2;
}
message NamedPathItem { string name = 1; PathItem value = 2; }

message PathItem {
  string _ref = 1;
  Operation get = 2;
  Operation put = 3;
  Operation post = 4;
  Operation delete = 5;
  Operation options = 6;
  Operation head = 7;
  Operation patch = 8;
  repeated ParametersItem parameters = 9;
  repeated NamedAny vendor_extension = 10;
}

message Operation {
  repeated string tags = 1;
  string summary = 2;
  string description = 3;
  string operation_id = 5;
  repeated string produces = 6;
  repeated string consumes = 7;
  repeated ParametersItem parameters = 8;
  Responses responses = 9;
  repeated string schemes = 10;
  bool deprecated = 11;
  repeated NamedAny vendor_extension = 13;
}

message ParametersItem {
  oneof oneof { Parameter parameter = 1; JsonReference json_reference = 2; }
}
message JsonReference { string _ref = 1; string description = 2; }
message Parameter {
  oneof oneof { BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2; }
}
message BodyParameter {
  string description = 1;
  string name = 2;
  string in = 3;
  bool required = 4;
  Schema schema = 5;
  repeated NamedAny vendor_extension = 6;
}
message NonBodyParameter {
  oneof oneof {
    HeaderParameterSubSchema header_parameter_sub_schema = 1;
    QueryParameterSubSchema query_parameter_sub_schema = 3;
    PathParameterSubSchema path_parameter_sub_schema = 4;
  }
}

message QueryParameterSubSchema {
  bool required = 1;
  string in = 2;
  string description = 3;
  string name = 4;
  bool allow_empty_value = 5;
  string type = 6;
  string format = 7;
  PrimitivesItems items = 8;
  string collection_format = 9;
  Any default = 10;
  double maximum = 11;
  bool exclusive_maximum = 12;
  double minimum = 13;
  bool exclusive_minimum = 14;
  int64 max_length = 15;
  int64 min_length = 16;
  string pattern = 17;
  int64 max_items = 18;
  int64 min_items = 19;
  bool unique_items = 20;
  repeated Any enum = 21;
  double multiple_of = 22;
  repeated NamedAny vendor_extension = 23;
}

message PathParameterSubSchema {
  bool required = 1;
  string in = 2;
  string description = 3;
  string name = 4;
  string type = 5;
  string format = 6;
  PrimitivesItems items = 7;
  string collection_format = 8;
  Any default = 9;
  double maximum = 10;
  bool exclusive_maximum = 11;
  double minimum = 12;
  bool exclusive_minimum = 13;
  int64 max_length = 14;
  int64 min_length = 15;
  string pattern = 16;
  int64 max_items = 17;
  int64 min_items = 18;
  bool unique_items = 19;
  repeated Any enum = 20;
  double multiple_of = 21;
  repeated NamedAny vendor_extension = 22;
}

message HeaderParameterSubSchema {
  bool required = 1;
  string in = 2;
  string description = 3;
  string name = 4;
  string type = 5;
  string format = 6;
  PrimitivesItems items = 7;
  string collection_format = 8;
  Any default = 9;
  double maximum = 10;
  bool exclusive_maximum = 11;
  double minimum = 12;
  bool exclusive_minimum = 13;
  int64 max_length = 14;
  int64 min_length = 15;
  string pattern = 16;
  int64 max_items = 17;
  int64 min_items = 18;
  bool unique_items = 19;
  repeated Any enum = 20;
  double multiple_of = 21;
  repeated NamedAny vendor_extension = 22;
}

message PrimitivesItems {
  string type = 1;
  string format = 2;
  PrimitivesItems items = 3;
  string collection_format = 4;
  Any default = 5;
  double maximum = 6;
  bool exclusive_maximum = 7;
  double minimum = 8;
  bool exclusive_minimum = 9;
  int64 max_length = 10;
  int64 min_length = 11;
  string pattern = 12;
  int64 max_items = 13;
  int64 min_items = 14;
  bool unique_items = 15;
  repeated Any enum = 16;
  double multiple_of = 17;
  repeated NamedAny vendor_extension = 18;
}

message Responses {
  repeated NamedResponseValue response_code = 1;
  repeated NamedAny vendor_extension = 2;
}
message NamedResponseValue { string name = 1; ResponseValue value = 2; }
message ResponseValue {
  oneof oneof { Response response = 1; JsonReference json_reference = 2; }
}
message Response {
  string description = 1;
  SchemaItem schema = 2;
  repeated NamedAny vendor_extension = 5;
}
message SchemaItem { oneof oneof { Schema schema = 1; } }

message Definitions { repeated NamedSchema additional_properties = 1; }
message Properties { repeated NamedSchema additional_properties = 1; }
message NamedSchema { string name = 1; Schema value = 2; }
message TypeItem { repeated string value = 1; }
message ItemsItem { repeated Schema schema = 1; }
message AdditionalPropertiesItem {
  oneof oneof { Schema schema = 1; bool boolean = 2; }
}

message Schema {
  string _ref = 1;
  string format = 2;
  string title = 3;
  string description = 4;
  Any default = 5;
  double multiple_of = 6;
  double maximum = 7;
  bool exclusive_maximum = 8;
  double minimum = 9;
  bool exclusive_minimum = 10;
  int64 max_length = 11;
  int64 min_length = 12;
  string pattern = 13;
  int64 max_items = 14;
  int64 min_items = 15;
  bool unique_items = 16;
  int64 max_properties = 17;
  int64 min_properties = 18;
  repeated string required = 19;
  repeated Any enum = 20;
  AdditionalPropertiesItem additional_properties = 21;
  TypeItem type = 22;
  ItemsItem items = 23;
  repeated Schema all_of = 24;
  Properties properties = 25;
  string discriminator = 26;
  bool read_only = 27;
  Any example = 30;
  repeated NamedAny vendor_extension = 31;
}

message SecurityDefinitions { repeated NamedSecurityDefinitionsItem additional_properties = 1; }
message NamedSecurityDefinitionsItem { string name = 1; SecurityDefinitionsItem value = 2; }
message SecurityDefinitionsItem { oneof oneof { ApiKeySecurity api_key_security = 2; } }
message ApiKeySecurity {
  string type = 1;
  string name = 2;
  string in = 3;
  string description = 4;
  repeated NamedAny vendor_extension = 5;
}
message SecurityRequirement { repeated NamedStringArray additional_properties = 1; }
message NamedStringArray { string name = 1; StringArray value = 2; }
message StringArray { repeated string value = 1; }
"""

GVK_CONFIGMAP = [{"group": "", "kind": "ConfigMap", "version": "v1"}]
GVK_DEPLOYMENT = [{"group": "apps", "kind": "Deployment", "version": "v1"}]
META = "io.k8s.apimachinery.pkg.apis.meta.v1"


def _query(name: str, description: str = "") -> dict[str, Any]:
    return {"description": description, "in": "query", "name": name, "type": "string", "uniqueItems": True}


SWAGGER: dict[str, Any] = {
    "swagger": "2.0",
    "info": {"title": "Kubernetes", "version": "v1.31.0"},
    "paths": {
        "/api/v1/namespaces/{namespace}/configmaps": {
            "post": {
                "consumes": ["*/*"],
                "produces": ["application/json", "application/yaml"],
                "schemes": ["https"],
                "tags": ["core_v1"],
                "description": "create a ConfigMap",
                "operationId": "createCoreV1NamespacedConfigMap",
                "parameters": [
                    {"in": "body", "name": "body", "required": True,
                     "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}},
                    _query("dryRun", "When present, modifications are not persisted."),
                    _query("fieldManager"),
                    _query("fieldValidation", "Ignore, Warn or Strict."),
                    {"$ref": "#/parameters/pretty-tJGM1-ng"},
                ],
                "responses": {
                    "200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}},
                    "201": {"description": "Created",
                            "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}},
                    "401": {"description": "Unauthorized"},
                    "default": {"$ref": "#/responses/status"},
                },
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": GVK_CONFIGMAP[0],
            },
            "parameters": [
                {"description": "object name and auth scope", "in": "path", "name": "namespace",
                 "required": True, "type": "string", "uniqueItems": True},
                {"in": "header", "name": "X-Trace", "type": "string"},
                _query("pretty"),
            ],
        },
        "x-paths-note": "document order",
    },
    "definitions": {
        "io.k8s.api.core.v1.ConfigMap": {
            "description": "ConfigMap holds configuration data for pods to consume.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "binaryData": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
                "immutable": {"type": "boolean"},
                "kind": {"type": "string"},
                "metadata": {"$ref": f"#/definitions/{META}.ObjectMeta", "default": {}},
            },
            "x-kubernetes-group-version-kind": GVK_CONFIGMAP,
        },
        "io.k8s.api.apps.v1.DeploymentSpec": {
            "type": "object",
            "required": ["selector", "template"],
            "properties": {
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 1e6},
                "strategy": {"type": "string", "enum": ["Recreate", "RollingUpdate"], "default": "RollingUpdate"},
                "containers": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container", "default": {}},
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                "strict": {"type": "object", "additionalProperties": False, "maxProperties": 3},
                "anything": {},
            },
            "x-kubernetes-group-version-kind": GVK_DEPLOYMENT,
        },
        "io.k8s.api.core.v1.Container": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "maxLength": 253, "pattern": "^[a-z]"}},
        },
    },
    "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                                            "description": "Bearer Token authentication"}},
    "security": [{"BearerToken": []}],
    "x-document-extension": {"nested": [1, 2.5, True, None]},
}


@pytest.fixture(scope="module")
def openapi_v2(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    """The generated message classes of the openapi.v2 subset."""
    workdir = tmp_path_factory.mktemp("openapi_v2")
    (workdir / "openapi_v2_subset.proto").write_text(OPENAPI_V2_SUBSET)
    well_known = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(["protoc", f"-I{workdir}", f"-I{well_known}", f"--python_out={workdir}",
                          str(workdir / "openapi_v2_subset.proto")])
    assert status == 0, "protoc failed to compile the openapi.v2 subset"
    spec = importlib.util.spec_from_file_location("openapi_v2_subset_pb2", workdir / "openapi_v2_subset_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _decode(openapi_v2: types.ModuleType, doc: dict[str, Any]) -> Any:
    document = openapi_v2.Document()
    document.ParseFromString(encode_swagger(doc))
    return document


@pytest.fixture(scope="module")
def document(openapi_v2: types.ModuleType) -> Any:
    return _decode(openapi_v2, SWAGGER)


def _named(entries: Any) -> dict[str, Any]:
    """Repeated Named* messages as a dict, asserting names are unique."""
    result = {entry.name: entry.value for entry in entries}
    assert len(result) == len(entries)
    return result


def _extensions(entries: Any) -> dict[str, Any]:
    """Vendor extensions with their YAML text parsed back into values."""
    return {name: yaml.safe_load(value.yaml) for name, value in _named(entries).items()}


def _unknown_field_paths(message: Message, path: str = "") -> list[str]:
    found = [path or "<root>"] if len(unknown_fields.UnknownFieldSet(message)) else []
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        children = value if field.is_repeated else [value]
        for index, child in enumerate(children):
            found += _unknown_field_paths(child, f"{path}.{field.name}[{index}]")
    return found


def test_every_decoded_message_has_only_known_fields(document: Any) -> None:
    assert _unknown_field_paths(document) == []


def test_document_header_and_info_are_decoded(document: Any) -> None:
    assert document.swagger == "2.0"
    assert document.info.title == "Kubernetes"
    assert document.info.version == "v1.31.0"
    assert _extensions(document.vendor_extension) == {"x-document-extension": {"nested": [1, 2.5, True, None]}}


def test_definitions_keep_document_order(document: Any) -> None:
    assert list(_named(document.definitions.additional_properties)) == list(SWAGGER["definitions"])


def test_definition_has_type_description_and_properties(document: Any) -> None:
    configmap = _named(document.definitions.additional_properties)["io.k8s.api.core.v1.ConfigMap"]
    assert list(configmap.type.value) == ["object"]
    assert configmap.description.startswith("ConfigMap holds")
    properties = _named(configmap.properties.additional_properties)
    assert list(properties) == ["apiVersion", "binaryData", "data", "immutable", "kind", "metadata"]
    assert list(properties["immutable"].type.value) == ["boolean"]


def test_nested_ref_is_carried_in_the_ref_field(document: Any) -> None:
    configmap = _named(document.definitions.additional_properties)["io.k8s.api.core.v1.ConfigMap"]
    metadata = _named(configmap.properties.additional_properties)["metadata"]
    assert metadata._ref == f"#/definitions/{META}.ObjectMeta"
    assert not metadata.HasField("type")
    assert yaml.safe_load(metadata.default.yaml) == {}


def test_additional_properties_schema_is_decoded(document: Any) -> None:
    configmap = _named(document.definitions.additional_properties)["io.k8s.api.core.v1.ConfigMap"]
    binary_data = _named(configmap.properties.additional_properties)["binaryData"]
    assert binary_data.additional_properties.WhichOneof("oneof") == "schema"
    assert list(binary_data.additional_properties.schema.type.value) == ["string"]
    assert binary_data.additional_properties.schema.format == "byte"


def test_additional_properties_false_is_an_explicit_boolean(document: Any) -> None:
    spec = _named(document.definitions.additional_properties)["io.k8s.api.apps.v1.DeploymentSpec"]
    strict = _named(spec.properties.additional_properties)["strict"]
    assert strict.HasField("additional_properties")
    assert strict.additional_properties.WhichOneof("oneof") == "boolean"
    assert strict.additional_properties.boolean is False
    assert strict.max_properties == 3


def test_required_items_and_nested_items_are_decoded(document: Any) -> None:
    spec = _named(document.definitions.additional_properties)["io.k8s.api.apps.v1.DeploymentSpec"]
    assert list(spec.required) == ["selector", "template"]
    properties = _named(spec.properties.additional_properties)
    containers = properties["containers"]
    assert list(containers.type.value) == ["array"]
    assert [item._ref for item in containers.items.schema] == ["#/definitions/io.k8s.api.core.v1.Container"]
    matrix = properties["matrix"]
    (row,) = matrix.items.schema
    (cell,) = row.items.schema
    assert list(row.type.value) == ["array"]
    assert list(cell.type.value) == ["number"]


def test_empty_schema_is_still_present(document: Any) -> None:
    spec = _named(document.definitions.additional_properties)["io.k8s.api.apps.v1.DeploymentSpec"]
    properties = _named(spec.properties.additional_properties)
    assert "anything" in properties
    assert properties["anything"].ByteSize() == 0


def test_numeric_limits_enum_and_default_are_decoded(document: Any) -> None:
    definitions = _named(document.definitions.additional_properties)
    properties = _named(definitions["io.k8s.api.apps.v1.DeploymentSpec"].properties.additional_properties)
    replicas = properties["replicas"]
    assert replicas.format == "int32"
    assert replicas.maximum == 1e6
    assert replicas.minimum == 0
    strategy = properties["strategy"]
    assert [yaml.safe_load(value.yaml) for value in strategy.enum] == ["Recreate", "RollingUpdate"]
    assert yaml.safe_load(strategy.default.yaml) == "RollingUpdate"
    name = _named(definitions["io.k8s.api.core.v1.Container"].properties.additional_properties)["name"]
    assert name.max_length == 253
    assert name.pattern == "^[a-z]"


def test_group_version_kind_extension_reads_back_as_a_list_of_maps(document: Any) -> None:
    definitions = _named(document.definitions.additional_properties)
    assert _extensions(definitions["io.k8s.api.core.v1.ConfigMap"].vendor_extension) == {
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}]}
    assert _extensions(definitions["io.k8s.api.apps.v1.DeploymentSpec"].vendor_extension) == {
        "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]}


def test_patch_and_list_extensions_read_back_on_the_property(document: Any) -> None:
    spec = _named(document.definitions.additional_properties)["io.k8s.api.apps.v1.DeploymentSpec"]
    containers = _named(spec.properties.additional_properties)["containers"]
    assert _extensions(containers.vendor_extension) == {
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-list-type": "map",
        "x-kubernetes-patch-merge-key": "name",
        "x-kubernetes-patch-strategy": "merge",
    }


def test_paths_hold_path_items_and_their_extensions(document: Any) -> None:
    assert list(_named(document.paths.path)) == ["/api/v1/namespaces/{namespace}/configmaps"]
    assert _extensions(document.paths.vendor_extension) == {"x-paths-note": "document order"}


def test_post_operation_is_decoded_with_its_extensions(document: Any) -> None:
    item = _named(document.paths.path)["/api/v1/namespaces/{namespace}/configmaps"]
    assert item.HasField("post")
    assert not item.HasField("get")
    post = item.post
    assert post.operation_id == "createCoreV1NamespacedConfigMap"
    assert post.description == "create a ConfigMap"
    assert list(post.consumes) == ["*/*"]
    assert list(post.produces) == ["application/json", "application/yaml"]
    assert list(post.schemes) == ["https"]
    assert list(post.tags) == ["core_v1"]
    assert _extensions(post.vendor_extension) == {
        "x-kubernetes-action": "post",
        "x-kubernetes-group-version-kind": {"group": "", "kind": "ConfigMap", "version": "v1"},
    }


def test_post_operation_has_a_body_parameter_with_a_schema_ref(document: Any) -> None:
    post = _named(document.paths.path)["/api/v1/namespaces/{namespace}/configmaps"].post
    first = post.parameters[0]
    assert first.WhichOneof("oneof") == "parameter"
    assert first.parameter.WhichOneof("oneof") == "body_parameter"
    body = first.parameter.body_parameter
    assert (body.name, getattr(body, "in"), body.required) == ("body", "body", True)
    assert body.schema._ref == "#/definitions/io.k8s.api.core.v1.ConfigMap"


def test_post_operation_lists_field_validation_as_a_query_parameter(document: Any) -> None:
    post = _named(document.paths.path)["/api/v1/namespaces/{namespace}/configmaps"].post
    queries = {}
    for item in post.parameters:
        parameter = item.parameter.non_body_parameter
        if parameter.WhichOneof("oneof") == "query_parameter_sub_schema":
            queries[parameter.query_parameter_sub_schema.name] = parameter.query_parameter_sub_schema
    assert list(queries) == ["dryRun", "fieldManager", "fieldValidation"]
    field_validation = queries["fieldValidation"]
    assert getattr(field_validation, "in") == "query"
    assert field_validation.type == "string"
    assert field_validation.unique_items is True
    assert field_validation.description == "Ignore, Warn or Strict."


def test_parameter_ref_becomes_a_json_reference(document: Any) -> None:
    post = _named(document.paths.path)["/api/v1/namespaces/{namespace}/configmaps"].post
    last = post.parameters[-1]
    assert last.WhichOneof("oneof") == "json_reference"
    assert last.json_reference._ref == "#/parameters/pretty-tJGM1-ng"


def test_path_level_parameters_use_the_sub_schema_for_their_location(document: Any) -> None:
    item = _named(document.paths.path)["/api/v1/namespaces/{namespace}/configmaps"]
    kinds = [parameter.parameter.non_body_parameter.WhichOneof("oneof") for parameter in item.parameters]
    assert kinds == ["path_parameter_sub_schema", "header_parameter_sub_schema", "query_parameter_sub_schema"]
    namespace = item.parameters[0].parameter.non_body_parameter.path_parameter_sub_schema
    assert (namespace.name, namespace.required, namespace.type, namespace.unique_items) == (
        "namespace", True, "string", True)
    assert namespace.description == "object name and auth scope"
    header = item.parameters[1].parameter.non_body_parameter.header_parameter_sub_schema
    assert (header.name, header.type) == ("X-Trace", "string")


def test_responses_hold_schemas_and_references(document: Any) -> None:
    post = _named(document.paths.path)["/api/v1/namespaces/{namespace}/configmaps"].post
    responses = _named(post.responses.response_code)
    assert list(responses) == ["200", "201", "401", "default"]
    assert responses["201"].response.description == "Created"
    assert responses["201"].response.schema.schema._ref == "#/definitions/io.k8s.api.core.v1.ConfigMap"
    assert responses["401"].response.description == "Unauthorized"
    assert not responses["401"].response.HasField("schema")
    assert responses["default"].WhichOneof("oneof") == "json_reference"
    assert responses["default"].json_reference._ref == "#/responses/status"


def test_security_definitions_and_requirements_are_decoded(document: Any) -> None:
    bearer = _named(document.security_definitions.additional_properties)["BearerToken"]
    assert bearer.WhichOneof("oneof") == "api_key_security"
    assert (bearer.api_key_security.type, bearer.api_key_security.name) == ("apiKey", "authorization")
    (requirement,) = document.security
    assert {name: list(scopes.value) for name, scopes in _named(requirement.additional_properties).items()} == {
        "BearerToken": []}


def test_awkward_yaml_values_read_back_unchanged(openapi_v2: types.ModuleType) -> None:
    values = ["line\u2028break", "nel\x85", "tab\tquote\"back\\slash", "\U0001f600 emoji", "déjà vu",
              "yes", "null", "123", "a: b", "- item", "#comment", "", 2**62, -7, 0.1, False, None,
              {"nested": {"list": [{"k": "v"}]}}]
    doc = {"definitions": {"Odd": {"type": "string", "enum": values, "x-values": values}}}
    odd = _named(_decode(openapi_v2, doc).definitions.additional_properties)["Odd"]
    assert [yaml.safe_load(value.yaml) for value in odd.enum] == values
    assert _extensions(odd.vendor_extension) == {"x-values": values}


def test_scalars_with_zero_values_are_left_out(openapi_v2: types.ModuleType) -> None:
    doc = {"swagger": "2.0", "definitions": {
        "Zero": {"description": "", "minimum": 0, "maxLength": 0, "uniqueItems": False, "required": []}}}
    encoded = encode_swagger(doc)
    zero = _named(_decode(openapi_v2, doc).definitions.additional_properties)["Zero"]
    assert zero.ByteSize() == 0
    assert len(encoded) == len(encode_swagger({"swagger": "2.0", "definitions": {"Zero": {}}}))


def test_negative_and_large_numbers_are_encoded(openapi_v2: types.ModuleType) -> None:
    doc = {"definitions": {"N": {"minimum": -2.5, "maximum": math.inf, "maxLength": 2**40, "minLength": -1}}}
    n = _named(_decode(openapi_v2, doc).definitions.additional_properties)["N"]
    assert (n.minimum, n.maximum, n.max_length, n.min_length) == (-2.5, math.inf, 2**40, -1)


def test_values_of_the_wrong_json_type_are_dropped(openapi_v2: types.ModuleType) -> None:
    doc = {"info": {"title": 7, "version": "v1"},
           "definitions": {"W": {"description": ["not", "a", "string"], "maxLength": "9", "required": True,
                                 "additionalProperties": "yes", "type": ["string", "null"]}}}
    document = _decode(openapi_v2, doc)
    assert (document.info.title, document.info.version) == ("", "v1")
    w = _named(document.definitions.additional_properties)["W"]
    assert (w.description, w.max_length, list(w.required)) == ("", 0, [])
    assert not w.HasField("additional_properties")
    assert list(w.type.value) == ["string", "null"]
    assert _unknown_field_paths(document) == []


def test_empty_document_encodes_to_nothing() -> None:
    assert encode_swagger({}) == b""


APISERVER = Path(__file__).resolve().parents[1]
SERVER_PROTO = APISERVER / "kcp_apiserver" / "endpoints" / "openapi_v2.proto"


def test_the_committed_generated_classes_are_what_make_proto_writes(tmp_path: Path) -> None:
    """The server imports openapi_v2_pb2 without protoc at install time, so the committed file must be
    exactly what `make proto` makes from the committed .proto."""
    assert str(SERVER_PROTO.relative_to(APISERVER.parents[1])) in (APISERVER.parents[1] / "Makefile").read_text()
    well_known = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(["protoc", f"-I{APISERVER}", f"-I{well_known}", f"--python_out={tmp_path}",
                          f"--pyi_out={tmp_path}", str(SERVER_PROTO)])
    assert status == 0, "protoc failed to compile openapi_v2.proto"
    for generated in ("openapi_v2_pb2.py", "openapi_v2_pb2.pyi"):
        fresh = (tmp_path / "kcp_apiserver" / "endpoints" / generated).read_text()
        assert fresh == (SERVER_PROTO.parent / generated).read_text(), f"{generated} is stale: run `make proto`"


def test_the_servers_messages_agree_with_the_independent_subset(openapi_v2: types.ModuleType) -> None:
    """Every field the subset declares has the same number, type and cardinality in the server's .proto."""
    from kcp_apiserver.endpoints import openapi_v2_pb2 as server

    compared = 0
    for name, subset_message in openapi_v2.DESCRIPTOR.message_types_by_name.items():
        server_message = server.DESCRIPTOR.message_types_by_name[name]
        for field in subset_message.fields:
            mine = server_message.fields_by_number[field.number]
            assert (mine.name, mine.type, mine.is_repeated) == (field.name, field.type, field.is_repeated), \
                f"{name}.{field.name}"
            if field.message_type is not None:
                assert mine.message_type.name == field.message_type.name, f"{name}.{field.name}"
            compared += 1
    assert compared > 200
