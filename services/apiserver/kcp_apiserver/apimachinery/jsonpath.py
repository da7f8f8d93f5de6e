"""kube's JSONPath (k8s.io/client-go/util/jsonpath) for additionalPrinterColumns and `--for=jsonpath`.

One expression, with or without kube's `{...}` wrapper: `.a.b`, `$.a`, `['a.b']`, `[0]`, `[-1]`,
`[1:3]`, `[0,2]`, `[*]`, `.*`, `..name`, `[?(@.type=="Ready")]` (==, !=, <, >, <=, >=, or existence),
and `\\.` escapes in field names (`.metadata.labels.app\\.kubernetes\\.io/name`). Missing keys yield
nothing, as printer columns evaluate with AllowMissingKeys. Where kube would fail the evaluation (an
index out of range, filtering a non-list), `find` returns no results, which is how a column or a wait
condition sees a failed evaluation. A malformed expression raises ValueError when compiled.

A CRD's author writes its printer columns and its objects, and each `..` can multiply the values the
next step starts from by the object's depth: `{..a..a..a..a}` over an object nested 240 deep selects
~10^8 values, minutes of a single-threaded server (kube spends them on one goroutine). So an expression
that can select more than one value per step (`..`, `*`, filters, unions, slices) has a budget of
values, proportional to the object's size; past it the evaluation fails as kube's failed evaluations
do (no result), and a table of N objects costs at most a constant times their size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apimachinery.jsonvalues import count_nodes

_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_ARRAY = re.compile(r"(-?\d*)(:-?\d*)?(:-?\d*)?")
_FILTER = re.compile(r"([^!<>=]+)([!<>=]+)(.+?)")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_OPS = ("==", "!=", "<", ">", "<=", ">=")
_VALUES_PER_NODE = 8  # budget: values an expanding expression may select per JSON node of the object
_MIN_BUDGET = 1024


class _EvalError(Exception):
    """kube's evaluation error: the whole expression yields nothing."""


class _Budget:
    """How many more values one evaluation may select; None for expressions that select one per step."""

    __slots__ = ("left",)

    def __init__(self, left: int | None) -> None:
        self.left = left

    def take(self, n: int) -> None:
        if self.left is not None:
            self.left -= n
            if self.left < 0:
                raise _EvalError("jsonpath selects too many values")


@dataclass(frozen=True)
class _Field:
    name: str


@dataclass(frozen=True)
class _Wildcard:
    pass


@dataclass(frozen=True)
class _Recursive:
    pass


@dataclass(frozen=True)
class _Slice:
    start: int | None
    end: int | None
    step: int | None
    single: bool  # `[n]`: kube's derived end n+1


@dataclass(frozen=True)
class _Union:
    branches: tuple[Steps, ...]


@dataclass(frozen=True)
class _Literal:
    value: Any


@dataclass(frozen=True)
class _Filter:
    left: Operand
    op: str
    right: Operand | None  # None for "exists"
    left_root: bool
    right_root: bool


Step = _Field | _Wildcard | _Recursive | _Slice | _Union | _Filter
Steps = tuple[Step, ...]
Operand = Steps | _Literal  # a path from @ or $, or a literal


class JSONPath:
    """A compiled expression; `find(obj)` returns every value it selects, in kube's order."""

    __slots__ = ("_expands", "_steps", "expr")

    def __init__(self, expr: str, steps: Steps) -> None:
        self.expr = expr
        self._steps = steps
        self._expands = any(not (isinstance(s, _Field) or (isinstance(s, _Slice) and s.single)) for s in steps)

    def find(self, obj: Any) -> list[Any]:
        budget = _Budget(max(count_nodes(obj) * _VALUES_PER_NODE, _MIN_BUDGET) if self._expands else None)
        try:
            return _eval(self._steps, [obj], obj, budget)
        except _EvalError:
            return []

    def __repr__(self) -> str:
        return f"JSONPath({self.expr!r})"


def compile_jsonpath(expr: str) -> JSONPath:
    """Parse an expression once; ValueError says what is wrong with a malformed one."""
    if not isinstance(expr, str):
        raise TypeError("jsonpath expression must be a string")
    text = expr.strip()
    if text.startswith("{"):
        if not text.endswith("}"):
            raise ValueError(f"unclosed action in jsonpath {expr!r}")
        text = text[1:-1].strip()
        if "{" in text or "}" in text:
            raise ValueError(f"only one {{...}} expression is supported in jsonpath {expr!r}")
    elif "{" in text or "}" in text:
        raise ValueError(f"text outside {{...}} is not supported in jsonpath {expr!r}")
    if not text:
        raise ValueError("empty jsonpath expression")
    steps, _root = _parse_path(text, expr)
    return JSONPath(expr, steps)


# -- parsing -----------------------------------------------------------------------------------------

def _parse_path(text: str, expr: str) -> tuple[Steps, bool]:
    """Steps of a path; the flag says it starts at `$` (the root) rather than `@` (the current item)."""
    i, from_root = 0, True
    steps: list[Step] = []
    if text[0] in "$@":
        from_root = text[0] == "$"
        i = 1
    elif text[0] not in ".[":
        raise ValueError(f"unrecognized identifier {text.split('.')[0]!r} in jsonpath {expr!r}: "
                         "paths start with '.', '[', '$' or '@'")
    while i < len(text):
        c = text[i]
        if c in " \t":
            i += 1
        elif text.startswith("..", i):
            steps.append(_Recursive())
            i += 2
            if i < len(text) and text[i] not in "[*" and text[i] not in _TERMINATORS:
                i = _parse_field(text, i, steps)
            elif i < len(text) and text[i] == "*":
                steps.append(_Wildcard())
                i += 1
        elif c == ".":
            i = _parse_field(text, i + 1, steps)
        elif c == "[":
            i = _parse_bracket(text, i, steps, expr)
        else:
            raise ValueError(f"unrecognized character {c!r} at position {i} in jsonpath {expr!r}")
    return tuple(steps), from_root


def _parse_field(text: str, i: int, steps: list[Step]) -> int:
    start, name = i, []
    while i < len(text) and text[i] not in _TERMINATORS:
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        name.append(text[i])
        i += 1
    if i == start:
        raise ValueError(f"missing field name at position {start} in jsonpath {text!r}")
    field = "".join(name)
    steps.append(_Wildcard() if field == "*" else _Field(field))
    return i


def _close(text: str, i: int, expr: str) -> int:
    """Index of the `]` closing the bracket opened at i, skipping quoted text."""
    quote, escaped = "", False
    for j in range(i + 1, len(text)):
        c = text[j]
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "]":
            return j
    raise ValueError(f"unclosed array expect ] in jsonpath {expr!r}")


def _parse_bracket(text: str, i: int, steps: list[Step], expr: str) -> int:
    if text.startswith("[?(", i):
        return _parse_filter(text, i, steps, expr)
    end = _close(text, i, expr)
    inner = text[i + 1:end].strip()
    if inner == "*":
        steps.append(_Wildcard())
        return end + 1
    if inner[:1] in ("'", '"'):
        names = re.findall(r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\"""", inner)
        rest = re.sub(r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\"""", "", inner).replace(",", "").strip()
        if not names or rest:
            raise ValueError(f"invalid quoted field list [{inner}] in jsonpath {expr!r}")
        fields = [(a or b).replace("\\", "") for a, b in names]
        steps.append(_Field(fields[0]) if len(fields) == 1 else _Union(tuple((_Field(f),) for f in fields)))
        return end + 1
    branches: list[Steps] = []
    for part in inner.split(","):
        m = _ARRAY.fullmatch(part.strip())
        if m is None or not part.strip():
            raise ValueError(f"invalid array index [{inner}] in jsonpath {expr!r}")
        start = int(m[1]) if m[1] not in ("", "-") else None
        stop = int(m[2][1:]) if m[2] and m[2][1:] not in ("", "-") else None
        step = int(m[3][1:]) if m[3] and m[3][1:] not in ("", "-") else None
        if m[1] in ("", "-") and m[2] is None:
            raise ValueError(f"invalid array index [{inner}] in jsonpath {expr!r}")
        branches.append((_Slice(start, stop, step, m[2] is None),))
    steps.append(branches[0][0] if len(branches) == 1 else _Union(tuple(branches)))
    return end + 1


def _parse_filter(text: str, i: int, steps: list[Step], expr: str) -> int:
    j, quote = i + 3, ""
    while True:
        if j >= len(text):
            raise ValueError(f"unterminated filter in jsonpath {expr!r}")
        c = text[j]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == ")":
            break
        j += 1
    if text[j + 1:j + 2] != "]":
        raise ValueError(f"unclosed array expect ] in jsonpath {expr!r}")
    body = text[i + 3:j].strip()
    m = _FILTER.fullmatch(body)
    if m is None:
        left, left_root = _operand(body, expr)
        steps.append(_Filter(left, "exists", None, left_root, False))
    else:
        if m[2] not in _OPS:
            raise ValueError(f"unrecognized filter operator {m[2]!r} in jsonpath {expr!r}")
        left, left_root = _operand(m[1].strip(), expr)
        right, right_root = _operand(m[3].strip(), expr)
        steps.append(_Filter(left, m[2], right, left_root, right_root))
    return j + 2


def _operand(text: str, expr: str) -> tuple[Operand, bool]:
    if not text:
        raise ValueError(f"empty filter operand in jsonpath {expr!r}")
    if text[0] in "'\"":
        if len(text) < 2 or text[-1] != text[0]:
            raise ValueError(f"unterminated quoted string {text} in jsonpath {expr!r}")
        return _Literal(text[1:-1].replace("\\" + text[0], text[0])), False
    if _NUMBER.fullmatch(text):
        return _Literal(float(text) if any(c in text for c in ".eE") else int(text)), False
    if text in ("true", "false"):
        return _Literal(text == "true"), False
    if text == "null":
        return _Literal(None), False
    return _parse_path(text, expr)


# -- evaluation --------------------------------------------------------------------------------------

def _eval(steps: Steps, values: list[Any], root: Any, budget: _Budget) -> list[Any]:
    for step in steps:
        if not values:
            return values
        values = _apply(step, values, root, budget)
    return values


def _apply(step: Step, values: list[Any], root: Any, budget: _Budget) -> list[Any]:
    out: list[Any] = []
    if isinstance(step, _Field):
        name = step.name
        for v in values:
            if isinstance(v, dict) and name in v:
                out.append(v[name])
    elif isinstance(step, _Wildcard):
        for v in values:
            if isinstance(v, dict):
                budget.take(len(v))
                out.extend(v[k] for k in sorted(v))
            elif isinstance(v, list):
                budget.take(len(v))
                out.extend(v)
    elif isinstance(step, _Recursive):
        for v in values:
            _descend(v, out, budget)
    elif isinstance(step, _Slice):
        for v in values:
            selected = _slice(v, step)
            budget.take(len(selected))
            out.extend(selected)
    elif isinstance(step, _Union):
        for branch in step.branches:
            out.extend(_eval(branch, values, root, budget))
    elif isinstance(step, _Filter):
        for v in values:
            if not isinstance(v, list):
                raise _EvalError(f"{type(v).__name__} is not array or slice and cannot be filtered")
            budget.take(len(v))
            out.extend(item for item in v if _passes(step, item, root, budget))
    return out


def _descend(v: Any, out: list[Any], budget: _Budget) -> None:
    """kube's `..`: each non-empty container, then its children's containers, depth first."""
    children = [v[k] for k in sorted(v)] if isinstance(v, dict) else v if isinstance(v, list) else []
    if children:
        budget.take(1)
        out.append(v)
        for child in children:
            _descend(child, out, budget)


def _slice(v: Any, s: _Slice) -> list[Any]:
    if not isinstance(v, list):
        raise _EvalError("not array or slice")
    n = len(v)
    start = 0 if s.start is None else s.start
    if start < 0:
        start += n
    if s.single:
        end = start + 1
    else:
        end = n if s.end is None else s.end + n if s.end < 0 else s.end
    if end == start:
        return []
    if not 0 <= start < n or not 0 <= end <= n or start > end:
        raise _EvalError(f"array index out of bounds: index {start}, length {n}")
    step = 1 if s.step is None else s.step
    if step <= 0:
        raise _EvalError("step must be > 0")
    return v[start:end:step]


def _operand_values(operand: Operand, from_root: bool, item: Any, root: Any, budget: _Budget) -> list[Any]:
    if isinstance(operand, _Literal):
        return [operand.value]
    return _eval(operand, [root if from_root else item], root, budget)


def _passes(f: _Filter, item: Any, root: Any, budget: _Budget) -> bool:
    lefts = _operand_values(f.left, f.left_root, item, root, budget)
    if f.op == "exists" or f.right is None:  # right is None exactly for "exists"
        return bool(lefts)
    rights = _operand_values(f.right, f.right_root, item, root, budget)
    if not lefts or not rights:
        return False
    a, b = lefts[0], rights[0]
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    if f.op in ("==", "!="):
        same = a == b if numeric or type(a) is type(b) else False
        return same if f.op == "==" else not same
    if not numeric and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[f.op]
