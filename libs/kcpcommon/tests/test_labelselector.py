"""metav1.LabelSelector matching (kcpcommon/labelselector.py), as kube's LabelSelectorAsSelector."""

from __future__ import annotations

import pytest

from kcpcommon.labelselector import selector_matches


def test_match_labels_and_every_expression_operator() -> None:
    labels = {"region": "eu", "tier": "gold"}
    assert selector_matches(None, labels) and selector_matches({}, {})  # empty selects everything
    assert selector_matches({"matchLabels": {"region": "eu"}}, labels)
    assert not selector_matches({"matchLabels": {"region": "us"}}, labels)
    assert selector_matches({"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu", "us"]}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, labels)
    assert selector_matches({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]},
                                labels)
    assert selector_matches({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, labels)
    assert not selector_matches({"matchLabels": {"region": "eu"},
                                 "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, labels)


def test_an_unknown_operator_is_an_error_not_a_match() -> None:
    with pytest.raises(ValueError, match='"Gt" is not a valid label selector operator'):
        selector_matches({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, {"a": "2"})
