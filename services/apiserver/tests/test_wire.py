"""Unreadable request bodies are refused with kube's messages: Go's JSON/YAML errors in kube's frame."""

from __future__ import annotations

import pytest

from kcp_apiserver.apimachinery.gojson import syntax_error
from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.wire import decode_object, summarize_body

UNRECOGNIZED = "the object provided is unrecognized (must be of type Namespace): "
TYPE_META = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'


def refused(body: bytes, content_type: str = "application/json") -> str:
    with pytest.raises(APIError) as caught:
        decode_object(body, content_type, "Namespace")
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    return caught.value.message


JSON_ERROR = "couldn't get version/kind; json parse error: "


@pytest.mark.parametrize(("body", "detail"), [
    (b"", JSON_ERROR + "unexpected end of JSON input (<empty>)"),
    (b"garbage", JSON_ERROR + "invalid character 'g' looking for beginning of value (67617262616765)"),
    (b'{"kind": "Namespace", "metadata": {"name": "x"',
     JSON_ERROR + 'unexpected end of JSON input ({"kind": "Namespace", "metadat ...)'),
    (b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n",  # YAML sent as JSON, as `kubectl --raw` does
     JSON_ERROR + "invalid character 'a' looking for beginning of value "
     "(61706956657273696f6e3a2076310a6b696e643a204e616d657370616365 ...)"),
    (b"[1]", JSON_ERROR + f"json: cannot unmarshal array into Go value of type {TYPE_META} (5b315d)"),
    (b'{"apiVersion": 5}',
     JSON_ERROR + 'json: cannot unmarshal number into Go struct field .apiVersion of type string ({"apiVersion": 5})'),
    (b'{"apiVersion": "a/b/c"}', 'unexpected GroupVersion string: a/b/c ({"apiVersion": "a/b/c"})'),
])
def test_unreadable_json_is_kubes_unrecognized_object(body: bytes, detail: str) -> None:
    assert refused(body) == UNRECOGNIZED + detail


@pytest.mark.parametrize(("body", "detail"), [
    (b"a: b: c", "yaml: mapping values are not allowed in this context (613a20623a2063)"),
    (b"a: 1\nb: c: d", "yaml: line 2: mapping values are not allowed in this context (613a20310a623a20633a2064)"),
    (b"a: [1, 2", "yaml: did not find expected ',' or ']' (613a205b312c2032)"),
    (b"garbage", JSON_ERROR + f"json: cannot unmarshal string into Go value of type {TYPE_META} (67617262616765)"),
])
def test_unreadable_yaml_is_kubes_unrecognized_object(body: bytes, detail: str) -> None:
    assert refused(body, "application/yaml") == UNRECOGNIZED + detail


def test_readable_bodies_decode_and_null_is_an_empty_object() -> None:
    assert decode_object(b"null", "application/json", "Namespace") == {}
    assert decode_object(b"", "application/yaml", "Namespace") == {}
    yaml_body = b"metadata:\n  name: x\n  creationTimestamp: 2026-11-23T12:30:47Z\n  labels: {1: one}\n"
    assert decode_object(yaml_body, "application/yaml", "Namespace") == {
        "metadata": {"name": "x", "creationTimestamp": "2026-11-23T12:30:47Z", "labels": {"1": "one"}}}
    assert decode_object(b'{"a": "\xff"}', "application/json", "Namespace") == {"a": "\ufffd"}  # Go reads it


def test_delete_options_without_a_kind_keep_the_bare_message() -> None:
    with pytest.raises(APIError) as caught:
        decode_object(b"{", "application/json")
    assert caught.value.message == "couldn't get version/kind; json parse error: unexpected end of JSON input"


@pytest.mark.parametrize(("body", "message"), [
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    (b'{"a":1}x', "invalid character 'x' after top-level value"),
    (b"[1 2]", "invalid character '2' after array element"),
    (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    (b"01", "invalid character '1' after top-level value"),
    (b"1.", "invalid character ' ' after decimal point in numeric literal"),  # Go feeds a space at the end
    (b"1e+", "invalid character ' ' in exponent of numeric literal"),
    (b"-x", "invalid character 'x' in numeric literal"),
    (b"tru", "invalid character ' ' in literal true (expecting 'e')"),
    (b"nulL", "invalid character 'L' in literal null (expecting 'l')"),
    (b'"\\q"', "invalid character 'q' in string escape code"),
    (b'"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
    (b'"a\tb"', "invalid character '\\t' in string literal"),
    (b"'x'", "invalid character '\\'' looking for beginning of value"),
    (b"\xc3\xa9", "invalid character '\u00c3' looking for beginning of value"),
    (b'"open', "unexpected end of JSON input"),
    (b'{"a": [1, {"b": null}], "c": -1.5e-3}', None),
])
def test_json_syntax_errors_read_as_gos(body: bytes, message: str | None) -> None:
    assert syntax_error(body) == message


def test_body_summaries_are_kubes() -> None:
    assert summarize_body(b"") == "<empty>"
    assert summarize_body(b'{"a":1}') == '{"a":1}'
    assert summarize_body(b"x" * 31) == "78" * 30 + " ..."
