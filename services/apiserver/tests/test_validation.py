"""Object metadata validation: kube's rules, field paths, reasons and messages."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import (
    NAME_SUFFIX_ALPHABET,
    generate_name,
    generate_name_suffix,
    validate_label_value,
    validate_name,
    validate_object_meta,
    validate_path_segment_name,
    validate_qualified_name,
)

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
             "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                 "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                 "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
             "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def meta(**fields: Any) -> dict[str, Any]:
    return {"name": "ok", "namespace": "default", **fields}


def causes(namespaced: bool = True, **fields: Any) -> list[Cause]:
    return validate_object_meta(meta(**fields), namespaced=namespaced)


def only(found: list[Cause]) -> Cause:
    assert len(found) == 1, found
    return found[0]


# -- names --------------------------------------------------------------------------------------

def test_valid_metadata_has_no_causes() -> None:
    assert causes(labels={"app.kubernetes.io/name": "web", "empty": ""}, annotations={"Note": "anything at all"},
                  finalizers=["example.com/cleanup"], generation=1) == []


def test_name_must_be_a_dns_subdomain() -> None:
    assert validate_name("Bad_Name") == [SUBDOMAIN_MSG]
    assert validate_name("a.b-c") == []


def test_name_over_253_characters_is_too_long() -> None:
    assert validate_name("a" * 254) == ["must be no more than 253 characters"]


def test_dns_label_variant_rejects_dots_and_length_over_63() -> None:
    assert validate_name("a.b", dns_subdomain=False) == [LABEL_MSG]
    assert validate_name("a" * 64, dns_subdomain=False) == ["must be no more than 63 characters"]


def test_generate_name_prefix_may_end_with_a_dash() -> None:
    assert validate_name("web-", prefix=True) == []
    assert validate_name("Web-", prefix=True) == [SUBDOMAIN_MSG]


def test_invalid_name_is_reported_at_metadata_name() -> None:
    cause = only(causes(name="Bad_Name"))
    assert (cause.reason, cause.field) == ("FieldValueInvalid", "metadata.name")
    assert cause.message == f'Invalid value: "Bad_Name": {SUBDOMAIN_MSG}'


def test_missing_name_is_required() -> None:
    cause = only(validate_object_meta({"namespace": "default"}, namespaced=True))
    assert (cause.reason, cause.field) == ("FieldValueRequired", "metadata.name")
    assert cause.message == "Required value: name or generateName is required"


def test_invalid_generate_name_is_reported_at_its_own_field() -> None:
    found = causes(name="Bad-abcde", generateName="Bad-")
    assert [c.field for c in found] == ["metadata.generateName", "metadata.name"]


def test_namespace_names_are_dns_labels() -> None:
    found = validate_object_meta({"name": "a.b"}, namespaced=False, name_is_dns_label=True)
    assert only(found).message == f'Invalid value: "a.b": {LABEL_MSG}'


def test_path_segment_names_allow_colons_but_not_slashes_or_dots_alone() -> None:
    ok = validate_object_meta({"name": "system:admin"}, namespaced=False, name_is_path_segment=True)
    assert ok == []
    bad = validate_object_meta({"name": "a/b%c"}, namespaced=False, name_is_path_segment=True)
    assert [c.message for c in bad] == ["Invalid value: \"a/b%c\": may not contain '/'",
                                        "Invalid value: \"a/b%c\": may not contain '%'"]
    assert validate_path_segment_name("..") == ["may not be '..'"]
    assert validate_path_segment_name("..", prefix=True) == []


# -- namespace and generation -------------------------------------------------------------------

def test_namespaced_objects_need_a_namespace() -> None:
    cause = only(validate_object_meta({"name": "ok"}, namespaced=True))
    assert (cause.reason, cause.field, cause.message) == ("FieldValueRequired", "metadata.namespace",
                                                          "Required value")


def test_namespace_must_be_a_dns_label() -> None:
    cause = only(causes(namespace="Bad.NS"))
    assert (cause.field, cause.message) == ("metadata.namespace", f'Invalid value: "Bad.NS": {LABEL_MSG}')


def test_cluster_scoped_objects_may_not_have_a_namespace() -> None:
    cause = only(causes(namespaced=False))
    assert (cause.reason, cause.field, cause.message) == ("FieldValueForbidden", "metadata.namespace",
                                                          "Forbidden: not allowed on this type")


def test_negative_generation_is_invalid() -> None:
    cause = only(causes(generation=-1))
    assert (cause.field, cause.message) == ("metadata.generation",
                                            "Invalid value: -1: must be greater than or equal to 0")


# -- labels -------------------------------------------------------------------------------------

def test_bad_label_key_is_reported_at_metadata_labels_with_kubes_message() -> None:
    cause = only(causes(labels={"bad key!": "v"}))
    assert (cause.reason, cause.field) == ("FieldValueInvalid", "metadata.labels")
    assert cause.message == f'Invalid value: "bad key!": {NAME_PART_MSG}'


def test_bad_label_value_is_reported_at_metadata_labels() -> None:
    cause = only(causes(labels={"ok": "not valid value!"}))
    assert (cause.field, cause.message) == ("metadata.labels", f'Invalid value: "not valid value!": {VALUE_MSG}')


def test_label_value_over_63_characters_is_too_long() -> None:
    assert validate_label_value("v" * 64) == ["must be no more than 63 characters"]
    assert validate_label_value("") == []


def test_label_key_name_part_over_63_characters_is_too_long() -> None:
    assert validate_qualified_name("k" * 64) == ["name part must be no more than 63 characters"]


def test_label_key_prefix_must_be_a_dns_subdomain() -> None:
    assert validate_qualified_name("Example.com/name") == ["prefix part " + SUBDOMAIN_MSG]
    assert validate_qualified_name("/name") == ["prefix part must be non-empty"]
    assert validate_qualified_name("example.com/") == ["name part must be non-empty", NAME_PART_MSG]


def test_label_key_with_two_slashes_gets_the_whole_qualified_name_message() -> None:
    assert validate_qualified_name("a/b/c") == [
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
        "'example.com/MyName')"]


def test_non_string_label_values_are_a_type_error() -> None:
    cause = only(causes(labels={"a": 1}))
    assert (cause.reason, cause.field) == ("FieldValueTypeInvalid", "metadata.labels")


# -- annotations --------------------------------------------------------------------------------

def test_annotation_keys_are_checked_case_insensitively() -> None:
    assert causes(annotations={"Example.COM/Key": "v"}) == []


def test_bad_annotation_key_is_reported_at_metadata_annotations() -> None:
    cause = only(causes(annotations={"bad key": "v"}))
    assert (cause.reason, cause.field, cause.message) == ("FieldValueInvalid", "metadata.annotations",
                                                          f'Invalid value: "bad key": {NAME_PART_MSG}')


def test_annotations_over_256_kib_are_too_long() -> None:
    cause = only(causes(annotations={"k": "x" * (256 * 1024)}))
    assert (cause.reason, cause.field, cause.message) == ("FieldValueTooLong", "metadata.annotations",
                                                          "Too long: must have at most 262144 bytes")


def test_annotations_at_exactly_256_kib_are_allowed() -> None:
    assert causes(annotations={"k": "x" * (256 * 1024 - 1)}) == []


def test_annotation_size_counts_utf8_bytes() -> None:
    assert only(causes(annotations={"k": "é" * (128 * 1024)})).reason == "FieldValueTooLong"


# -- finalizers ---------------------------------------------------------------------------------

def test_finalizers_must_be_qualified_names() -> None:
    cause = only(causes(finalizers=["example.com/ok", "bad finalizer"]))
    assert (cause.field, cause.message) == ("metadata.finalizers",
                                            f'Invalid value: "bad finalizer": {NAME_PART_MSG}')


def test_orphan_and_foreground_deletion_cannot_both_be_set() -> None:
    cause = only(causes(finalizers=["orphan", "foregroundDeletion"]))
    assert cause.message == ('Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
                             'foregroundDeletion cannot be both set')


# -- owner references ---------------------------------------------------------------------------

OWNER = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1234"}


def test_complete_owner_reference_is_valid() -> None:
    assert causes(ownerReferences=[OWNER]) == []


def test_owner_reference_fields_are_required_without_an_index_in_the_path() -> None:
    found = causes(ownerReferences=[{"apiVersion": "apps/"}])
    assert [(c.reason, c.field, c.message) for c in found] == [
        ("FieldValueInvalid", "metadata.ownerReferences.apiVersion",
         'Invalid value: "apps/": version must not be empty'),
        ("FieldValueInvalid", "metadata.ownerReferences.kind", 'Invalid value: "": must not be empty'),
        ("FieldValueInvalid", "metadata.ownerReferences.name", 'Invalid value: "": must not be empty'),
        ("FieldValueInvalid", "metadata.ownerReferences.uid", 'Invalid value: "": must not be empty'),
    ]


def test_events_cannot_own_objects() -> None:
    cause = only(causes(ownerReferences=[{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]))
    assert cause.field == "metadata.ownerReferences"
    assert cause.message == ('Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: '
                             '/v1, Kind=Event is disallowed from being an owner')


def test_only_one_owner_may_be_the_controller() -> None:
    second = {**OWNER, "name": "other", "controller": True}
    cause = only(causes(ownerReferences=[{**OWNER, "controller": True}, second]))
    assert cause.field == "metadata.ownerReferences"
    assert cause.message.endswith('Only one reference can have Controller set to true. Found "true" in '
                                  'references for Deployment/web and Deployment/other')


# -- generateName -------------------------------------------------------------------------------

def test_generated_suffix_uses_kubes_alphabet() -> None:
    suffixes = {generate_name_suffix() for _ in range(50)}
    assert all(len(s) == 5 and set(s) <= set(NAME_SUFFIX_ALPHABET) for s in suffixes)
    assert len(suffixes) > 1


def test_generated_name_trims_long_bases_to_fit_63_characters() -> None:
    assert len(generate_name("b" * 80)) == 63
    assert generate_name("web-").startswith("web-") and len(generate_name("web-")) == 9
