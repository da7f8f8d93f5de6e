"""JSON type names and equality: booleans are not numbers, 1 is 1.0."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery.jsonvalues import json_equal, json_type


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
