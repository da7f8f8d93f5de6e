"""x-kubernetes-validations: a CRD schema's CEL rules, compiled once and run on every write.

cel-expr-python (the CEL project's own C++ runtime for Python) evaluates them. Rules are compiled
with `self` and `oldSelf` as dynamic values: a syntax error or an unknown function refuses the CRD,
as kube does, but a rule naming a field the schema lacks fails when it runs rather than when the
CRD is created (kube type-checks rules against the schema). Transition rules, those that name
`oldSelf`, run only on updates where the old value can be found, as kube does. kube's
Kubernetes-specific libraries (quantity, url, ip, isSorted...) are not here.

Cost, as kube counts it (`celcost`). The C++ runtime holds the GIL and counts no cost, so before a rule
runs its cost is estimated: with the schema's bounds when the CRD is compiled, and, when that bound is
not small, again with the sizes of the object at hand. A rule over kube's per-call limit (1,000,000) is
not run and the write is refused with kube's words, as is a rule that would overrun what is left of
kube's budget for one object (10,000,000); in both cases no further rule runs. Within the cost, a rule
that needs more than the C++ runtime's 10,000 comprehension iterations is run again by `celloops`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apiextensions import celast
from kcp_apiserver.apiextensions.celcost import SchemaSizes, ValueSizes, estimate, shape_of
from kcp_apiserver.apiextensions.celloops import ITERATION_BUDGET_EXCEEDED, CelError, Driver, builds_lists
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required
from kcp_apiserver.registry.resource import Obj

OLD_SELF = re.compile(r"\boldSelf\b")
PER_CALL_LIMIT = 1_000_000  # kube's celconfig.PerCallLimit
RUNTIME_COST_BUDGET = 10_000_000  # kube's celconfig.RuntimeCELCostBudget, for all the rules of one object
# a rule whose schema-bound cost is at most this is charged that bound, without measuring the object
_CHEAP = 10_000
_OUT_OF_COST = ("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to "
                "call cost exceeds limit for rule: {}")
_OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
REASONS = ("FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate")


class CompileError(ValueError):
    """A rule or message expression CEL refuses."""


@functools.lru_cache(maxsize=1)
def _env() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_strings

    return cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN},
                      extensions=[ext_strings.ExtStrings()])


@functools.lru_cache(maxsize=16384)
def compile_expression(text: str) -> Any:
    """The compiled program of one expression, shared by every schema that holds it."""
    try:
        return _env().compile(text)
    except RuntimeError as exc:
        raise CompileError(str(exc).replace("INVALID_ARGUMENT: ", "", 1).strip()) from None


def rule_errors(rule: Obj) -> list[tuple[str, str]]:
    """(field, message) for each part of a rule that does not compile: what a CRD is refused for."""
    out = []
    for field in ("rule", "messageExpression"):
        text = rule.get(field)
        if isinstance(text, str) and text.strip():
            try:
                compile_expression(text)
            except CompileError as exc:
                out.append((field, f"compilation failed: {exc}"))
    if rule.get("optionalOldSelf") is True:
        out.append(("optionalOldSelf", "optionalOldSelf is not supported by this server"))
    return out


@dataclass(frozen=True, slots=True)
class _Expression:
    """A rule or messageExpression with its cost bound under the schema (0 for an empty one)."""

    text: str
    bound: int

    @classmethod
    def of(cls, text: str, schema: Any, root: bool) -> _Expression:
        ast = _checked(text) if text.strip() else None
        return cls(text, 0 if ast is None else estimate(ast, SchemaSizes(shape_of(schema, root))).max)


@dataclass(frozen=True, slots=True)
class _Rule:
    rule: _Expression
    message: str
    message_expression: _Expression
    reason: str
    field_path: str
    transition: bool

    @property
    def text(self) -> str:
        return self.rule.text


@dataclass(slots=True)
class _Node:
    """The rules of one schema node and the children that hold rules below it."""

    rules: tuple[_Rule, ...]
    type_name: str
    props: dict[str, _Node]
    additional: _Node | None
    items: _Node | None
    list_type: str
    map_keys: tuple[str, ...]


def compile_rules(schema: Any, root: bool = True) -> _Node | None:
    """The rule tree of a schema, or None when no node carries x-kubernetes-validations."""
    if not isinstance(schema, dict):
        return None
    rules = tuple(
        _Rule(rule=_Expression.of(r["rule"], schema, root), message=(r.get("message") or "").strip(),
              message_expression=_Expression.of(r.get("messageExpression") or "", schema, root),
              reason=r.get("reason") or "FieldValueInvalid", field_path=r.get("fieldPath") or "",
              transition=bool(OLD_SELF.search(r["rule"])))
        for r in schema.get("x-kubernetes-validations") or [] if isinstance(r, dict) and r.get("rule"))
    props = {}
    for name, sub in (schema.get("properties") or {}).items():
        child = compile_rules(sub, root=isinstance(sub, dict) and bool(sub.get("x-kubernetes-embedded-resource")))
        if child is not None:
            props[name] = child
    extra = schema.get("additionalProperties")
    additional = compile_rules(extra, root=False) if isinstance(extra, dict) else None
    items = compile_rules(schema.get("items"), root=False)
    if not (rules or props or additional or items):
        return None
    type_name = schema.get("type") or ("integer-or-string" if schema.get("x-kubernetes-int-or-string") else "")
    return _Node(rules, type_name, props, additional, items, schema.get("x-kubernetes-list-type") or "atomic",
                 tuple(schema.get("x-kubernetes-list-map-keys") or ()))


@functools.lru_cache(maxsize=16384)
def _checked(text: str) -> celast.CheckedAst | None:
    """The checked AST of an expression, None if it does not compile (it then fails when it runs)."""
    try:
        return celast.parse(compile_expression(text).serialize())
    except CompileError:
        return None


_MISSING = object()


class _OutOfCost(Exception):
    """kube runs no further rule once one exceeds the per-call limit or the object's budget."""


@dataclass(slots=True)
class _Budget:
    remaining: int = RUNTIME_COST_BUDGET


def evaluate(node: _Node, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """Run every rule over an object (and, on update, its old version); one cause per failed rule."""
    causes: list[Cause] = []
    try:
        _check(node, obj, _MISSING if old is None else old, "", causes, _Budget())
    except _OutOfCost:
        pass
    return causes


def _cost(expression: _Expression, data: dict[str, Any]) -> int:
    """What running the expression on this data is charged: its schema bound if small, else its estimate on
    the data's own sizes."""
    if expression.bound <= _CHEAP:
        return expression.bound
    ast = _checked(expression.text)
    return 0 if ast is None else estimate(ast, ValueSizes(data)).max


def _check(node: _Node, value: Any, old: Any, path: str, causes: list[Cause], budget: _Budget) -> None:
    if value is None:
        return
    if node.rules and budget.remaining <= 0:
        causes.append(invalid(path, node.type_name, _OUT_OF_BUDGET))
        raise _OutOfCost
    for rule in node.rules:
        if rule.transition and old is _MISSING:
            continue
        data = {"self": value, "oldSelf": old} if rule.transition else {"self": value}
        cost = _cost(rule.rule, data)
        if cost > PER_CALL_LIMIT:
            causes.append(invalid(path, node.type_name, _OUT_OF_COST.format(rule.message or rule.text.strip())))
            raise _OutOfCost
        if cost > budget.remaining:
            causes.append(invalid(path, node.type_name, _OUT_OF_BUDGET))
            raise _OutOfCost
        budget.remaining -= cost
        outcome, is_error = _run(rule.text, data)
        if outcome is True:
            continue
        if outcome is not False:  # an evaluation error, or a rule that is not a predicate
            detail = outcome if is_error else f"must evaluate to a bool, not {outcome!r}"
            causes.append(invalid(path, node.type_name, f"{rule.text.strip()}: evaluation error: {detail}"))
            continue
        causes.append(_failure(rule, node.type_name, _join(path, rule.field_path), _message(rule, data, budget)))
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for name, child in node.props.items():
            if name in value:
                _check(child, value[name], old_map.get(name, _MISSING), _join(path, name), causes, budget)
        if node.additional is not None:
            for name, sub in value.items():
                if name not in node.props:
                    _check(node.additional, sub, old_map.get(name, _MISSING), f"{path}[{name}]", causes, budget)
    elif isinstance(value, list) and node.items is not None:
        correlate = _correlator(node, old)
        for i, item in enumerate(value):
            _check(node.items, item, correlate(item), f"{path}[{i}]", causes, budget)


def _correlator(node: _Node, old: Any):  # type: ignore[no-untyped-def]
    """kube correlates list items with their old selves only in map lists (by key) and sets (by value)."""
    if not isinstance(old, list) or node.list_type == "atomic":
        return lambda item: _MISSING
    if node.list_type == "map":
        by_key = {tuple(o.get(k) for k in node.map_keys): o for o in old if isinstance(o, dict)}
        return lambda item: by_key.get(tuple(item.get(k) for k in node.map_keys), _MISSING) \
            if isinstance(item, dict) else _MISSING
    return lambda item: item if item in old else _MISSING


def _run(expression: str, data: dict[str, Any]) -> tuple[Any, bool]:
    """The expression's value, and whether that value is an evaluation error (CEL returns errors as values)."""
    try:
        if _builds_lists(expression):
            raise RuntimeError(ITERATION_BUDGET_EXCEEDED)  # map()/filter() are built in chunks
        result = compile_expression(expression).eval(data=data)
        return result.value(), result.type().name() == "ERROR"
    except Exception as exc:
        if ITERATION_BUDGET_EXCEEDED in str(exc) and _checked(expression) is not None:
            value = _driver(expression).run(data)
            return (value.message, True) if isinstance(value, CelError) else (value, False)
        return str(exc), True


@functools.lru_cache(maxsize=16384)
def _builds_lists(expression: str) -> bool:
    """Whether the expression holds a map() or filter() (decided once per expression, not per object)."""
    ast = _checked(expression)
    return ast is not None and builds_lists(ast)


@functools.lru_cache(maxsize=1024)
def _driver(expression: str) -> Driver:
    """The split runner of an expression, with the C++ programs of its parts, kept across writes."""
    ast = _checked(expression)
    assert ast is not None
    return Driver(_env(), ast)


def _message(rule: _Rule, data: dict[str, Any], budget: _Budget) -> str:
    """messageExpression's string if it yields one (not an error, within the cost limits), else message, else
    kube's default."""
    expression = rule.message_expression
    if expression.text:
        cost = _cost(expression, data)
        if cost <= min(PER_CALL_LIMIT, budget.remaining):
            budget.remaining -= cost
            value, is_error = _run(expression.text, data)
            if not is_error and isinstance(value, str) and value.strip():
                return value.strip()
    return rule.message or f"failed rule: {rule.text.strip()}"


def _failure(rule: _Rule, type_name: str, field: str, message: str) -> Cause:
    if rule.reason == "FieldValueForbidden":
        return forbidden(field, message)
    if rule.reason == "FieldValueRequired":
        return required(field, message)
    if rule.reason == "FieldValueDuplicate":
        return Cause("FieldValueDuplicate", f"Duplicate value: {message}", field)
    return invalid(field, type_name, message)


def _join(path: str, child: str) -> str:
    if not child:
        return path
    if child.startswith((".", "[")):
        return (path + child).lstrip(".")
    return f"{path}.{child}" if path else child
