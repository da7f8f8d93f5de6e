"""CRD validation and defaulting: kube's rules, field paths, reasons and messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcp_apiserver.apiextensions.crdschemavalidation import schema_uses_cel
from kcp_apiserver.apiextensions.defaults import default_crd, stored_versions_after
from kcp_apiserver.apiextensions.validation import validate_crd
from kcp_apiserver.apimachinery.status import Cause

Obj = dict[str, Any]

DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")

SPEC_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "selector": {"type": "string"},
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"],
                              "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}},
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}},
        },
    },
}


def make_crd(**spec_over: Any) -> Obj:
    crd: Obj = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": copy.deepcopy(SPEC_SCHEMA)}}],
        },
    }
    crd["spec"].update(spec_over)
    default_crd(crd)
    return crd


def schema_of(crd: Obj, version: int = 0) -> Obj:
    return crd["spec"]["versions"][version]["schema"]["openAPIV3Schema"]


def fields(causes: list[Cause]) -> list[str]:
    return [c.field for c in causes]


def messages(causes: list[Cause], field: str) -> list[str]:
    return [c.message for c in causes if c.field == field]


def one(causes: list[Cause], field: str) -> Cause:
    found = [c for c in causes if c.field == field]
    assert len(found) == 1, f"expected one cause at {field}, got {causes}"
    return found[0]


# -- valid CRDs --------------------------------------------------------------------------------

def test_namespaced_crd_is_valid() -> None:
    assert validate_crd(make_crd()) == []


def test_cluster_scoped_crd_is_valid() -> None:
    crd = make_crd(scope="Cluster")
    crd["metadata"]["name"] = "widgets.example.com"
    assert validate_crd(crd) == []


def test_multi_version_with_subresources_and_columns_is_valid() -> None:
    v1beta1 = {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
               "deprecationWarning": "example.com/v1beta1 Widget is deprecated; use v1",
               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    v1 = {"name": "v1", "served": True, "storage": True,
          "schema": {"openAPIV3Schema": copy.deepcopy(SPEC_SCHEMA)},
          "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                   "statusReplicasPath": ".status.replicas",
                                                   "labelSelectorPath": ".status.selector"}},
          "additionalPrinterColumns": [
              {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
              {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
              {"name": "Selector", "type": "string", "format": "password", "priority": 1,
               "jsonPath": ".status.selector", "description": "which pods"}],
          "selectableFields": [{"jsonPath": ".spec.selector"}]}
    crd = make_crd(versions=[v1beta1, v1])
    assert validate_crd(crd) == []


def test_webhook_conversion_is_valid() -> None:
    crd = make_crd(conversion={"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "system", "name": "converter", "path": "/convert"}}}})
    assert validate_crd(crd) == []
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443


# -- defaults ----------------------------------------------------------------------------------

def test_default_crd_applies_kube_defaults() -> None:
    crd: Obj = {"metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True},
                                      {"name": "v2"}]}}
    default_crd(crd)
    spec = crd["spec"]
    assert spec["names"]["singular"] == "widget"
    assert spec["names"]["listKind"] == "WidgetList"
    assert spec["conversion"] == {"strategy": "None"}
    assert spec["versions"][1]["served"] is False and spec["versions"][1]["storage"] is False
    assert crd["status"]["storedVersions"] == ["v1"]


def test_default_crd_keeps_what_is_set() -> None:
    crd: Obj = {"spec": {"names": {"plural": "widgets", "kind": "Widget", "singular": "wid", "listKind": "Widgets"},
                         "conversion": {"strategy": "Webhook"}, "versions": []},
                "status": {"storedVersions": ["v0"]}}
    default_crd(crd)
    assert crd["spec"]["names"]["singular"] == "wid"
    assert crd["spec"]["names"]["listKind"] == "Widgets"
    assert crd["spec"]["conversion"] == {"strategy": "Webhook"}
    assert crd["status"]["storedVersions"] == ["v0"]


def test_missing_list_kind_without_defaults_is_required() -> None:
    crd = make_crd()
    del crd["spec"]["names"]["listKind"]
    assert one(validate_crd(crd), "spec.names.listKind").message == "Required value"


def test_stored_versions_after() -> None:
    crd = make_crd()
    assert stored_versions_after(crd, None) == ["v1"]
    old = copy.deepcopy(crd)
    old["status"] = {"storedVersions": ["v1beta1", "v1"]}
    crd["spec"]["versions"] = [{"name": "v1", "served": True, "storage": False},
                               {"name": "v2", "served": True, "storage": True}]
    assert stored_versions_after(crd, old) == ["v1beta1", "v1", "v2"]


# -- metadata, group, scope, names ----------------------------------------------------------------

def test_name_must_be_plural_dot_group() -> None:
    crd = make_crd()
    crd["metadata"]["name"] = "gadgets.example.com"
    cause = one(validate_crd(crd), "metadata.name")
    assert cause.reason == "FieldValueInvalid"
    assert cause.message == 'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group'


@pytest.mark.parametrize("group, message", [
    ("", "Required value"),
    ("example", 'Invalid value: "example": should be a domain with at least one dot'),
    ("Example.com", 'Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of'),
])
def test_group(group: str, message: str) -> None:
    crd = make_crd(group=group)
    crd["metadata"]["name"] = f"widgets.{group}"
    assert one(validate_crd(crd), "spec.group").message.startswith(message)


@pytest.mark.parametrize("scope, reason, message", [
    ("", "FieldValueRequired", "Required value"),
    ("Global", "FieldValueNotSupported", 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"'),
])
def test_scope(scope: str, reason: str, message: str) -> None:
    cause = one(validate_crd(make_crd(scope=scope)), "spec.scope")
    assert (cause.reason, cause.message) == (reason, message)


def test_plural_must_be_a_lowercase_label() -> None:
    crd = make_crd()
    crd["spec"]["names"]["plural"] = "Widgets"
    crd["metadata"]["name"] = "Widgets.example.com"
    assert one(validate_crd(crd), "spec.names.plural").message == f'Invalid value: "Widgets": {DNS1035_MSG}'


def test_kind_may_have_mixed_case_but_must_be_a_label() -> None:
    crd = make_crd()
    crd["spec"]["names"]["kind"] = "Wid_get"
    assert one(validate_crd(crd), "spec.names.kind").message == (
        f'Invalid value: "Wid_get": may have mixed case, but should otherwise match: {DNS1035_MSG}')


def test_kind_and_list_kind_may_not_be_the_same() -> None:
    crd = make_crd()
    crd["spec"]["names"]["listKind"] = "Widget"
    assert one(validate_crd(crd), "spec.names.listKind").message == (
        'Invalid value: "Widget": kind and listKind may not be the same')


def test_short_names_and_categories_are_labels() -> None:
    crd = make_crd()
    crd["spec"]["names"]["shortNames"] = ["ok", "Not_OK"]
    crd["spec"]["names"]["categories"] = ["9lives"]
    causes = validate_crd(crd)
    assert one(causes, "spec.names.shortNames[1]").reason == "FieldValueInvalid"
    assert one(causes, "spec.names.categories[0]").reason == "FieldValueInvalid"


def test_missing_names_are_required() -> None:
    crd = make_crd(names={})
    crd["metadata"]["name"] = ".example.com"
    causes = validate_crd(crd)
    for key in ("plural", "singular", "kind", "listKind"):
        assert one(causes, f"spec.names.{key}").reason == "FieldValueRequired"


# -- versions ----------------------------------------------------------------------------------

def test_exactly_one_storage_version() -> None:
    crd = make_crd()
    crd["spec"]["versions"].append({"name": "v2", "served": True, "storage": True,
                                    "schema": {"openAPIV3Schema": {"type": "object"}}})
    cause = one(validate_crd(crd), "spec.versions")
    assert cause.message.endswith("must have exactly one version marked as storage version")


def test_no_storage_version() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["storage"] = False
    causes = validate_crd(crd)
    assert one(causes, "spec.versions").message.endswith("must have exactly one version marked as storage version")
    assert one(causes, "status.storedVersions").message == "Invalid value: []: must have at least one stored version"


def test_no_versions() -> None:
    crd = make_crd(versions=[])
    assert "spec.versions" in fields(validate_crd(crd))


def test_version_names_are_unique_labels() -> None:
    crd = make_crd()
    crd["spec"]["versions"].append({"name": "v1", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": {"type": "object"}}})
    assert one(validate_crd(crd), "spec.versions").message.endswith("must contain unique version names")


def test_bad_first_version_name_is_reported_twice_like_kube() -> None:
    """kube copies versions[0].name into the internal spec.version and validates both."""
    crd = make_crd()
    crd["spec"]["versions"][0]["name"] = "V1"
    causes = validate_crd(crd)
    assert one(causes, "spec.versions[0].name").message == f'Invalid value: "V1": {DNS1035_MSG}'
    assert one(causes, "spec.version").reason == "FieldValueInvalid"


def test_schema_is_required_in_v1() -> None:
    crd = make_crd()
    del crd["spec"]["versions"][0]["schema"]
    cause = one(validate_crd(crd), "spec.versions[0].schema.openAPIV3Schema")
    assert (cause.reason, cause.message) == ("FieldValueRequired", "Required value")


def test_deprecation_warning_needs_deprecated() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["deprecationWarning"] = "old"
    assert one(validate_crd(crd), "spec.versions[0].deprecationWarning").message == (
        'Invalid value: "old": can only be set for deprecated versions')


def test_deprecation_warning_must_be_printable() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0].update(deprecated=True, deprecationWarning="é\tx")
    assert one(validate_crd(crd), "spec.versions[0].deprecationWarning").message.endswith(
        "non-printable character found at index 2")


# -- subresources and printer columns ------------------------------------------------------------

def test_scale_paths() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["subresources"] = {"status": {}, "scale": {
        "specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas",
        "labelSelectorPath": ".metadata.labels"}}
    causes = validate_crd(crd)
    assert one(causes, "spec.subresources.scale.specReplicasPath").message == (
        'Invalid value: ".status.replicas": should be a json path under .spec')
    assert one(causes, "spec.subresources.scale.statusReplicasPath").message == (
        'Invalid value: "status.replicas": must be a simple json path starting with .')
    assert one(causes, "spec.subresources.scale.labelSelectorPath").message == (
        'Invalid value: ".metadata.labels": should be a json path under either .spec or .status')


def test_scale_paths_are_required() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["subresources"] = {"scale": {}}
    causes = validate_crd(crd)
    assert one(causes, "spec.subresources.scale.specReplicasPath").reason == "FieldValueRequired"
    assert one(causes, "spec.subresources.scale.statusReplicasPath").reason == "FieldValueRequired"


def test_per_version_subresources_keep_version_paths() -> None:
    crd = make_crd()
    crd["spec"]["versions"].append({"name": "v2", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": copy.deepcopy(SPEC_SCHEMA)},
                                    "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                               "statusReplicasPath": ".replicas"}}})
    assert "spec.versions[1].subresources.scale.statusReplicasPath" in fields(validate_crd(crd))


def test_status_subresource_restricts_the_root_schema() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["subresources"] = {"status": {}}
    schema_of(crd)["anyOf"] = [{"required": ["spec"]}]
    cause = one(validate_crd(crd), "spec.validation.openAPIV3Schema")
    assert cause.message.endswith("fields are allowed at the root of the schema if the status subresource is enabled")


@pytest.mark.parametrize("column, field, message", [
    ({"type": "string", "jsonPath": ".a"}, "name", "Required value"),
    ({"name": "A", "jsonPath": ".a"}, "type", "Required value: must be one of boolean,date,integer,number,string"),
    ({"name": "A", "type": "float", "jsonPath": ".a"}, "type",
     'Invalid value: "float": must be one of boolean,date,integer,number,string'),
    ({"name": "A", "type": "string", "format": "uuid", "jsonPath": ".a"}, "format",
     'Invalid value: "uuid": must be one of byte,date,date-time,double,float,int32,int64,password'),
    ({"name": "A", "type": "string"}, "JSONPath", "Required value"),
    ({"name": "A", "type": "string", "jsonPath": "spec.a"}, "JSONPath",
     'Invalid value: "spec.a": must be a simple json path starting with .'),
])
def test_printer_columns(column: Obj, field: str, message: str) -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [column]
    assert one(validate_crd(crd), f"spec.additionalPrinterColumns[0].{field}").message == message


def test_selectable_fields() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["selectableFields"] = [
        {"jsonPath": ".spec.selector"}, {"jsonPath": ".spec.labels"}, {"jsonPath": ".spec.nope"},
        {"jsonPath": ".spec.selector"}]
    causes = validate_crd(crd)
    assert one(causes, "spec.selectableFields[1].jsonPath").message.endswith(
        "must point to a field of type string, boolean or integer. Enum string fields and strings with formats "
        "are allowed.")
    assert one(causes, "spec.selectableFields[2].jsonPath").message.startswith(
        'Invalid value: ".spec.nope": is an invalid path')
    assert one(causes, "spec.selectableFields[3].jsonPath").reason == "FieldValueDuplicate"


# -- structural schemas ----------------------------------------------------------------------------

def test_single_version_schema_errors_use_kubes_hoisted_path() -> None:
    crd = make_crd()
    del schema_of(crd)["properties"]["spec"]["type"]
    cause = one(validate_crd(crd), "spec.validation.openAPIV3Schema.properties[spec].type")
    assert (cause.reason, cause.message) == ("FieldValueRequired",
                                             "Required value: must not be empty for specified object fields")


def test_distinct_version_schemas_keep_version_paths() -> None:
    crd = make_crd()
    other = copy.deepcopy(SPEC_SCHEMA)
    del other["properties"]["spec"]["type"]
    crd["spec"]["versions"].insert(0, {"name": "v1beta1", "served": True, "storage": False,
                                       "schema": {"openAPIV3Schema": other}})
    causes = validate_crd(crd)
    assert one(causes, "spec.versions[0].schema.openAPIV3Schema.properties[spec].type").message == (
        "Required value: must not be empty for specified object fields")
    assert not [c for c in causes if c.field.startswith("spec.versions[1]")]


@pytest.mark.parametrize("mutate, field, message", [
    (lambda s: s.update(type="array", items={"type": "string"}), "type",
     'Invalid value: "array": must be object at the root'),
    (lambda s: s.pop("type"), "type", "Required value: must not be empty at the root"),
    (lambda s: s["properties"]["spec"]["properties"].update(list={"type": "array"}),
     "properties[spec].properties[list].items", "Required value: must be specified"),
    (lambda s: s["properties"]["spec"]["properties"].update(list={"type": "array", "items": {}}),
     "properties[spec].properties[list].items.type", "Required value: must not be empty for specified array items"),
    (lambda s: s.update(additionalProperties={"type": "string"}), "additionalProperties",
     "Forbidden: must not be used at the root"),
    (lambda s: s["properties"]["metadata"].update(properties={"labels": {"type": "object"}}),
     "properties[metadata]",
     "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"),
    (lambda s: s["properties"]["kind"].update(type="integer"), "properties[kind].type",
     'Invalid value: "integer": must be string'),
    (lambda s: s["properties"]["spec"]["properties"]["template"].update(type="array", items={"type": "string"}),
     "properties[spec].properties[template].type",
     'Invalid value: "array": must be object if x-kubernetes-embedded-resource is true'),
    (lambda s: s["properties"]["spec"]["properties"].update(
        emb={"type": "object", "x-kubernetes-embedded-resource": True}),
     "properties[spec].properties[emb].properties",
     ("Required value: must not be empty if x-kubernetes-embedded-resource is true without "
     "x-kubernetes-preserve-unknown-fields")),
    (lambda s: s["properties"]["spec"].update(allOf=[{"type": "object"}]), "properties[spec].allOf[0].type",
     "Forbidden: must be empty to be structural"),
    (lambda s: s["properties"]["spec"].update(anyOf=[{"properties": {"metadata": {}}}]),
     "properties[spec].anyOf[0].properties[metadata]", "Forbidden: must not be specified in a nested context"),
    (lambda s: s["properties"]["spec"].update(oneOf=[{"default": 1}]), "properties[spec].oneOf[0].default",
     "Forbidden: must be undefined to be structural"),
    (lambda s: s["properties"]["spec"].update(**{"not": {"additionalProperties": False}}),
     "properties[spec].not.additionalProperties", "Forbidden: must be undefined to be structural"),
    (lambda s: s.update(anyOf=[{"properties": {"extra": {"minimum": 1}}}]), "properties[extra]",
     "Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[extra]"),
    (lambda s: s["properties"]["spec"]["properties"]["selector"].update(pattern="^(?=a)"),
     "properties[spec].properties[selector].pattern",
     ('Invalid value: "^(?=a)": must be a valid regular expression, but isn\'t: error parsing regexp: invalid or '
     "unsupported Perl syntax: `(?=`")),
])
def test_non_structural_schemas(mutate: Any, field: str, message: str) -> None:
    crd = make_crd()
    mutate(schema_of(crd))
    assert message in messages(validate_crd(crd), f"spec.validation.openAPIV3Schema.{field}")


@pytest.mark.parametrize("pattern", [r"^a\z", r"^\p{L}+$", r"\Qa.b\E", "a(?i)b"])
def test_patterns_re2_accepts_are_not_refused(pattern: str) -> None:
    crd = make_crd()
    selector = schema_of(crd)["properties"]["spec"]["properties"]["selector"]
    selector.update(pattern=pattern)
    assert validate_crd(crd) == []


def test_pattern_errors_both_engines_share_are_reported() -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["properties"]["selector"]["pattern"] = "(abc"
    assert one(validate_crd(crd), "spec.validation.openAPIV3Schema.properties[spec].properties[selector].pattern") \
        .message == ('Invalid value: "(abc": must be a valid regular expression, but isn\'t: error parsing regexp: '
                     "missing closing ): `(abc`")


def test_int_or_string_any_of_is_structural() -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["properties"]["both"] = {
        "x-kubernetes-int-or-string": True,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9a-z]+$"}]}
    assert validate_crd(crd) == []


def test_structural_errors_are_sorted_like_kube() -> None:
    crd = make_crd()
    props = schema_of(crd)["properties"]["spec"]["properties"]
    props["zeta"] = {}
    props["alpha"] = {}
    got = fields(validate_crd(crd))
    prefix = "spec.validation.openAPIV3Schema.properties[spec].properties"
    assert got == [f"{prefix}[alpha].type", f"{prefix}[zeta].type"]


@pytest.mark.parametrize("mutate, field, reason, message", [
    (lambda s: s["properties"]["spec"].update(additionalProperties={"type": "string"}),
     "properties[spec].additionalProperties", "FieldValueForbidden",
     "Forbidden: additionalProperties and properties are mutual exclusive"),
    (lambda s: s["properties"]["spec"].update(additionalProperties=False),
     "properties[spec].additionalProperties", "FieldValueForbidden",
     "Forbidden: additionalProperties and properties are mutual exclusive"),
    (lambda s: s["properties"]["spec"]["properties"]["tags"].update(uniqueItems=True),
     "properties[spec].properties[tags].uniqueItems", "FieldValueForbidden",
     "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
    (lambda s: s["properties"]["spec"]["properties"].update(ref={"$ref": "#/definitions/x"}),
     "properties[spec].properties[ref].$ref", "FieldValueForbidden", "Forbidden: $ref is not supported"),
    (lambda s: s["properties"]["spec"]["properties"]["selector"].update(type="text"),
     "properties[spec].properties[selector].type", "FieldValueNotSupported",
     'Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string"'),
    (lambda s: s["properties"]["metadata"].update(default={"name": "x"}), "properties[metadata].default",
     "FieldValueForbidden", "Forbidden: must not be set in top-level metadata"),
    (lambda s: s["properties"]["spec"]["properties"]["tags"].update(**{"x-kubernetes-list-map-keys": ["a"]}),
     "properties[spec].properties[tags].x-kubernetes-list-type", "FieldValueInvalid",
     'Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty'),
    (lambda s: s["properties"]["spec"]["properties"]["ports"].update(**{"x-kubernetes-list-map-keys": ["nope"]}),
     "properties[spec].properties[ports].x-kubernetes-list-map-keys", "FieldValueInvalid",
     'Invalid value: ["nope"]: entries must all be names of item properties'),
    (lambda s: s["properties"]["spec"]["properties"]["ports"].update(**{"x-kubernetes-list-map-keys": ["port"]}),
     "properties[spec].properties[ports].items.properties[port].default", "FieldValueRequired",
     ("Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required "
     "property")),
    (lambda s: s["properties"]["spec"]["properties"]["labels"].update(**{"x-kubernetes-list-type": "atomic"}),
     "properties[spec].properties[labels].type", "FieldValueInvalid",
     'Invalid value: "object": must be array if x-kubernetes-list-type is specified'),
    (lambda s: s["properties"]["spec"]["properties"]["labels"].update(**{"x-kubernetes-map-type": "merge"}),
     "properties[spec].properties[labels].x-kubernetes-map-type", "FieldValueNotSupported",
     'Unsupported value: "merge": supported values: "atomic", "granular"'),
    (lambda s: s["properties"]["spec"]["properties"]["tags"].update(items={"type": "object"}),
     "properties[spec].properties[tags].items.x-kubernetes-map-type", "FieldValueInvalid",
     "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"),
    (lambda s: s.update(nullable=True), "nullable", "FieldValueForbidden",
     "Forbidden: nullable cannot be true at the root"),
])
def test_schema_rules(mutate: Any, field: str, reason: str, message: str) -> None:
    crd = make_crd()
    mutate(schema_of(crd))
    cause = one(validate_crd(crd), f"spec.validation.openAPIV3Schema.{field}")
    assert (cause.reason, cause.message) == (reason, message)


def test_additional_properties_false_alone_is_allowed() -> None:
    """kube dropped 'additionalProperties cannot be set to false'; only with properties is it refused."""
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["properties"]["empty"] = {"type": "object", "additionalProperties": False}
    assert validate_crd(crd) == []


def test_schema_that_cannot_become_structural_reports_only_the_walk() -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["properties"]["p"] = {
        "type": "object", "patternProperties": {"^a": {"type": "string"}}}
    causes = validate_crd(crd)
    assert fields(causes) == ["spec.validation.openAPIV3Schema.properties[spec].properties[p].patternProperties"]


def test_unsupported_dollar_schema_is_reported_as_kube_does() -> None:
    crd = make_crd()
    schema_of(crd)["$schema"] = "http://json-schema.org/draft-04/schema#"
    cause = one(validate_crd(crd), "spec.validation.openAPIV3Schema")
    assert cause.message == "Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"


# -- defaults in schemas -------------------------------------------------------------------------

@pytest.mark.parametrize("default, reason, message", [
    ("one", "FieldValueTypeInvalid", 'Invalid value: "one":  in body must be of type integer: "string"'),
    (-1, "FieldValueInvalid", "Invalid value: -1:  in body should be greater than or equal to 0"),
])
def test_defaults_must_validate(default: Any, reason: str, message: str) -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["properties"]["replicas"]["default"] = default
    cause = one(validate_crd(crd), "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default")
    assert (cause.reason, cause.message) == (reason, message)


def test_defaults_must_be_pruned() -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["default"] = {"replicas": 2, "bogus": True}
    cause = one(validate_crd(crd), "spec.validation.openAPIV3Schema.properties[spec].default")
    assert cause.message == 'Invalid value: {"replicas":2,"bogus":true}: must not have unknown fields'


def test_object_default_fields_are_validated() -> None:
    crd = make_crd()
    spec = schema_of(crd)["properties"]["spec"]
    spec["required"] = ["selector"]
    spec["default"] = {"replicas": 2}
    causes = validate_crd(crd)
    assert one(causes, "spec.validation.openAPIV3Schema.properties[spec].default.selector").reason == (
        "FieldValueRequired")


def test_defaults_are_not_checked_when_schema_is_not_structural() -> None:
    crd = make_crd()
    props = schema_of(crd)["properties"]["spec"]["properties"]
    props["replicas"]["default"] = "bad"
    props["untyped"] = {}
    assert fields(validate_crd(crd)) == ["spec.validation.openAPIV3Schema.properties[spec].properties[untyped].type"]


# -- CEL -----------------------------------------------------------------------------------------

def test_cel_rules_that_compile_are_accepted_and_broken_ones_named_wherever_they_are() -> None:
    v1beta1 = {"name": "v1beta1", "served": True, "storage": False,
               "schema": {"openAPIV3Schema": copy.deepcopy(SPEC_SCHEMA)}}
    v1beta1["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.minReplicas <= self.maxReplicas", "message": "min must not exceed max"}]
    crd = make_crd()
    crd["spec"]["versions"].insert(0, v1beta1)
    assert validate_crd(crd) == []
    schema_of(crd, 1)["properties"]["spec"]["properties"]["ports"]["items"]["x-kubernetes-validations"] = [
        {"rule": "self.port > 0"}, {"rule": "self.name != ", "messageExpression": "oops("}]
    causes = validate_crd(crd)
    base = "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[ports].items.x-kubernetes-validations[1]"
    assert {c.field for c in causes} == {f"{base}.rule", f"{base}.messageExpression"}
    assert all(c.reason == "FieldValueInvalid" and "compilation failed" in c.message for c in causes)
    assert schema_uses_cel(v1beta1["schema"]["openAPIV3Schema"])


def test_cel_rules_also_get_kubes_static_checks() -> None:
    crd = make_crd()
    schema_of(crd)["x-kubernetes-validations"] = [{"rule": " ", "reason": "Nope"}]
    causes = validate_crd(crd)
    base = "spec.validation.openAPIV3Schema.x-kubernetes-validations[0]"
    assert one(causes, f"{base}.reason").reason == "FieldValueNotSupported"
    assert [c.reason for c in causes if c.field == f"{base}.rule"] == ["FieldValueRequired"]


def test_cel_rules_inside_all_of_are_also_not_structural() -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["allOf"] = [{"x-kubernetes-validations": [{"rule": "true"}]}]
    causes = validate_crd(crd)
    assert one(causes, "spec.validation.openAPIV3Schema.properties[spec].allOf[0].x-kubernetes-validations").message \
        == "Forbidden: must be empty to be structural"


# -- conversion ----------------------------------------------------------------------------------

def test_webhook_conversion_needs_client_config_and_review_versions() -> None:
    crd = make_crd(conversion={"strategy": "Webhook"})
    causes = validate_crd(crd)
    assert one(causes, "spec.conversion.webhookClientConfig").message == (
        "Required value: required when strategy is set to Webhook")
    assert one(causes, "spec.conversion.conversionReviewVersions").message == "Required value"


def test_webhook_url_rules() -> None:
    crd = make_crd(conversion={"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v2"], "clientConfig": {"url": "http://converter.example.com/x?y=1"}}})
    causes = validate_crd(crd)
    url = [c.message for c in causes if c.field == "spec.conversion.webhookClientConfig.url"]
    assert url == [('Invalid value: "http": \'https\' is the only allowed URL scheme; desired format: '
                   'https://host[/path]'),
                   'Invalid value: "y=1": query parameters are not permitted in the URL']
    assert one(causes, "spec.conversion.conversionReviewVersions").message == (
        'Invalid value: ["v2"]: must include at least one of v1, v1beta1')


def test_none_strategy_forbids_webhook_settings() -> None:
    crd = make_crd(conversion={"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"],
                                                               "clientConfig": {"url": "https://x"}}})
    causes = validate_crd(crd)
    assert one(causes, "spec.conversion.webhookClientConfig").reason == "FieldValueForbidden"
    assert one(causes, "spec.conversion.conversionReviewVersions").reason == "FieldValueForbidden"


def test_unknown_strategy() -> None:
    cause = one(validate_crd(make_crd(conversion={"strategy": "Magic"})), "spec.conversion.strategy")
    assert cause.message == 'Unsupported value: "Magic": supported values: "None", "Webhook"'


# -- update ----------------------------------------------------------------------------------------

def established(crd: Obj) -> Obj:
    crd = copy.deepcopy(crd)
    crd["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    return crd


def test_scope_and_kind_are_immutable_once_established() -> None:
    old = established(make_crd())
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    new["spec"]["names"]["kind"] = "Gadget"
    new["spec"]["names"]["listKind"] = "GadgetList"
    causes = validate_crd(new, old)
    assert one(causes, "spec.scope").message == 'Invalid value: "Cluster": field is immutable'
    assert one(causes, "spec.names.kind").message == 'Invalid value: "Gadget": field is immutable'
    # before the CRD is established, both may still change
    assert validate_crd(new, make_crd()) == []


def test_group_and_plural_are_always_immutable() -> None:
    old = make_crd()
    new = copy.deepcopy(old)
    new["spec"]["group"] = "example.org"
    new["spec"]["names"]["plural"] = "gizmos"
    causes = validate_crd(new, old)
    assert one(causes, "spec.group").message == 'Invalid value: "example.org": field is immutable'
    assert one(causes, "spec.names.plural").message == 'Invalid value: "gizmos": field is immutable'


def test_other_names_may_change() -> None:
    old = established(make_crd())
    new = copy.deepcopy(old)
    new["spec"]["names"].update(singular="gadget", shortNames=["gd"], categories=["widgets"])
    assert validate_crd(new, old) == []


def test_stored_version_may_not_be_dropped() -> None:
    old = make_crd()
    old["spec"]["versions"].append({"name": "v2", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": copy.deepcopy(SPEC_SCHEMA)}})
    old["status"]["storedVersions"] = ["v1"]
    new = copy.deepcopy(old)
    new["spec"]["versions"] = [dict(new["spec"]["versions"][1], storage=True)]
    cause = one(validate_crd(new, old), "status.storedVersions[0]")
    assert cause.message == ('Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, '
                             "and must remain in spec.versions until a storage migration ensures no data remains "
                             "persisted in v1 and removes v1 from status.storedVersions")
    # switching storage while keeping v1 is fine, and v2 joins storedVersions
    new["spec"]["versions"].insert(0, dict(old["spec"]["versions"][0], storage=False))
    assert validate_crd(new, old) == []
    assert stored_versions_after(new, old) == ["v1", "v2"]


def test_update_keeps_rules_the_stored_crd_already_breaks() -> None:
    """kube never tightens validation on what is already persisted."""
    old = make_crd()
    schema_of(old)["properties"]["spec"]["properties"]["odd"] = {"type": "text"}
    new = copy.deepcopy(old)
    new["spec"]["names"]["shortNames"] = ["wdg"]
    assert validate_crd(new, old) == []
    assert "spec.validation.openAPIV3Schema.properties[spec].properties[odd].type" in fields(validate_crd(new))


# -- misc ----------------------------------------------------------------------------------------

def test_protected_groups_need_api_approval() -> None:
    crd = make_crd(group="widgets.k8s.io")
    crd["metadata"]["name"] = "widgets.widgets.k8s.io"
    cause = one(validate_crd(crd), "metadata.annotations[api-approved.kubernetes.io]")
    assert cause.reason == "FieldValueRequired"
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}
    assert validate_crd(crd) == []
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "maybe"}
    assert one(validate_crd(crd), "metadata.annotations[api-approved.kubernetes.io]").reason == "FieldValueInvalid"


def test_preserve_unknown_fields_cannot_be_set() -> None:
    got = messages(validate_crd(make_crd(preserveUnknownFields=True)), "spec.preserveUnknownFields")
    assert got == ["Invalid value: true: must be false in order to use defaults in the schema",
                   ("Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                   "spec.versions[*].schema instead")]


@pytest.mark.parametrize("path, value, field", [
    (("spec", "group"), 5, "spec.group"),
    (("spec", "versions"), {"name": "v1"}, "spec.versions"),
    (("spec", "names", "shortNames"), "wd", "spec.names.shortNames"),
])
def test_wrong_json_types_are_reported_not_crashed_on(path: tuple[str, ...], value: Any, field: str) -> None:
    crd = make_crd()
    target = crd
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert one(validate_crd(crd), field).reason == "FieldValueTypeInvalid"


def test_missing_spec_is_reported_field_by_field() -> None:
    causes = validate_crd({"metadata": {"name": "x.y"}})
    for field in ("spec.group", "spec.scope", "spec.names.plural", "spec.names.kind"):
        assert one(causes, field).reason == "FieldValueRequired"


def test_wrong_schema_types_are_reported() -> None:
    crd = make_crd()
    schema_of(crd)["properties"]["spec"]["properties"] = ["not", "a", "map"]
    assert fields(validate_crd(crd)) == ["spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"]


def test_absurdly_deep_schema_is_refused_without_crashing() -> None:
    crd = make_crd()
    node = schema_of(crd)["properties"]["spec"]
    for _ in range(400):
        node["properties"] = {"a": {"type": "object"}}
        node = node["properties"]["a"]
    causes = validate_crd(crd)
    assert len(causes) == 1 and "nested" in causes[0].message


def test_the_core_group_is_accepted_for_a_crd_named_plural_dot_core() -> None:
    """kcp imports kube's core types (Services, PersistentVolumeClaims) from physical clusters as CRDs."""
    crd = make_crd(group="")
    crd["metadata"]["name"] = "widgets.core"
    assert [c for c in validate_crd(crd) if c.field in ("spec.group", "metadata.name")] == []
    crd["metadata"]["name"] = "widgets"
    assert one(validate_crd(crd), "metadata.name").message == (
        'Invalid value: "widgets": must be spec.names.plural+"."+spec.group')


def test_patterns_of_one_crd_share_a_compile_budget() -> None:
    """RE2 compiles `\\p{L}{1,63}` to 75,000 instructions (0.1 s): a CRD of thousands of them would hold the
    server for minutes, so past the budget the CRD's patterns are refused as too large."""
    crd = make_crd()
    props = schema_of(crd)["properties"]["spec"]["properties"]
    for i in range(20):
        props[f"name{i:02}"] = {"type": "string", "pattern": rf"^\p{{L}}{{1,63}}{i}$"}
    refused = [c.field for c in validate_crd(crd) if "expression too large" in c.message]
    assert 0 < len(refused) < 20
    assert refused[0].startswith("spec.validation.openAPIV3Schema.properties[spec].properties[name")
    del props["name19"]
    for i in range(19):
        props[f"name{i:02}"]["pattern"] = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    assert validate_crd(crd) == []
