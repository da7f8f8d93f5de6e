"""A list's options are checked as kube's ValidateListOptions checks them: 422 on ListOptions.meta.k8s.io."""

from __future__ import annotations

import pytest
from multidict import MultiDict

from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.endpoints.listoptions import validate_list as validate_list_options


def invalid(**query: str) -> APIError:
    with pytest.raises(APIError) as caught:
        validate_list_options(MultiDict(query))
    assert (caught.value.code, caught.value.reason) == (422, "Invalid")
    assert caught.value.details["kind"] == "ListOptions" and caught.value.details["group"] == "meta.k8s.io"
    return caught.value


def test_an_unknown_resource_version_match_is_not_supported() -> None:
    error = invalid(resourceVersion="5", resourceVersionMatch="Bogus")
    assert error.message == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: '
                             '"Bogus": supported values: "Exact", "NotOlderThan", ""')
    assert error.details["causes"] == [{"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
                                        "message": 'Unsupported value: "Bogus": supported values: "Exact", '
                                                   '"NotOlderThan", ""'}]


@pytest.mark.parametrize(("query", "detail"), [
    ({"resourceVersionMatch": "Exact"}, "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ({"resourceVersionMatch": "NotOlderThan", "resourceVersion": "1", "continue": "abc"},
     "resourceVersionMatch is forbidden when continue is provided"),
    ({"resourceVersionMatch": "Exact", "resourceVersion": "0"},
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
])
def test_resource_version_match_needs_a_resource_version_to_match(query: dict[str, str], detail: str) -> None:
    error = invalid(**query)
    assert error.message == f'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: {detail}'


def test_every_broken_rule_is_one_cause() -> None:
    error = invalid(resourceVersionMatch="exact", sendInitialEvents="true")
    assert [c["message"] for c in error.details["causes"]] == [
        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        'Unsupported value: "exact": supported values: "Exact", "NotOlderThan", ""',
        "Forbidden: sendInitialEvents is forbidden for list"]
    assert error.message.startswith('ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: ')


@pytest.mark.parametrize("query", [{}, {"resourceVersion": "0"}, {"resourceVersion": "7", "resourceVersionMatch": "Exact"},
                                   {"resourceVersion": "0", "resourceVersionMatch": "NotOlderThan"},
                                   {"limit": "5", "continue": "token"}])
def test_valid_options_pass(query: dict[str, str]) -> None:
    validate_list_options(MultiDict(query))
