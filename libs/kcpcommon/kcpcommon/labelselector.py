"""metav1.LabelSelector matched against labels, as kube's LabelSelectorAsSelector does, for the controllers
that select objects by a selector in a spec (a Location's SyncTargets). An empty selector selects
everything; the API server has its own parser, which also reads the `labelSelector` query string."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether `labels` satisfy every matchLabels pair and matchExpression; ValueError on an unknown operator."""
    labels = labels or {}
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        operator, key = expr.get("operator"), expr.get("key", "")
        values = list(expr.get("values") or [])
        if operator not in OPERATORS:
            raise ValueError(f'"{operator}" is not a valid label selector operator')
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True
