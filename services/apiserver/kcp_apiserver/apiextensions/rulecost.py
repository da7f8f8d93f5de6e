"""kube's estimated-cost limits on a CRD schema's x-kubernetes-validations, checked when the CRD is written.

Each rule (and messageExpression) is estimated by `celcost` with the schema's size bounds, then multiplied
by how many times it may run in one object: the product of the maxItems/maxProperties of the lists and
maps above it, or, under an unbounded one, as many of its values as a 3 MiB request could hold. An
expression over kube's StaticEstimatedCostLimit is refused at its `rule`/`messageExpression` path; a
schema whose expressions add up past StaticEstimatedCRDCostLimit is refused at `openAPIV3Schema`, naming
the (up to four) expressions that contribute at least 1% of that limit. Messages are kube's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.apiextensions import celast
from kcp_apiserver.apiextensions.celcost import MAX_REQUEST_BYTES, SchemaSizes, Shape, estimate, shape_of
from kcp_apiserver.apiextensions.celrules import CompileError, compile_expression
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden

STATIC_ESTIMATED_COST_LIMIT = 10_000_000  # kube's StaticEstimatedCostLimit, per expression
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000  # kube's StaticEstimatedCRDCostLimit, per schema
_MOST_EXPENSIVE = 4
_UNBOUNDED = (1 << 64) - 1


@dataclass(slots=True)
class _Total:
    total: int = 0
    most_expensive: list[tuple[int, str]] = field(default_factory=list)

    def observe(self, path: str, cost: int) -> None:
        self.total = min(self.total + cost, _UNBOUNDED)
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT // 100:
            return
        self.most_expensive.append((cost, path))
        self.most_expensive.sort(key=lambda entry: -entry[0])
        del self.most_expensive[_MOST_EXPENSIVE:]


def estimated_cost_errors(schema: Any, path: str) -> list[Cause]:
    """The causes kube gives for a schema (at `path`, ending in openAPIV3Schema) whose rules cost too much."""
    if not isinstance(schema, dict):
        return []
    causes: list[Cause] = []
    total = _Total()
    _walk(schema, shape_of(schema, resource_root=True), path, 1, total, causes, root=True)
    if total.total > STATIC_ESTIMATED_CRD_COST_LIMIT:
        causes += [forbidden(p, "contributed to estimated rule & messageExpression cost total exceeding cost limit "
                                "for entire OpenAPIv3 schema") for _, p in total.most_expensive]
        causes.append(forbidden(path, cost_error_message(
            "x-kubernetes-validations estimated rule & messageExpression cost total for entire OpenAPIv3 schema",
            total.total, STATIC_ESTIMATED_CRD_COST_LIMIT)))
    return causes


def cost_error_message(what: str, cost: int, limit: int) -> str:
    """kube's getCostErrorMessage."""
    factor = cost / limit
    if factor > 100:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{what} exceeds budget by factor of {text} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")


def _walk(schema: dict[str, Any], shape: Shape, path: str, cardinality: int | None, total: _Total,
          causes: list[Cause], root: bool = False) -> None:
    """Each node's rules, then its children with the cardinality their parent gives them."""
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        if not isinstance(rule, dict):
            continue
        times = cardinality if cardinality is not None else MAX_REQUEST_BYTES // (shape.min_size + 1)
        for part, what in (("rule", "estimated rule cost"), ("messageExpression", "estimated messageExpression cost")):
            text = rule.get(part)
            if not isinstance(text, str) or not text.strip():
                continue
            try:
                ast = celast.parse(compile_expression(text).serialize())
            except CompileError:
                continue  # reported as a compilation failure
            cost = estimate(ast, SchemaSizes(shape)).max
            scaled = 0 if cost == 0 else min(cost * (times if part == "rule" else 1), _UNBOUNDED)
            part_path = f"{path}.x-kubernetes-validations[{i}].{part}"
            if scaled > STATIC_ESTIMATED_COST_LIMIT:
                causes.append(forbidden(part_path, cost_error_message(what, scaled, STATIC_ESTIMATED_COST_LIMIT)))
            total.observe(part_path, scaled)
    extra = schema.get("additionalProperties")
    props = schema.get("properties") or {}
    if isinstance(extra, dict) and not props and shape.elem is not None:
        _walk(extra, shape.elem, f"{path}.additionalProperties", _times(cardinality, schema, "maxProperties"),
              total, causes)
    for name, prop in props.items():
        if isinstance(prop, dict) and name in shape.fields:
            _walk(prop, shape.fields[name], f"{path}.properties[{name}]", cardinality, total, causes)
    items = schema.get("items")
    if isinstance(items, dict) and shape.elem is not None:
        _walk(items, shape.elem, f"{path}.items", _times(cardinality, schema, "maxItems"), total, causes)


def _times(cardinality: int | None, schema: dict[str, Any], limit_key: str) -> int | None:
    """kube's MultiplyByElementCost: a list or map multiplies its children by its bound, or unbounds them."""
    limit = schema.get(limit_key)
    if cardinality is None or not isinstance(limit, int):
        return None
    return min(cardinality * max(limit, 0), _UNBOUNDED)
