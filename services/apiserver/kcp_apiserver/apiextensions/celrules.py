"""x-kubernetes-validations: a CRD schema's CEL rules, compiled once and run on every write.

cel-expr-python (the CEL project's own C++ runtime for Python) evaluates them. Rules are compiled
with `self` and `oldSelf` as dynamic values: a syntax error or an unknown function refuses the CRD,
as kube does, but a rule naming a field the schema lacks fails when it runs rather than when the
CRD is created (kube type-checks rules against the schema). Transition rules, those that name
`oldSelf`, run only on updates where the old value can be found, as kube does. kube's cost
estimates and its Kubernetes-specific libraries (quantity, url, ip, isSorted...) are not here.

Cost. The C++ runtime stops a comprehension after ~10,000 iterations, but it holds the GIL throughout and
counts no other work, so `self.all(x, !(x + 1 in self))` over 20,000 integers (120 KiB) stalled the
server for 10 s. kube stops such a rule at its per-call cost limit (1,000,000). Here a rule whose
macro bodies (`all`, `exists`, `exists_one`, `map`, `filter`) name `self` or `oldSelf` is estimated
before it runs: iterations (the size of the value) times the size of each value those bodies name,
strings counted as kube counts them (a tenth of a unit per byte). Past the limit the rule is not run
and the write is refused with kube's words for a rule out of cost, and no further rule runs.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid, required
from kcp_apiserver.registry.resource import Obj

OLD_SELF = re.compile(r"\boldSelf\b")
PER_CALL_LIMIT = 1_000_000  # kube's celconfig.PerCallLimit
_MACRO_CALL = re.compile(r"\.\s*(?:all|exists_one|exists|map|filter)\s*\(")
_WHOLE_VALUE_REF = re.compile(r"\b(self|oldSelf)\b((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*)")
_OUT_OF_COST = ("'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to "
                "call cost exceeds limit for rule: {}")
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
class _Rule:
    text: str
    message: str
    message_expression: str
    reason: str
    field_path: str
    transition: bool
    rescans: tuple[tuple[str, tuple[str, ...]], ...]  # (variable, field path) each macro body names
    message_rescans: tuple[tuple[str, tuple[str, ...]], ...]  # the same for messageExpression


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


def compile_rules(schema: Any) -> _Node | None:
    """The rule tree of a schema, or None when no node carries x-kubernetes-validations."""
    if not isinstance(schema, dict):
        return None
    rules = tuple(
        _Rule(text=r["rule"], message=(r.get("message") or "").strip(),
              message_expression=r.get("messageExpression") or "", reason=r.get("reason") or "FieldValueInvalid",
              field_path=r.get("fieldPath") or "", transition=bool(OLD_SELF.search(r["rule"])),
              rescans=_rescans(r["rule"]), message_rescans=_rescans(r.get("messageExpression") or ""))
        for r in schema.get("x-kubernetes-validations") or [] if isinstance(r, dict) and r.get("rule"))
    props = {}
    for name, sub in (schema.get("properties") or {}).items():
        child = compile_rules(sub)
        if child is not None:
            props[name] = child
    extra = schema.get("additionalProperties")
    additional = compile_rules(extra) if isinstance(extra, dict) else None
    items = compile_rules(schema.get("items"))
    if not (rules or props or additional or items):
        return None
    type_name = schema.get("type") or ("integer-or-string" if schema.get("x-kubernetes-int-or-string") else "")
    return _Node(rules, type_name, props, additional, items, schema.get("x-kubernetes-list-type") or "atomic",
                 tuple(schema.get("x-kubernetes-list-map-keys") or ()))


_MISSING = object()


class _OutOfCost(Exception):
    """A rule would cost more than kube's per-call limit: kube runs no further rule."""


def evaluate(node: _Node, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """Run every rule over an object (and, on update, its old version); one cause per failed rule."""
    causes: list[Cause] = []
    try:
        _check(node, obj, _MISSING if old is None else old, "", causes)
    except _OutOfCost:
        pass
    return causes


def _rescans(rule: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The `self`/`oldSelf` paths named inside the rule's macro bodies: work done once per iteration."""
    named: list[tuple[str, tuple[str, ...]]] = []
    for call in _MACRO_CALL.finditer(rule):
        body = _argument_text(rule, call.end())
        named += [(m[1], tuple(part.strip(" .") for part in m[2].split(".") if part.strip(" .")))
                  for m in _WHOLE_VALUE_REF.finditer(body)]
    return tuple(dict.fromkeys(named))


def _argument_text(rule: str, start: int) -> str:
    """The text up to the parenthesis closing the call opened just before `start`, string literals blanked."""
    out, depth, i, quote = [], 1, start, ""
    while i < len(rule) and depth:
        c = rule[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        else:
            depth += (c == "(") - (c == ")")
            out.append(c)
        i += 1
    return "".join(out)


def _cost_size(value: Any) -> int:
    """kube-like traversal cost of a value: one per list item or map entry, a tenth per string byte."""
    size, stack = 0, [value]
    while stack:
        current = stack.pop()
        size += 1
        if isinstance(current, str):
            size += len(current) // 10
        elif isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return size


def _estimated_cost(rescans: tuple[tuple[str, tuple[str, ...]], ...], data: dict[str, Any]) -> int:
    """Iterations (the size of self) times the size of what each iteration reads again."""
    per_iteration = 0
    for variable, fields in rescans:
        named = data.get(variable)
        for field in fields:
            if not isinstance(named, dict) or field not in named:
                break
            named = named[field]
        per_iteration += _cost_size(named)
    return _cost_size(data["self"]) * per_iteration


def _check(node: _Node, value: Any, old: Any, path: str, causes: list[Cause]) -> None:
    if value is None:
        return
    for rule in node.rules:
        if rule.transition and old is _MISSING:
            continue
        data = {"self": value, "oldSelf": old} if rule.transition else {"self": value}
        if rule.rescans and _estimated_cost(rule.rescans, data) > PER_CALL_LIMIT:
            causes.append(invalid(path, node.type_name, _OUT_OF_COST.format(rule.message or rule.text.strip())))
            raise _OutOfCost
        outcome, is_error = _run(rule.text, data)
        if outcome is True:
            continue
        if outcome is not False:  # an evaluation error, or a rule that is not a predicate
            detail = outcome if is_error else f"must evaluate to a bool, not {outcome!r}"
            causes.append(invalid(path, node.type_name, f"{rule.text.strip()}: evaluation error: {detail}"))
            continue
        causes.append(_failure(rule, node.type_name, _join(path, rule.field_path), _message(rule, data)))
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for name, child in node.props.items():
            if name in value:
                _check(child, value[name], old_map.get(name, _MISSING), _join(path, name), causes)
        if node.additional is not None:
            for name, sub in value.items():
                if name not in node.props:
                    _check(node.additional, sub, old_map.get(name, _MISSING), f"{path}[{name}]", causes)
    elif isinstance(value, list) and node.items is not None:
        correlate = _correlator(node, old)
        for i, item in enumerate(value):
            _check(node.items, item, correlate(item), f"{path}[{i}]", causes)


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
        result = compile_expression(expression).eval(data=data)
        return result.value(), result.type().name() == "ERROR"
    except Exception as exc:
        return str(exc), True


def _message(rule: _Rule, data: dict[str, Any]) -> str:
    """messageExpression's string if it yields one (not an error, within the cost limit), else message, else
    kube's default."""
    too_costly = rule.message_rescans and _estimated_cost(rule.message_rescans, data) > PER_CALL_LIMIT
    if rule.message_expression and not too_costly:
        value, is_error = _run(rule.message_expression, data)
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
