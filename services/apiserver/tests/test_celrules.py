"""CEL rules (x-kubernetes-validations) on custom resources: compile, evaluate, report as kube does."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.celrules import compile_rules, evaluate, rule_errors


def schema(**spec: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", **spec}}}


RANGE = schema(properties={"min": {"type": "integer"}, "max": {"type": "integer"}},
               **{"x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min must not exceed max"}]})


def messages(tree: Any, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in evaluate(tree, obj, old)]


def test_a_schema_without_rules_has_no_rule_tree() -> None:
    assert compile_rules(schema(properties={"a": {"type": "string"}})) is None


def test_a_failing_rule_names_the_node_its_type_and_its_message() -> None:
    tree = compile_rules(RANGE)
    assert messages(tree, {"spec": {"min": 1, "max": 3}}) == []
    assert messages(tree, {"spec": {"min": 5, "max": 3}}) == [
        ("spec", "FieldValueInvalid", 'Invalid value: "object": min must not exceed max')]


def test_without_a_message_kube_says_failed_rule() -> None:
    tree = compile_rules(schema(properties={"name": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self.startsWith('web-')"}]}}))
    assert messages(tree, {"spec": {"name": "db"}}) == [
        ("spec.name", "FieldValueInvalid", "Invalid value: \"string\": failed rule: self.startsWith('web-')")]


def test_message_expression_reason_and_field_path() -> None:
    tree = compile_rules(schema(properties={"replicas": {"type": "integer"}}, **{"x-kubernetes-validations": [
        {"rule": "self.replicas < 10", "messageExpression": "'too many: ' + string(self.replicas)",
         "reason": "FieldValueForbidden", "fieldPath": ".replicas"}]}))
    assert messages(tree, {"spec": {"replicas": 12}}) == [("spec.replicas", "FieldValueForbidden",
                                                           "Forbidden: too many: 12")]


def test_rules_run_on_each_list_item_and_map_value() -> None:
    tree = compile_rules(schema(properties={
        "ports": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self > 0", "message": "must be positive"}]}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self.size() <= 3", "message": "too long"}]}}}))
    found = messages(tree, {"spec": {"ports": [80, -1, 0], "labels": {"a": "ok", "b": "toolong"}}})
    assert [f for f, _, _ in found] == ["spec.ports[1]", "spec.ports[2]", "spec.labels[b]"]


def test_transition_rules_run_only_on_update_with_the_old_value() -> None:
    tree = compile_rules(schema(properties={"mode": {"type": "string", "x-kubernetes-validations": [
        {"rule": "self == oldSelf", "message": "mode is immutable"}]}}))
    assert messages(tree, {"spec": {"mode": "a"}}) == []  # create: no old value
    assert messages(tree, {"spec": {"mode": "a"}}, {"spec": {"mode": "a"}}) == []
    assert messages(tree, {"spec": {"mode": "b"}}, {"spec": {"mode": "a"}}) == [
        ("spec.mode", "FieldValueInvalid", 'Invalid value: "string": mode is immutable')]
    assert messages(tree, {"spec": {"mode": "b"}}, {"spec": {}}) == []  # newly set: nothing to compare


def test_map_list_items_are_correlated_with_their_old_selves_by_key() -> None:
    tree = compile_rules(schema(properties={"ports": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "x-kubernetes-validations": [
            {"rule": "self.port >= oldSelf.port", "message": "ports only grow"}]}}}))
    old = {"spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 90}]}}
    new = {"spec": {"ports": [{"name": "b", "port": 91}, {"name": "a", "port": 70}, {"name": "c", "port": 1}]}}
    assert [f for f, _, _ in messages(tree, new, old)] == ["spec.ports[1]"]


def test_an_evaluation_error_is_reported_not_ignored() -> None:
    tree = compile_rules(schema(**{"x-kubernetes-validations": [{"rule": "self.missing > 1"}]}))
    [(field, reason, message)] = messages(tree, {"spec": {}})
    assert field == "spec" and reason == "FieldValueInvalid" and "evaluation error" in message


def test_rules_that_do_not_compile_are_named() -> None:
    assert rule_errors({"rule": "self.x <= self.y"}) == []
    [(field, message)] = rule_errors({"rule": "self.x >"})
    assert field == "rule" and message.startswith("compilation failed: ERROR: <input>:1:9: Syntax error")
    [(field, message)] = rule_errors({"rule": "true", "messageExpression": "nosuchfn(self)"})
    assert field == "messageExpression" and "nosuchfn" in message
    assert rule_errors({"rule": "true", "optionalOldSelf": True})[0][0] == "optionalOldSelf"


def test_a_message_expression_that_fails_falls_back_to_the_message() -> None:
    tree = compile_rules(schema(**{"x-kubernetes-validations": [
        {"rule": "self.n > 5", "message": "n is too small", "messageExpression": "self.missing"}]}))
    assert messages(tree, {"spec": {"n": 1}}) == [("spec", "FieldValueInvalid", 'Invalid value: "object": n is too small')]


RESCAN = "self.all(x, !(x + 1000000000 in self))"  # each iteration reads the whole list again
NO_RESCAN = "self.all(x, x >= 0)"


def list_rules(*rules: str) -> dict[str, Any]:
    return schema(properties={"l": {"type": "array", "items": {"type": "integer"},
                                    "x-kubernetes-validations": [{"rule": r} for r in rules]}})


def test_a_rule_that_rereads_its_value_per_iteration_stops_at_kube_per_call_cost_limit() -> None:
    """20,000 integers made this rule hold the event loop for 10 s; kube refuses it past 1,000,000."""
    tree = compile_rules(list_rules(RESCAN, "self.size() > 100000"))
    assert messages(tree, {"spec": {"l": list(range(20_000))}}) == [
        ("spec.l", "FieldValueInvalid", "Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': "
         f"no further validation rules will be run due to call cost exceeds limit for rule: {RESCAN}")]


def test_rules_within_the_cost_limit_still_run() -> None:
    tree = compile_rules(list_rules(RESCAN, NO_RESCAN))
    assert messages(tree, {"spec": {"l": list(range(900))}}) == []
    assert messages(tree, {"spec": {"l": [-1]}}) == [
        ("spec.l", "FieldValueInvalid", f'Invalid value: "array": failed rule: {NO_RESCAN}')]


def test_a_macro_body_naming_only_a_scalar_of_self_is_not_a_rescan() -> None:
    tree = compile_rules(schema(properties={"name": {"type": "string"}, "items": {"type": "array", "items": {
        "type": "string"}}}, **{"x-kubernetes-validations": [{"rule": "self.items.all(x, x != self.name)"}]}))
    assert messages(tree, {"spec": {"name": "n", "items": [f"i{i}" for i in range(3000)]}}) == []


def test_a_message_expression_over_the_cost_limit_falls_back_to_the_message() -> None:
    rule = {"rule": NO_RESCAN, "message": "negative",
            "messageExpression": "string(self.map(x, self.filter(y, y > x).size()).size())"}
    tree = compile_rules(schema(properties={"l": {"type": "array", "items": {"type": "integer"},
                                                  "x-kubernetes-validations": [rule]}}))
    assert messages(tree, {"spec": {"l": [-1, *range(5000)]}}) == [
        ("spec.l", "FieldValueInvalid", 'Invalid value: "array": negative')]
