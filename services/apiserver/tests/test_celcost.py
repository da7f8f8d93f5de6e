"""CEL cost as kube counts it: estimated when a CRD is written, charged when its rules run."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apiextensions import celast
from kcp_apiserver.apiextensions.celcost import SchemaSizes, estimate, shape_of
from kcp_apiserver.apiextensions.celrules import compile_expression, compile_rules, evaluate
from kcp_apiserver.apiextensions.validation import validate_crd

Obj = dict[str, Any]
NESTED = "self.items.all(a, self.items.all(b, a.size() <= 100))"
HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
        "are declared)")
SPEC = "spec.validation.openAPIV3Schema"  # one schema for every version: kube hoists it here


def crd(spec_schema: Obj) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": spec_schema}}}}]},
        "status": {"storedVersions": ["v1"]},
    }


def bounded_items(rule: str, max_items: int | None = 100) -> Obj:
    items: Obj = {"type": "array", "items": {"type": "string"}}
    if max_items is not None:
        items["maxItems"] = max_items
    return {"type": "object", "properties": {"items": items}, "x-kubernetes-validations": [{"rule": rule}]}


def causes_of(tree: Any, obj: Obj) -> list[tuple[str, str]]:
    return [(c.field, c.message) for c in evaluate(tree, obj)]


STRINGS = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 10}, "min": {"type": "integer"}, "max": {"type": "integer"},
    "items": {"type": "array", "maxItems": 100, "items": {"type": "string"}},
    "text": {"type": "string", "maxLength": 2500}}}


@pytest.mark.parametrize(("rule", "cost"), [
    ("self.min <= self.max", 5),  # two selects of two units each, one comparison of scalars
    (NESTED, 60_603),  # 3 + 100 * (2 + 1 + (3 + 100 * (2 + 4)))
    ("self.text.contains('x')", 1_002),  # 2,500 characters are 10,000 bytes: 1,000 x 1, plus the select
    ("self.name.lowerAscii() == 'abc'", 7),  # 40 bytes traversed, then 3 characters compared
    ("self.items.exists(s, s == 'a')", 3 + 100 * (3 + 3)),
])
def test_costs_follow_cel_go_and_kube_library_estimates(rule: str, cost: int) -> None:
    ast = celast.parse(compile_expression(rule).serialize())
    assert estimate(ast, SchemaSizes(shape_of(STRINGS))).max == cost


def test_two_nested_alls_over_100_items_are_accepted_and_run() -> None:
    """kube estimates this rule at 60,603: within its limits, and past the C++ runtime's 10,000 iterations."""
    schema = bounded_items(NESTED)
    assert validate_crd(crd(schema)) == []
    tree = compile_rules({"type": "object", "properties": {"spec": schema}})
    valid = [f"item-{i}" for i in range(100)]
    assert causes_of(tree, {"spec": {"items": valid}}) == []
    too_long = [*valid[:99], "x" * 101]
    assert causes_of(tree, {"spec": {"items": too_long}}) == [
        ("spec", f'Invalid value: "object": failed rule: {NESTED}')]


def test_nested_comprehensions_past_the_iteration_budget_keep_cel_semantics() -> None:
    tree = compile_rules({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"items": {"type": "array", "maxItems": 200, "items": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "self.items.exists(a, self.items.exists(b, a + b == 'i199i198'))", "message": "exists"},
            {"rule": "self.items.map(a, self.items.filter(b, b == a).size()).all(n, n == 1)", "message": "unique"},
            {"rule": "self.items.all(a, self.items.all(b, a != 'i7' || b.size() > 9))", "message": "deciding"},
        ]}}})
    items = [f"i{i}" for i in range(200)]
    assert causes_of(tree, {"spec": {"items": items}}) == [("spec", 'Invalid value: "object": deciding')]
    assert [m for _, m in causes_of(tree, {"spec": {"items": ["x", "x", *items[2:198]]}})] == [
        'Invalid value: "object": exists', 'Invalid value: "object": unique', 'Invalid value: "object": deciding']


def test_one_comprehension_over_30000_items_runs_in_chunks_with_kube_semantics() -> None:
    """Within kube's per-call cost, three times the C++ runtime's iterations."""
    tree = compile_rules({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "integer"},
                                                                 "x-kubernetes-validations": [
        {"rule": "self.all(x, x >= 0)", "message": "all"},
        {"rule": "self.exists_one(x, x == 29999)", "message": "one"},
        {"rule": "self.filter(x, x % 2 == 0).map(x, x + 1).size() == 15000", "message": "halves"}]}}})
    assert causes_of(tree, {"l": list(range(30_000))}) == []
    assert causes_of(tree, {"l": [*range(29_999), 29_998]})[-1] == ("l", 'Invalid value: "array": halves')
    assert [m for _, m in causes_of(tree, {"l": [*range(29_999), -1]})] == [
        'Invalid value: "array": all', 'Invalid value: "array": one']


def test_a_rule_over_kube_per_expression_estimate_is_refused_with_kube_message() -> None:
    causes = validate_crd(crd(bounded_items("self.items.all(a, self.items.all(b, a == b))", max_items=None)))
    assert [(c.reason, c.field, c.message) for c in causes] == [
        ("FieldValueForbidden", f"{SPEC}.properties[spec].x-kubernetes-validations[0].rule",
         f"Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}"),
        ("FieldValueForbidden", f"{SPEC}.properties[spec].x-kubernetes-validations[0].rule",
         "Forbidden: contributed to estimated rule & messageExpression cost total exceeding cost limit for entire "
         "OpenAPIv3 schema"),
        ("FieldValueForbidden", SPEC, "Forbidden: x-kubernetes-validations estimated rule & messageExpression cost "
                                      f"total for entire OpenAPIv3 schema exceeds budget by factor of more than "
                                      f"100x {HINT}")]


def test_a_message_expression_over_the_estimate_is_refused_at_its_own_path() -> None:
    schema = bounded_items("true", max_items=None)
    schema["x-kubernetes-validations"][0]["messageExpression"] = "string(self.items.filter(a, self.items.exists(b, a == b)).size())"
    causes = validate_crd(crd(schema))
    assert (causes[0].field, causes[0].message) == (
        f"{SPEC}.properties[spec].x-kubernetes-validations[0].messageExpression",
        f"Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {HINT}")


def test_the_factor_is_printed_as_kube_prints_it() -> None:
    """9,000 strings of up to 2,500 characters, each searched (1,001 each): 9,009,000, under the 10M per-expression limit;
    at 11,000 strings 11,011,000, 1.1011x the limit."""
    def schema(max_items: int) -> Obj:
        return {"type": "object", "properties": {"names": {"type": "array", "maxItems": max_items, "items": {
            "type": "string", "maxLength": 2500, "x-kubernetes-validations": [{"rule": "self.contains('x')"}]}}}}
    assert validate_crd(crd(schema(9000))) == []
    [cause] = validate_crd(crd(schema(11000)))
    assert cause.field == f"{SPEC}.properties[spec].properties[names].items.x-kubernetes-validations[0].rule"
    assert cause.message == f"Forbidden: estimated rule cost exceeds budget by factor of 1.101100x {HINT}"


def test_rules_each_within_the_limit_are_refused_when_the_schema_total_exceeds_kube_per_crd_limit() -> None:
    props = {f"names{i}": {"type": "array", "maxItems": 9000, "items": {
        "type": "string", "maxLength": 2500, "x-kubernetes-validations": [{"rule": "self.contains('x')"}]}}
        for i in range(12)}
    causes = validate_crd(crd({"type": "object", "properties": props}))
    rule = f"{SPEC}.properties[spec].properties[names{{}}].items.x-kubernetes-validations[0].rule"
    assert [(c.field, c.message) for c in causes] == [
        *[(rule.format(i), "Forbidden: contributed to estimated rule & messageExpression cost total exceeding "
                           "cost limit for entire OpenAPIv3 schema") for i in range(4)],
        (SPEC, "Forbidden: x-kubernetes-validations estimated rule & messageExpression cost total for entire "
               f"OpenAPIv3 schema exceeds budget by factor of 1.081080x {HINT}")]


def test_rules_stop_when_the_object_runtime_budget_is_spent() -> None:
    """Each rule is charged ~960,000 (within the 1,000,000 per call) on 160,000 items: the eleventh would
    overrun kube's 10,000,000 per object, so it and every rule after it are not run."""
    rules = [{"rule": "self.exists(x, x >= 0)", "message": f"rule {i}"} for i in range(11)]
    tree = compile_rules({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-validations": rules},
        "m": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0"}]}}})
    assert causes_of(tree, {"l": [1] * 160_000, "m": -1}) == [
        ("l", 'Invalid value: "array": validation failed due to running out of cost budget, no further validation '
              "rules will be run")]
    assert causes_of(tree, {"l": [1] * 1000, "m": -1}) == [("m", 'Invalid value: "integer": failed rule: self > 0')]
