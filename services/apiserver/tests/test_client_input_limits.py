"""Limits on what a client may send: nesting depth, Go-like JSON numbers and strings, continue tokens."""

from __future__ import annotations

import base64

import orjson
import pytest

from kcp_apiserver.apimachinery import gojson
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.jsonvalues import MAX_DEPTH, exceeds_depth
from kcp_apiserver.apimachinery.validation import drop_malformed_meta
from kcp_apiserver.endpoints.wire import decode_object, dumps
from kcp_apiserver.registry.continuetoken import decode_continue, encode_continue


def nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def test_depth_counts_every_object_and_array_without_recursing() -> None:
    assert not exceeds_depth("x")
    assert not exceeds_depth(nested(MAX_DEPTH))
    assert exceeds_depth(nested(MAX_DEPTH + 1))
    assert exceeds_depth([[[]]], limit=2) and not exceeds_depth([[[]]], limit=3)
    assert exceeds_depth(nested(100_000))  # far beyond Python's recursion limit


def test_a_list_wrapping_an_object_stored_before_the_limit_still_encodes() -> None:
    deepest_storable_by_orjson = nested(253)  # 254 containers with the object itself: orjson's limit
    body = dumps({"items": [deepest_storable_by_orjson]})
    assert orjson.loads(body)["items"][0] == deepest_storable_by_orjson


def test_bodies_deeper_than_the_limit_are_kubes_unrecognized_object() -> None:
    text = b'{"kind":"ConfigMap","data":' + b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH + b"}"
    with pytest.raises(st.APIError) as err:
        decode_object(text, "application/json", "ConfigMap")
    assert err.value.code == 400
    assert "couldn't get version/kind; json parse error: exceeded max depth" in err.value.message


def test_json_orjson_refuses_is_read_as_go_reads_it() -> None:
    assert gojson.loads('{"s":"\\ud800x","n":18446744073709551616}', MAX_DEPTH) == {
        "s": "\ufffdx", "n": 1.8446744073709552e19}
    with pytest.raises(gojson.DecodeError, match="cannot unmarshal number 1e400 into Go value of type float64"):
        gojson.loads('{"n":1e400}', MAX_DEPTH)
    with pytest.raises(ValueError, match="NaN is not a JSON value"):
        gojson.loads('{"n":NaN}', MAX_DEPTH)


def test_malformed_custom_resource_metadata_fields_are_dropped() -> None:
    meta = {"name": "a", "labels": {"k": 1}, "annotations": {"k": "v"}, "generation": 2**64, "finalizers": ["f"],
            "ownerReferences": [{"uid": 1}], "managedFields": [{"manager": "m", "fieldsV1": {}}],
            "deletionGracePeriodSeconds": True}
    drop_malformed_meta(meta)
    assert meta == {"name": "a", "annotations": {"k": "v"}, "finalizers": ["f"],
                    "managedFields": [{"manager": "m", "fieldsV1": {}}]}


def _token(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def test_continue_tokens_round_trip_padded_or_not() -> None:
    token = encode_continue(42, "/registry/core/configmaps/admin/ns/b")
    assert "=" not in token
    assert decode_continue(token) == (42, "/registry/core/configmaps/admin/ns/b")
    padded = token + "=" * (-len(token) % 4)
    assert decode_continue(padded) == (42, "/registry/core/configmaps/admin/ns/b")
    assert decode_continue(_token('{"v":"meta.k8s.io/v1","rv":-1,"start":"/k"}')) == (0, "/k")


@pytest.mark.parametrize(("raw", "detail"), [
    ('{"v":"meta.k8s.io/v1","rv":9223372036854775808,"start":"/k"}',
     "json: cannot unmarshal number 9223372036854775808 into Go struct field continueToken.rv of type int64"),
    ('{"v":"meta.k8s.io/v1","rv":true,"start":"/k"}',
     "json: cannot unmarshal bool into Go struct field continueToken.rv of type int64"),
    ('{"v":1,"rv":5,"start":"/k"}', "json: cannot unmarshal number 1 into Go struct field continueToken.v of type string"),
    ('{"v":"meta.k8s.io/v1","rv":5,"start":"/a/../b"}', "/a/../b"),
    ('{"v":"meta.k8s.io/v1","rv":0,"start":"/k"}', "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"),
    ('{"v":"meta.k8s.io/v1","rv":5', "unexpected end of JSON input"),
    ("null", "server does not recognize this encoded version "),
])
def test_forged_continue_tokens_are_kubes_400(raw: str, detail: str) -> None:
    with pytest.raises(st.APIError) as err:
        decode_continue(_token(raw))
    assert (err.value.code, err.value.message) == (400, f"invalid continue token: continue key is not valid: {detail}")
