"""crdschema: kube-openapi validation, structural pruning and defaulting of custom resources.

Expected paths and messages are kube-apiserver's (ValidateCustomResource + the custom resource strategy).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kcp_apiserver.apiextensions.compiledschema import compile_schema
from kcp_apiserver.apimachinery.status import Cause


def spec_schema(props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    spec = {"type": "object", "properties": props, **extra}
    return {"type": "object", "properties": {"spec": spec, "status": {"type": "object",
                                                                      "x-kubernetes-preserve-unknown-fields": True}}}


def cr(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def errors(schema: dict[str, Any], spec: Any) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in compile_schema(schema).validate(cr(spec))]


def one(schema: dict[str, Any], spec: Any) -> tuple[str, str, str]:
    errs = errors(schema, spec)
    assert len(errs) == 1, errs
    return errs[0]


# -- numbers --------------------------------------------------------------------------------------

def test_maximum_is_kube_wording() -> None:
    s = spec_schema({"size": {"type": "integer", "maximum": 10}})
    assert one(s, {"size": 20}) == ("spec.size", "FieldValueInvalid",
                                    "Invalid value: 20: spec.size in body should be less than or equal to 10")
    assert errors(s, {"size": 10}) == []


def test_exclusive_bounds_and_minimum() -> None:
    s = spec_schema({"n": {"type": "integer", "minimum": 1, "maximum": 10, "exclusiveMaximum": True},
                     "m": {"type": "integer", "minimum": 1, "exclusiveMinimum": True}})
    assert one(s, {"n": 10})[2] == "Invalid value: 10: spec.n in body should be less than 10"
    assert one(s, {"n": 0})[2] == "Invalid value: 0: spec.n in body should be greater than or equal to 1"
    assert one(s, {"m": 1})[2] == "Invalid value: 1: spec.m in body should be greater than 1"
    assert errors(s, {"n": 9, "m": 2}) == []


def test_float_values_print_like_go() -> None:
    s = spec_schema({"r": {"type": "number", "maximum": 1000000}})
    assert one(s, {"r": 2e6})[2] == "Invalid value: 2e+06: spec.r in body should be less than or equal to 1e+06"
    assert one(s, {"r": 1000000.5})[2] == ("Invalid value: 1.0000005e+06: spec.r in body should be less than or "
                                           "equal to 1e+06")
    s = spec_schema({"r": {"type": "number", "maximum": 10}})
    assert one(s, {"r": 10.5})[2] == "Invalid value: 10.5: spec.r in body should be less than or equal to 10"


def test_integer_values_compare_against_a_truncated_bound() -> None:
    # kube-openapi converts the float64 bound to int64 for integer values
    s = spec_schema({"n": {"type": "integer", "maximum": 10.5}})
    assert one(s, {"n": 11})[2] == "Invalid value: 11: spec.n in body should be less than or equal to 10"


def test_multiple_of() -> None:
    s = spec_schema({"n": {"type": "integer", "multipleOf": 5}, "f": {"type": "number", "multipleOf": 0.1}})
    assert one(s, {"n": 7})[2] == "Invalid value: 7: spec.n in body should be a multiple of 5"
    assert one(s, {"f": 0.35})[2] == "Invalid value: 0.35: spec.f in body should be a multiple of 0.1"
    assert errors(s, {"n": 10, "f": 0.3}) == []


def test_number_errors_come_in_kube_order() -> None:
    s = spec_schema({"n": {"type": "integer", "multipleOf": 5, "minimum": 10}})
    assert [e[2] for e in errors(s, {"n": 3})] == [
        "Invalid value: 3: spec.n in body should be a multiple of 5",
        "Invalid value: 3: spec.n in body should be greater than or equal to 10"]


# -- types, nullable, int-or-string -----------------------------------------------------------------

def test_type_errors() -> None:
    s = spec_schema({"size": {"type": "integer"}, "name": {"type": "string"}, "on": {"type": "boolean"},
                     "list": {"type": "array"}, "obj": {"type": "object"}, "num": {"type": "number"}})
    assert one(s, {"size": "string"}) == (
        "spec.size", "FieldValueTypeInvalid",
        'Invalid value: "string": spec.size in body must be of type integer: "string"')
    assert one(s, {"name": 5})[2] == 'Invalid value: "integer": spec.name in body must be of type string: "integer"'
    assert one(s, {"on": "yes"})[2] == 'Invalid value: "string": spec.on in body must be of type boolean: "string"'
    assert one(s, {"list": {}})[2] == 'Invalid value: "object": spec.list in body must be of type array: "object"'
    assert one(s, {"obj": [1]})[2] == 'Invalid value: "array": spec.obj in body must be of type object: "array"'
    assert one(s, {"size": 1.5})[2] == 'Invalid value: "number": spec.size in body must be of type integer: "number"'
    assert one(s, {"num": True})[2] == 'Invalid value: "boolean": spec.num in body must be of type number: "boolean"'
    # whole floats are integers; integers are numbers
    assert errors(s, {"size": 2.0, "num": 3, "on": False, "list": [], "obj": {}, "name": ""}) == []


def test_null_only_when_nullable() -> None:
    s = spec_schema({"a": {"type": "string"}, "b": {"type": "string", "nullable": True}})
    assert one(s, {"a": None}) == ("spec.a", "FieldValueTypeInvalid",
                                   'Invalid value: "null": spec.a in body must be of type string: "null"')
    assert errors(s, {"b": None}) == []


def test_int_or_string() -> None:
    s = spec_schema({"port": {"x-kubernetes-int-or-string": True}})
    assert errors(s, {"port": 80}) == []
    assert errors(s, {"port": "http"}) == []
    assert one(s, {"port": True})[2] == ('Invalid value: "boolean": spec.port in body must be of type '
                                         'integer,string: "boolean"')
    assert one(s, {"port": None})[2] == 'Invalid value: "null": spec.port in body must be of type integer,string: "null"'


def test_int_or_string_with_any_of_pattern() -> None:
    s = spec_schema({"port": {"x-kubernetes-int-or-string": True,
                              "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[a-z]+$"}})
    assert errors(s, {"port": 8080}) == []
    assert one(s, {"port": "HTTP"})[2] == """Invalid value: "HTTP": spec.port in body should match '^[a-z]+$'"""


# -- strings -------------------------------------------------------------------------------------------

def test_string_lengths_count_code_points() -> None:
    s = spec_schema({"name": {"type": "string", "minLength": 2, "maxLength": 3}})
    assert errors(s, {"name": "ééé"}) == []
    assert one(s, {"name": "éééé"}) == ("spec.name", "FieldValueTooLong", "Too long: may not be longer than 3")
    assert one(s, {"name": "a"}) == ("spec.name", "FieldValueInvalid",
                                     'Invalid value: "a": spec.name in body should be at least 2 chars long')


def test_pattern_is_a_search_anchored_only_by_the_pattern() -> None:
    s = spec_schema({"name": {"type": "string", "pattern": "^[a-z]+$"}, "any": {"type": "string", "pattern": "b"}})
    assert one(s, {"name": "ABC"})[2] == """Invalid value: "ABC": spec.name in body should match '^[a-z]+$'"""
    assert one(s, {"name": "abc\n"})[2] == """Invalid value: "abc\\n": spec.name in body should match '^[a-z]+$'"""
    assert errors(s, {"name": "abc", "any": "abc"}) == []


def test_pattern_uses_go_character_classes() -> None:
    s = spec_schema({"n": {"type": "string", "pattern": r"^\d+$"}, "p": {"type": "string", "pattern": "^[[:alpha:]]+$"}})
    assert errors(s, {"n": "123", "p": "abc"}) == []
    assert len(errors(s, {"n": "١٢٣"})) == 1  # Arabic-Indic digits are not \d in RE2
    assert len(errors(s, {"p": "ab1"})) == 1


def test_only_the_first_string_problem_is_reported() -> None:
    s = spec_schema({"n": {"type": "string", "maxLength": 2, "pattern": "^[0-9]+$"}})
    assert one(s, {"n": "abcd"})[1] == "FieldValueTooLong"


@pytest.mark.parametrize("fmt, good, bad", [
    ("date-time", ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123+02:00", "2024-01-02t03:04:05z"],
     ["2024-01-02", "2024-01-02T25:00:00Z", "2024-01-02T03:04:05", "yesterday"]),
    ("date", ["2024-02-29"], ["2023-02-29", "2024-1-2", "20240102"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000"], ["123e4567"]),
    ("email", ["a@example.com", "Jane <jane@example.com>"], ["example.com", "a@", "@b"]),
    ("hostname", ["example.com", "localhost", "my-host.example.io"], ["-bad.com", "a_b.com", "a..b"]),
    ("ipv4", ["10.0.0.1", "010.0.0.1"], ["10.0.0", "256.1.1.1", "::1"]),
    ("ipv6", ["::1", "2001:db8::1", "::ffff:1.2.3.4"], ["1.2.3.4", "2001:db8::g", "fe80::1%eth0"]),
    ("cidr", ["10.0.0.0/8", "2001:db8::/32"], ["10.0.0.0", "10.0.0.0/33", "10.0.0.0/x"]),
    ("mac", ["01:23:45:67:89:ab", "01-23-45-67-89-AB", "0123.4567.89ab"], ["01:23:45:67:89", "0123456789ab"]),
    ("duration", ["1h30m", "300ms", "0", "-1.5h", "3 days", "2 hours"], ["", "1x", "h", "3 lightyears"]),
    ("uri", ["https://example.com/a?b=c", "/absolute/path", "mailto:a@b.c"], ["relative/path", "", "http://a b"]),
    ("byte", ["aGVsbG8=", "YWJj"], ["not base64!", "abc"]),
    ("hexcolor", ["#fff", "a0b1c2"], ["#ffff"]),
    ("rgbcolor", ["rgb(1, 2, 255)"], ["rgb(256,0,0)"]),
    ("ssn", ["123-45-6789"], ["123456789"]),
    ("isbn10", ["0-306-40615-2"], ["0-306-40615-3"]),
    ("isbn13", ["978-0-306-40615-7"], ["978-0-306-40615-8"]),
    ("creditcard", ["4111 1111 1111 1111"], ["4111 1111 1111 1112"]),
    ("bsonobjectid", ["507f1f77bcf86cd799439011"], ["507f1f77bcf86cd79943901z"]),
    ("password", ["anything at all"], []),
])
def test_formats(fmt: str, good: list[str], bad: list[str]) -> None:
    s = spec_schema({"v": {"type": "string", "format": fmt}})
    for value in good:
        assert errors(s, {"v": value}) == [], value
    for value in bad:
        field, reason, message = one(s, {"v": value})
        assert (field, reason) == ("spec.v", "FieldValueTypeInvalid"), value
        assert message.endswith(f"spec.v in body must be of type {fmt}: {message.split(': ')[1]}"), message


def test_format_error_message() -> None:
    s = spec_schema({"at": {"type": "string", "format": "date-time"}})
    assert one(s, {"at": "yesterday"}) == (
        "spec.at", "FieldValueTypeInvalid",
        'Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday"')


def test_formats_kube_strips_are_ignored() -> None:
    # int32/int64/float/double and unknown formats are stripped by kube before validation
    s = spec_schema({"i": {"type": "integer", "format": "int32"}, "f": {"type": "number", "format": "float"},
                     "x": {"type": "string", "format": "no-such-format"}})
    assert errors(s, {"i": 5_000_000_000, "f": 1e300, "x": "whatever"}) == []


def test_string_format_on_a_number_reports_the_format() -> None:
    # kube-openapi's typeValidator names the format, and the value's Go format, in this case
    s = spec_schema({"d": {"type": "string", "format": "date"}})
    assert one(s, {"d": 5})[2] == 'Invalid value: "int64": spec.d in body must be of type date: "int64"'


# -- enum ----------------------------------------------------------------------------------------------

def test_enum() -> None:
    s = spec_schema({"color": {"type": "string", "enum": ["red", "blue"]}})
    assert one(s, {"color": "pink"}) == ("spec.color", "FieldValueNotSupported",
                                         'Unsupported value: "pink": supported values: "red", "blue"')
    assert errors(s, {"color": "red"}) == []


def test_enum_of_numbers_and_objects() -> None:
    s = spec_schema({"n": {"type": "integer", "enum": [1, 2]},
                     "o": {"type": "object", "enum": [{"a": 1}], "x-kubernetes-preserve-unknown-fields": True}})
    assert one(s, {"n": 3})[2] == 'Unsupported value: 3: supported values: "1", "2"'
    assert errors(s, {"n": 2.0, "o": {"a": 1}}) == []
    assert one(s, {"o": {"a": 2}})[2] == 'Unsupported value: {"a":2}: supported values: "{\\"a\\":1}"'


def test_enum_rejects_null_even_when_nullable() -> None:
    # kube-openapi's enum check runs on null values and never matches them
    s = spec_schema({"c": {"type": "string", "nullable": True, "enum": ["a"]}})
    assert one(s, {"c": None})[2] == 'Unsupported value: "null": supported values: "a"'


# -- arrays ---------------------------------------------------------------------------------------------

def test_list_indices_in_paths() -> None:
    s = spec_schema({"items": {"type": "array", "items": {"type": "object", "required": ["name"],
                                                          "properties": {"name": {"type": "string"}}}}})
    assert one(s, {"items": [{"name": "a"}, {"name": "b"}, {}]}) == ("spec.items[2].name", "FieldValueRequired",
                                                                      "Required value")
    assert one(s, {"items": [{"name": 1}]})[0] == "spec.items[0].name"


def test_min_and_max_items() -> None:
    s = spec_schema({"l": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "integer"}}})
    assert one(s, {"l": [1]}) == ("spec.l", "FieldValueInvalid",
                                  "Invalid value: 1: spec.l in body should have at least 2 items")
    assert one(s, {"l": [1, 2, 3, 4]}) == ("spec.l", "FieldValueTooMany", "Too many: 4: must have at most 3 items")


def test_unique_items() -> None:
    s = spec_schema({"l": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}})
    assert one(s, {"l": ["a", "b", "a"]})[2] == """Invalid value: "": spec.l in body shouldn't contain duplicates"""
    assert errors(s, {"l": ["a", "b"]}) == []


def test_list_type_set_duplicates() -> None:
    s = spec_schema({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}})
    assert errors(s, {"tags": ["a", "b", "a", "a", "b"]}) == [
        ("spec.tags[2]", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("spec.tags[4]", "FieldValueDuplicate", 'Duplicate value: "b"')]
    assert errors(s, {"tags": ["a", "b"]}) == []


def test_list_type_set_compares_numbers_by_type_and_objects_by_json() -> None:
    s = spec_schema({"l": {"type": "array", "x-kubernetes-list-type": "set",
                           "items": {"x-kubernetes-preserve-unknown-fields": True}}})
    assert errors(s, {"l": [1, 1.5, True, "1"]}) == []
    assert errors(s, {"l": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}) == [
        ("spec.l[1]", "FieldValueDuplicate", 'Duplicate value: {"a":1,"b":2}')]


def test_list_type_map_duplicates() -> None:
    item = {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"},
                                                                   "protocol": {"type": "string"}}}
    s = spec_schema({"ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                               "items": item},
                     "multi": {"type": "array", "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["port", "protocol"], "items": item}})
    assert errors(s, {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}) == [
        ("spec.ports[1]", "FieldValueDuplicate", 'Duplicate value: {"port":80}')]
    assert errors(s, {"multi": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}]}) == []
    assert errors(s, {"multi": [{"port": 80, "protocol": "TCP"}, {"protocol": "TCP", "port": 80}]}) == [
        ("spec.multi[1]", "FieldValueDuplicate", 'Duplicate value: {"port":80,"protocol":"TCP"}')]


def test_list_type_map_key_is_required_by_the_schema() -> None:
    item = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    s = spec_schema({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                           "items": item}})
    assert errors(s, {"l": [{"name": "a"}, {}, {}]}) == [
        ("spec.l[1].name", "FieldValueRequired", "Required value"),
        ("spec.l[2].name", "FieldValueRequired", "Required value"),
        ("spec.l[2]", "FieldValueDuplicate", "Duplicate value: {}")]


def test_list_type_map_items_must_be_objects() -> None:
    s = spec_schema({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                           "items": {"x-kubernetes-preserve-unknown-fields": True}}})
    assert errors(s, {"l": [{"k": 1}, "x", 5]}) == [
        ("spec.l[1]", "FieldValueInvalid", 'Invalid value: "x": must be an object for an array of list-type map')]


def test_atomic_lists_and_map_type_are_not_checked() -> None:
    s = spec_schema({"l": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
                     "m": {"type": "object", "x-kubernetes-map-type": "atomic",
                           "additionalProperties": {"type": "string"}}})
    assert errors(s, {"l": ["a", "a"], "m": {"a": "b"}}) == []


# -- objects --------------------------------------------------------------------------------------------

def test_required() -> None:
    s = spec_schema({"name": {"type": "string"}}, required=["name"])
    assert one(s, {}) == ("spec.name", "FieldValueRequired", "Required value")
    assert one({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}},
               None)[0] == "spec"  # spec: null is present; only its type fails


def test_required_at_the_root() -> None:
    s = {"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}
    assert [(c.field, c.message) for c in compile_schema(s).validate({"metadata": {"name": "a"}})] == [
        ("spec", "Required value")]


def test_map_values_by_additional_properties() -> None:
    # kube-openapi names map entries with a dot
    s = spec_schema({"labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}})
    assert one(s, {"labels": {"key": 1}}) == (
        "spec.labels.key", "FieldValueTypeInvalid",
        'Invalid value: "integer": spec.labels.key in body must be of type string: "integer"')
    assert one(s, {"labels": {"k": "long"}})[0] == "spec.labels.k"


def test_additional_properties_false() -> None:
    s = spec_schema({"a": {"type": "string"}}, additionalProperties=False)
    assert one(s, {"a": "x", "extra": 1}) == ("spec", "FieldValueInvalid",
                                              'Invalid value: "extra": spec.extra in body is a forbidden property')


def test_min_and_max_properties() -> None:
    s = spec_schema({"m": {"type": "object", "minProperties": 2, "maxProperties": 3,
                           "additionalProperties": {"type": "string"}}})
    assert one(s, {"m": {"a": "1"}}) == ("spec.m", "FieldValueInvalid",
                                         "Invalid value: 1: spec.m in body should have at least 2 properties")
    assert one(s, {"m": {"a": "1", "b": "2", "c": "3", "d": 4}}) == ("spec.m", "FieldValueTooMany",
                                                                   "Too many: 4: must have at most 3 items")


def test_root_metadata_api_version_and_kind_are_left_to_the_server() -> None:
    s = {"type": "object", "properties": {"apiVersion": {"type": "integer"}, "kind": {"type": "integer"},
                                          "metadata": {"type": "string"}, "spec": {"type": "object"}}}
    assert compile_schema(s).validate(cr({})) == []


def test_root_metadata_name_restrictions_apply() -> None:
    s = {"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 3}}}}}
    obj = cr({})
    assert compile_schema(s).validate(obj) == []
    obj["metadata"]["name"] = "toolong"
    errs = compile_schema(s).validate(obj)
    assert [(c.field, c.message) for c in errs] == [("metadata.name", "Too long: may not be longer than 3")]


def test_nested_errors_are_all_reported() -> None:
    s = spec_schema({"a": {"type": "object", "properties": {"b": {"type": "object", "properties": {
        "c": {"type": "integer", "minimum": 0}}}}}, "d": {"type": "string"}})
    assert errors(s, {"a": {"b": {"c": -1}}, "d": 1}) == [
        ("spec.a.b.c", "FieldValueInvalid", "Invalid value: -1: spec.a.b.c in body should be greater than or equal to 0"),
        ("spec.d", "FieldValueTypeInvalid", 'Invalid value: "integer": spec.d in body must be of type string: "integer"')]


# -- allOf / anyOf / oneOf / not ---------------------------------------------------------------------------

def test_any_of() -> None:
    s = spec_schema({"n": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]}})
    assert errors(s, {"n": 20}) == []
    assert errors(s, {"n": 5}) == [
        ("", "FieldValueInvalid", 'Invalid value: "": "spec.n" must validate at least one schema (anyOf)'),
        ("spec.n", "FieldValueInvalid", "Invalid value: 5: spec.n in body should be greater than or equal to 10")]


def test_one_of() -> None:
    s = spec_schema({"o": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                           "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}})
    assert errors(s, {"o": {"a": "x"}}) == []
    assert errors(s, {"o": {"a": "x", "b": "y"}}) == [
        ("", "FieldValueInvalid",
         'Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found 2 valid alternatives')]
    assert errors(s, {"o": {}}) == [
        ("", "FieldValueInvalid",
         'Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found none valid'),
        ("spec.o.a", "FieldValueRequired", "Required value")]


def test_all_of_and_not() -> None:
    s = spec_schema({"n": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 5}], "not": {"enum": [3]}}})
    assert errors(s, {"n": 2}) == []
    assert errors(s, {"n": 9}) == [
        ("spec.n", "FieldValueInvalid", "Invalid value: 9: spec.n in body should be less than or equal to 5"),
        ("", "FieldValueInvalid", 'Invalid value: "": "spec.n" must validate all the schemas (allOf)')]
    assert errors(s, {"n": 3}) == [
        ("", "FieldValueInvalid", 'Invalid value: "": "spec.n" must not validate the schema (not)')]


# -- embedded resources ----------------------------------------------------------------------------------

EMBEDDED = spec_schema({"template": {"type": "object", "x-kubernetes-embedded-resource": True,
                                     "x-kubernetes-preserve-unknown-fields": True}})


def test_embedded_resource_needs_api_version_and_kind() -> None:
    assert errors(EMBEDDED, {"template": {}}) == [
        ("spec.template.apiVersion", "FieldValueRequired", "Required value"),
        ("spec.template.kind", "FieldValueRequired", "Required value")]
    assert errors(EMBEDDED, {"template": {"apiVersion": "v1", "kind": "Pod"}}) == []


def test_embedded_resource_type_meta() -> None:
    errs = errors(EMBEDDED, {"template": {"apiVersion": 1, "kind": "Not_A_Kind"}})
    assert errs[0] == ("spec.template.apiVersion", "FieldValueInvalid", "Invalid value: 1: must be a string")
    assert errs[1][0] == "spec.template.kind"
    assert errs[1][2].startswith('Invalid value: "Not_A_Kind": may have mixed case, but should otherwise match: '
                                 "a DNS-1035 label")
    assert errors(EMBEDDED, {"template": {"apiVersion": "a/b/c", "kind": "Pod"}}) == [
        ("spec.template.apiVersion", "FieldValueInvalid",
         'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c')]


def test_embedded_resource_metadata_is_validated_lightly() -> None:
    errs = errors(EMBEDDED, {"template": {"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"name": "a/b", "labels": {"bad key!": "v"}}}})
    assert ("spec.template.metadata.name", "FieldValueInvalid", """Invalid value: "a/b": may not contain '/'""") in errs
    assert any(e[0] == "spec.template.metadata.labels" for e in errs)
    ok = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "x-", "namespace": "ns"}}
    assert errors(EMBEDDED, {"template": ok}) == []
    assert errors(EMBEDDED, {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": "x"}}) == [
        ("spec.template.metadata", "FieldValueInvalid",
         'Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta')]


def test_embedded_resource_in_a_map_uses_field_path_keys() -> None:
    s = spec_schema({"byName": {"type": "object", "additionalProperties": {
        "type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}}})
    assert errors(s, {"byName": {"one": {"kind": "Pod"}}}) == [
        ("spec.byName[one].apiVersion", "FieldValueRequired", "Required value")]


def test_error_groups_come_in_kube_order() -> None:
    s = spec_schema({"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                     "template": EMBEDDED["properties"]["spec"]["properties"]["template"],
                     "n": {"type": "integer"}})
    assert [e[0] for e in errors(s, {"tags": ["a", "a"], "template": {"kind": "Pod"}, "n": "x"})] == [
        "spec.n", "spec.template.apiVersion", "spec.tags[1]"]


# -- pruning -----------------------------------------------------------------------------------------------

PRUNE = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "v": {"type": "string"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "known": {"type": "object", "properties": {"k": {"type": "string"}}}}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {
            "spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
        "nul": {"type": "string"}, "nullable": {"type": "string", "nullable": True},
        "defaulted": {"type": "string", "default": "d"},
    }},
}}


def test_prune_nested_levels_and_report_paths_sorted() -> None:
    obj = cr({"name": "n", "bogus": 1, "items": [{"a": "x", "b": 1}, {"c": {"d": 1}}],
              "labels": {"one": {"v": "1", "w": "2"}}})
    obj["extra"] = {"x": 1}
    removed = compile_schema(PRUNE).prune(obj)
    assert removed == ["extra", "spec.bogus", "spec.items[0].b", "spec.items[1].c", "spec.labels.one.w"]
    assert obj == cr({"name": "n", "items": [{"a": "x"}, {}], "labels": {"one": {"v": "1"}}})


def test_prune_keeps_root_type_and_object_meta() -> None:
    obj = cr({})
    obj["metadata"]["unknownMetaField"] = 1
    assert compile_schema({"type": "object"}).prune(obj) == ["spec"]
    assert obj == {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "unknownMetaField": 1}}


def test_prune_respects_preserve_unknown_fields() -> None:
    obj = cr({"free": {"anything": {"deep": [1, {"x": 2}]}, "known": {"k": "v", "drop": 1}}})
    assert compile_schema(PRUNE).prune(obj) == ["spec.free.known.drop"]
    assert obj["spec"]["free"] == {"anything": {"deep": [1, {"x": 2}]}, "known": {"k": "v"}}


def test_prune_preserve_at_the_root() -> None:
    obj = cr({"anything": 1})
    assert compile_schema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}).prune(obj) == []
    assert obj["spec"] == {"anything": 1}


def test_prune_embedded_resources_keep_type_and_object_meta() -> None:
    template = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1, "labels": {},
                                                                  "creationTimestamp": None},
                "spec": {"x": "1", "y": 2}, "status": {}}
    obj = cr({"template": template})
    assert compile_schema(PRUNE).prune(obj) == ["spec.template.metadata.bogus", "spec.template.spec.y",
                                                "spec.template.status"]
    assert obj["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                       "spec": {"x": "1"}}


def test_prune_drops_non_nullable_nulls_without_defaults() -> None:
    obj = cr({"nul": None, "nullable": None, "defaulted": None})
    assert compile_schema(PRUNE).prune(obj) == []  # not reported as unknown
    assert obj["spec"] == {"nullable": None, "defaulted": None}


def test_prune_everything_under_a_schemaless_object() -> None:
    s = {"type": "object", "properties": {"spec": {"type": "object"}}}
    obj = cr({"a": {"b": 1}, "c": [1]})
    assert compile_schema(s).prune(obj) == ["spec.a", "spec.c"]
    assert obj["spec"] == {}


# -- defaulting --------------------------------------------------------------------------------------------

DEFAULTS = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "replicas": {"type": "integer", "default": 1},
    "strategy": {"type": "object", "default": {}, "properties": {
        "type": {"type": "string", "default": "Rolling"},
        "max": {"type": "object", "default": {"surge": 1}, "properties": {"surge": {"type": "integer"},
                                                                           "unavailable": {"type": "integer",
                                                                                           "default": 0}}}}},
    "ports": {"type": "array", "items": {"type": "object", "properties": {
        "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
    "names": {"type": "array", "items": {"type": "string", "default": "unnamed"}},
    "byKey": {"type": "object", "additionalProperties": {"type": "object", "properties": {
        "on": {"type": "boolean", "default": True}}}},
    "opt": {"type": "string", "nullable": True, "default": "x"},
    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "absent": {"type": "object", "properties": {"inner": {"type": "string", "default": "i"}}},
}}}}


def test_defaults_apply_recursively_including_inside_parent_defaults() -> None:
    compiled = compile_schema(DEFAULTS)
    assert compiled.has_defaults
    obj = cr({})
    compiled.apply_defaults(obj)
    assert obj["spec"] == {"replicas": 1, "opt": "x",
                           "strategy": {"type": "Rolling", "max": {"surge": 1, "unavailable": 0}}}


def test_defaults_do_not_override_and_apply_to_array_items_and_maps() -> None:
    obj = cr({"replicas": 3, "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}], "names": ["a", None],
              "byKey": {"a": {}, "b": {"on": False}}, "free": {"x": {}}, "absent": None})
    compile_schema(DEFAULTS).apply_defaults(obj)
    spec = obj["spec"]
    assert spec["replicas"] == 3
    assert spec["ports"] == [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]
    assert spec["names"] == ["a", "unnamed"]
    assert spec["byKey"] == {"a": {"on": True}, "b": {"on": False}}
    assert spec["free"] == {"x": {}}
    assert spec["absent"] is None  # parents are never created


def test_null_with_default_is_defaulted_unless_nullable() -> None:
    compiled = compile_schema(DEFAULTS)
    obj = cr({"replicas": None, "opt": None})
    compiled.prune(obj)
    compiled.apply_defaults(obj)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["opt"] is None


def test_defaults_are_copied_per_object() -> None:
    compiled = compile_schema(DEFAULTS)
    first, second = cr({}), cr({})
    compiled.apply_defaults(first)
    first["spec"]["strategy"]["max"]["surge"] = 99
    compiled.apply_defaults(second)
    assert second["spec"]["strategy"]["max"]["surge"] == 1


def test_no_defaults() -> None:
    compiled = compile_schema(spec_schema({"a": {"type": "string"}}))
    assert not compiled.has_defaults
    obj = cr({})
    compiled.apply_defaults(obj)
    assert obj == cr({})


def test_errors_are_causes() -> None:
    errs = compile_schema(spec_schema({"a": {"type": "string"}})).validate(cr({"a": 1}))
    assert isinstance(errs[0], Cause)
    assert errs[0].to_dict()["field"] == "spec.a"


# -- a 30-field custom resource (bench/bench_crds.py measures what this costs) --------------------------------

def _thirty_field_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    props: dict[str, Any] = {}
    spec: dict[str, Any] = {}
    for i in range(10):
        props[f"s{i}"] = {"type": "string", "maxLength": 64}
        spec[f"s{i}"] = f"value-{i}"
        props[f"n{i}"] = {"type": "integer", "minimum": 0, "maximum": 1000}
        spec[f"n{i}"] = i
        props[f"b{i}"] = {"type": "boolean", "default": False}
        spec[f"b{i}"] = True
    props["s0"]["enum"] = ["value-0", "other"]
    props["s1"]["pattern"] = "^value-[0-9]+$"
    schema = {"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                               "metadata": {"type": "object"},
                                               "spec": {"type": "object", "required": ["s0"], "properties": props}}}
    return schema, cr(spec)


def test_a_valid_thirty_field_object_loses_only_unknown_fields_and_passes() -> None:
    schema, obj = _thirty_field_schema()
    compiled = compile_schema(schema)
    got = copy.deepcopy(obj)
    got["spec"]["unknown"] = 1
    got["extra"] = 2
    assert compiled.prune(got) == ["extra", "spec.unknown"]
    compiled.apply_defaults(got)
    assert got == obj and compiled.validate(got) == []


def test_a_sparse_thirty_field_object_is_defaulted() -> None:
    schema, _ = _thirty_field_schema()
    compiled = compile_schema(schema)
    sparse = cr({"s0": "other"})
    compiled.apply_defaults(sparse)
    assert sparse["spec"] == {"s0": "other", **{f"b{i}": False for i in range(10)}}
    assert compiled.validate(sparse) == []


def test_every_broken_field_of_a_thirty_field_object_is_reported() -> None:
    schema, obj = _thirty_field_schema()
    bad = copy.deepcopy(obj)
    bad["spec"].update(s0="nope", s1="x", n3=1001, b2="yes", s4="y" * 65)
    assert [(c.field, c.reason) for c in compile_schema(schema).validate(bad)] == [
        ("spec.s0", "FieldValueNotSupported"), ("spec.s1", "FieldValueInvalid"), ("spec.b2", "FieldValueTypeInvalid"),
        ("spec.n3", "FieldValueInvalid"), ("spec.s4", "FieldValueTooLong")]
    del bad["spec"]["s0"]
    assert ("spec.s0", "FieldValueRequired") in [(c.field, c.reason) for c in compile_schema(schema).validate(bad)]
