"""Label and field selectors with kube's grammar, matching rules and error messages.

The label parser mirrors k8s.io/apimachinery/pkg/labels step for step (lexer, then a recursive
descent over the tokens), because clients see its exact error text in 400 responses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from enum import Enum
from typing import Any

from kcp_apiserver.apimachinery.status import bad_request
from kcp_apiserver.apimachinery.validation import (
    render_value,
    validate_label_value,
    validate_qualified_name,
)

# -- requirements -------------------------------------------------------------------------------

IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)

_INT64 = re.compile(r"[+-]?[0-9]+")


def _parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(s, 10, 64): no spaces, no underscores, must fit 64 bits."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


class SelectorError(ValueError):
    """A selector kube would refuse; the message is kube's."""


def _aggregate(messages: list[str]) -> str:
    """utilerrors.Aggregate's text: one message bare, several de-duplicated inside brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


@dataclass(frozen=True)
class Requirement:
    """One `key op values` term; build through `Requirement.new` so it is validated."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
        """labels.NewRequirement: every problem at once, with its field path, as one message."""
        vals = list(values)
        errs = [f"key: Invalid value: {render_value(key)}: {'; '.join(msgs)}"
                for msgs in [validate_qualified_name(key)] if msgs]
        shown = json.dumps(vals, separators=(",", ":")) if vals else "null"
        if operator in (IN, NOT_IN) and not vals:
            errs.append(f"values: Invalid value: {shown}: for 'in', 'notin' operators, values set can't be empty")
        elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(vals) != 1:
            errs.append(f"values: Invalid value: {shown}: exact-match compatibility requires one single value")
        elif operator in (EXISTS, DOES_NOT_EXIST) and vals:
            errs.append(f"values: Invalid value: {shown}: values set must be empty for exists and does not exist")
        elif operator in (GREATER_THAN, LESS_THAN):
            if len(vals) != 1:
                errs.append(f"values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value is "
                            "required")
            errs += [f"values[{i}]: Invalid value: {render_value(v)}: for 'Gt', 'Lt' operators, the value must "
                     "be an integer" for i, v in enumerate(vals) if _parse_int64(v) is None]
        elif operator not in (*BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST):
            supported = ", ".join(f'"{op}"' for op in (*BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST))
            errs.append(f"operator: Unsupported value: {render_value(operator)}: supported values: {supported}")
        for i, value in enumerate(vals):
            if msgs := validate_label_value(value):
                errs.append(f"values[{i}][{key}]: Invalid value: {render_value(value)}: {'; '.join(msgs)}")
        if errs:
            raise SelectorError(_aggregate(errs))
        return cls(key, operator, tuple(vals))

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return has and labels[self.key] in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not has or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return has
        if self.operator == DOES_NOT_EXIST:
            return not has
        if self.operator in (GREATER_THAN, LESS_THAN) and has and len(self.values) == 1:
            actual, wanted = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
            if actual is None or wanted is None:
                return False
            return actual > wanted if self.operator == GREATER_THAN else actual < wanted
        return False

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(sorted(self.values))
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({joined})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{joined}"


# -- label selector lexer and parser -----------------------------------------------------------

class _Tok(Enum):
    END = "end"
    CLOSE_PAREN = ")"
    COMMA = ","
    NOT = "!"
    DOUBLE_EQUALS = "=="
    EQUALS = "="
    GREATER = ">"
    IDENTIFIER = "identifier"
    IN = "in"
    LESS = "<"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    OPEN_PAREN = "("


_LITERALS = {t.value: t for t in _Tok if t not in (_Tok.END, _Tok.IDENTIFIER)}
_SPECIAL = set("=!(),<>")
_SPACE = set(" \t\r\n")
_OPERATOR_TOKENS = {_Tok.IN: IN, _Tok.NOT_IN: NOT_IN, _Tok.EQUALS: EQUALS, _Tok.DOUBLE_EQUALS: DOUBLE_EQUALS,
                    _Tok.NOT_EQUALS: NOT_EQUALS, _Tok.GREATER: GREATER_THAN, _Tok.LESS: LESS_THAN}


def _lex(text: str) -> list[tuple[_Tok, str]]:
    """Tokens as kube's Lexer yields them: operators take at most two symbols, words end at one."""
    items: list[tuple[_Tok, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n:
            items.append((_Tok.END, ""))
            return items
        if text[i] in _SPECIAL:
            literal = text[i:i + 2] if text[i:i + 2] in ("!=", "==") else text[i]
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and text[j] not in _SPACE:
                j += 1
            literal = text[i:j]
        items.append((_LITERALS.get(literal, _Tok.IDENTIFIER), literal))
        i += len(literal)


class _Parser:
    """Recursive descent over the tokens; 'in' and 'notin' read as words where a value is expected."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _peek_raw(self) -> tuple[_Tok, str]:
        return self.items[min(self.pos, len(self.items) - 1)]

    def peek(self, values: bool = True) -> tuple[_Tok, str]:
        tok, lit = self._peek_raw()
        return (_Tok.IDENTIFIER, lit) if values and tok in (_Tok.IN, _Tok.NOT_IN) else (tok, lit)

    def take(self, values: bool = True) -> tuple[_Tok, str]:
        item = self.peek(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok == _Tok.END:
                return requirements
            if tok not in (_Tok.IDENTIFIER, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.requirement())
            except SelectorError as exc:
                raise SelectorError(f"unable to parse requirement: {exc}") from exc
            tok, lit = self.take()
            if tok == _Tok.END:
                return requirements
            if tok != _Tok.COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self.peek()
            if tok not in (_Tok.IDENTIFIER, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        operator = ""
        tok, key = self.take()
        if tok == _Tok.NOT:
            operator = DOES_NOT_EXIST
            tok, key = self.take()
        if tok != _Tok.IDENTIFIER:
            raise SelectorError(f"found '{key}', expected: identifier")
        if msgs := validate_qualified_name(key):
            # kube validates here against a nil field path, hence the "<nil>".
            raise SelectorError(f"<nil>: Invalid value: {render_value(key)}: {'; '.join(msgs)}")
        if not operator and self.peek()[0] in (_Tok.END, _Tok.COMMA):
            operator = EXISTS
        if operator:
            return Requirement.new(key, operator)
        tok, lit = self.take(values=False)
        if tok not in _OPERATOR_TOKENS:
            raise SelectorError(f"found '{lit}', expected: {', '.join(BINARY_OPERATORS)}")
        operator = _OPERATOR_TOKENS[tok]
        values = self.value_set() if operator in (IN, NOT_IN) else self.exact_value()
        return Requirement.new(key, operator, sorted(values))

    def value_set(self) -> set[str]:
        tok, lit = self.take()
        if tok != _Tok.OPEN_PAREN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok == _Tok.CLOSE_PAREN:
            self.take()
            return {""}
        if tok not in (_Tok.IDENTIFIER, _Tok.COMMA):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.take()[0] != _Tok.CLOSE_PAREN:
            raise SelectorError(f"found '{lit}', expected: ')'")
        return values

    def identifiers(self) -> set[str]:
        """Comma-separated values where empty entries count as "" — `(a,,b)` holds a, "" and b."""
        values: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == _Tok.IDENTIFIER:
                values.add(lit)
                nxt, nlit = self.peek()
                if nxt == _Tok.CLOSE_PAREN:
                    return values
                if nxt != _Tok.COMMA:
                    raise SelectorError(f"found '{nlit}', expected: ',' or ')'")
            elif tok == _Tok.COMMA:
                if not values:
                    values.add("")
                nxt = self.peek()[0]
                if nxt == _Tok.CLOSE_PAREN:
                    values.add("")
                    return values
                if nxt == _Tok.COMMA:
                    self.take()
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.peek()[0] in (_Tok.END, _Tok.COMMA):
            return {""}
        tok, lit = self.take()
        if tok != _Tok.IDENTIFIER:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return {lit}


_METAV1_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


@dataclass
class _KeyCheck:
    """Every requirement on one key folded into one test, so matching costs O(labels), not O(terms)."""

    needed: bool = False  # in, =, ==, exists, gt, lt need the key
    absent: bool = False  # !key
    allowed: frozenset[str] | None = None  # intersection of in/=/== values
    forbidden: frozenset[str] = frozenset()  # union of notin/!= values
    above: int | None = None  # greatest gt bound
    below: int | None = None  # least lt bound
    never: bool = False  # a gt/lt bound that is not an integer: kube's Matches is then false

    def add(self, r: Requirement) -> None:
        if r.operator in (IN, EQUALS, DOUBLE_EQUALS):
            self.needed = True
            values = frozenset(r.values)
            self.allowed = values if self.allowed is None else self.allowed & values
        elif r.operator in (NOT_IN, NOT_EQUALS):
            self.forbidden |= frozenset(r.values)
        elif r.operator == EXISTS:
            self.needed = True
        elif r.operator == DOES_NOT_EXIST:
            self.absent = True
        elif r.operator in (GREATER_THAN, LESS_THAN):
            self.needed = True
            bound = _parse_int64(r.values[0]) if len(r.values) == 1 else None
            if bound is None:
                self.never = True
            elif r.operator == GREATER_THAN:
                self.above = bound if self.above is None else max(self.above, bound)
            else:
                self.below = bound if self.below is None else min(self.below, bound)

    def holds(self, value: str | None) -> bool:
        if value is None:
            return not self.needed
        if self.absent or self.never or value in self.forbidden:
            return False
        if self.allowed is not None and value not in self.allowed:
            return False
        if self.above is not None or self.below is not None:
            number = _parse_int64(value)
            if number is None or (self.above is not None and number <= self.above) or (
                    self.below is not None and number >= self.below):
                return False
        return True


class LabelSelector:
    """A parsed label selector: all requirements must hold (logical AND)."""

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False) -> None:
        # Sorted by key like kube, so String() and error order are deterministic.
        self.requirements: tuple[Requirement, ...] = tuple(sorted(requirements, key=lambda r: r.key))
        self.nothing = nothing
        checks: dict[str, _KeyCheck] = {}
        for r in self.requirements:
            checks.setdefault(r.key, _KeyCheck()).add(r)
        self._needed = {k: c for k, c in checks.items() if c.needed}
        self._optional = {k: c for k, c in checks.items() if not c.needed}

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """The `labelSelector` query syntax; raises a 400 APIError with kube's message."""
        try:
            return cls(_Parser(text).parse())
        except SelectorError as exc:
            raise bad_request(str(exc)) from exc

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """metav1.LabelSelector; None selects nothing and {} everything, as LabelSelectorAsSelector does."""
        if selector is None:
            return cls(nothing=True)
        requirements = []
        try:
            for key, value in sorted((selector.get("matchLabels") or {}).items()):
                requirements.append(Requirement.new(key, EQUALS, [value]))
            for expr in selector.get("matchExpressions") or []:
                op = expr.get("operator")
                if op not in _METAV1_OPERATORS:
                    raise SelectorError(f"{render_value(str(op or ''))} is not a valid label selector operator")
                requirements.append(Requirement.new(expr.get("key", ""), _METAV1_OPERATORS[op],
                                                    expr.get("values") or []))
        except SelectorError as exc:
            raise bad_request(str(exc)) from exc
        return cls(requirements)

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing (the "nothing" selector is not empty)."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether the labels satisfy every requirement, in time bounded by the labels, not the selector:
        a selector may carry a thousand terms and be matched against every object of a list."""
        if self.nothing:
            return False
        labels = labels or {}
        if len(self._needed) > len(labels):  # each needed key must be among the labels
            return False
        if not all(check.holds(labels.get(key)) for key, check in self._needed.items()):
            return False
        optional = self._optional
        if len(optional) <= len(labels):
            return all(check.holds(labels.get(key)) for key, check in optional.items())
        return all(check.holds(value) for key, value in labels.items() if (check := optional.get(key)) is not None)

    def exact(self, key: str) -> str | None:
        """The single value the selector requires for key (via =, == or a one-value in), else None."""
        for r in self.requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})"


# -- field selectors ----------------------------------------------------------------------------

def escape_field_value(value: str) -> str:
    """fields.EscapeValue: backslash, comma and equals are escaped with a backslash."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_field_value(value: str) -> str:
    """fields.UnescapeValue: only \\\\, \\, and \\= are escapes; bare , and = are errors."""
    out, escaped = [], False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go prints the rune with %v, i.e. as its code point number.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped; escapes stay in the terms for later unescaping."""
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The first operator wins and the field name is never unescaped, as in kube."""
    for i in range(len(term)):
        for op in (NOT_EQUALS, DOUBLE_EQUALS, EQUALS):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


def _field_text(value: Any) -> str:
    """How a field reads in kube's field sets: missing is "", booleans are lower case."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


FieldGetter = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=", "==" or "!="
    value: str
    # how the field's value is read when it is not the value at its own dotted path
    getter: FieldGetter | None = dataclass_field(default=None, compare=False, repr=False)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        actual = self.getter(obj) if self.getter is not None else lookup_field(obj, self.field)
        equal = _field_text(actual) == self.value
        return not equal if self.operator == NOT_EQUALS else equal

    def __str__(self) -> str:
        op = NOT_EQUALS if self.operator == NOT_EQUALS else EQUALS
        return f"{self.field}{op}{escape_field_value(self.value)}"


def lookup_field(obj: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path such as `metadata.name`, or None when any step is missing."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


class FieldSelector:
    """A parsed field selector: every term must hold (logical AND)."""

    def __init__(self, requirements: Iterable[FieldRequirement] = ()) -> None:
        self.requirements = tuple(requirements)
        # folded per field, so matching reads each field once whatever the number of terms
        self._fields: dict[str, tuple[FieldGetter | None, set[str], set[str]]] = {}
        for r in self.requirements:
            _, wanted, unwanted = self._fields.setdefault(r.field, (r.getter, set(), set()))
            (unwanted if r.operator == NOT_EQUALS else wanted).add(r.value)

    @classmethod
    def parse(cls, text: str, allowed: Iterable[str] | Mapping[str, FieldGetter | None]) -> FieldSelector:
        """The `fieldSelector` query syntax; only fields in `allowed` may be used (kube's label conversion).

        A mapping names, per field, how to read its value (None: the value at the field's own path),
        as a kube type's selectable field set may compute a field (an Event's `source`).
        """
        try:
            terms = []
            # kube sorts the raw terms before parsing, which decides which error is reported first.
            for part in sorted(_split_terms(text)):
                if not part:
                    continue
                split = _split_term(part)
                if split is None:
                    raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
                field, op, raw = split
                terms.append(FieldRequirement(field, op, unescape_field_value(raw)))
        except SelectorError as exc:
            raise bad_request(str(exc)) from exc
        permitted: Mapping[str, FieldGetter | None] = (
            allowed if isinstance(allowed, Mapping) else dict.fromkeys(allowed))
        for term in terms:
            if term.field not in permitted:
                raise bad_request(f"field label not supported: {term.field}")
        return cls(replace(t, getter=permitted[t.field]) for t in terms)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for field, (getter, wanted, unwanted) in self._fields.items():
            text = _field_text(getter(obj) if getter is not None else lookup_field(obj, field))
            if (wanted and (len(wanted) > 1 or text not in wanted)) or text in unwanted:
                return False
        return True

    def exact(self, field: str) -> str | None:
        """The value the selector pins field to with = or ==, used to narrow a list to one name."""
        for r in self.requirements:
            if r.field == field and r.operator != NOT_EQUALS:
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"


__all__ = ["FieldGetter", "FieldRequirement", "FieldSelector", "LabelSelector", "Requirement", "SelectorError",
           "escape_field_value", "lookup_field", "unescape_field_value"]
