"""JSON type names and equality: booleans are not numbers, 1 is 1.0."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery.jsonvalues import json_copy, json_equal, json_type


@pytest.mark.parametrize(("value", "name"), [
    (None, "null"), (True, "boolean"), (False, "boolean"), (0, "integer"), (1.5, "number"), (1.0, "number"),
    ("", "string"), ([], "array"), ({}, "object"),
])
def test_json_type_names_as_openapi_does(value: Any, name: str) -> None:
    assert json_type(value) == name


@pytest.mark.parametrize(("a", "b", "equal"), [
    (True, 1, False), (False, 0, False), (True, True, True), (1, 1.0, True), ("1", 1, False),
    ({"a": [1, True]}, {"a": [1.0, True]}, True), ({"a": [1, True]}, {"a": [1, 1]}, False),
    ({"a": 1}, {"a": 1, "b": None}, False), ([1, 2], [2, 1], False), ([1], [1, 1], False),
    ({}, [], False), ([], None, False), (None, None, True),
])
def test_json_equal_is_json_equality_not_pythons(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_json_copy_is_deep_and_keeps_every_json_type_apart() -> None:
    original = {"a": [1, 1.0, True, None, "s", {"b": [False, 0, 0.5, -(2**63)]}], "c": {}}
    copied = json_copy(original)
    assert copied == original and json_equal(copied, original)
    assert [type(v) for v in copied["a"][:4]] == [int, float, bool, type(None)]
    copied["a"][5]["b"].append(1)
    copied["c"]["new"] = 1
    assert original["a"][5]["b"] == [False, 0, 0.5, -(2**63)] and original["c"] == {}  # nothing shared


def test_json_copy_falls_back_to_deepcopy_for_what_orjson_cannot_write() -> None:
    original = {"big": 2**70, "nested": [{"x": 2**64}]}  # beyond 64 bits: orjson refuses, deepcopy does not
    copied = json_copy(original)
    assert copied == original and copied["nested"][0] is not original["nested"][0]
