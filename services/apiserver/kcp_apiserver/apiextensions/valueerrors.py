"""Field errors of a custom resource's values, worded as kube prints them.

kube-openapi names paths `spec.items[2]` and `spec.labels.key`; field.Path, used by the embedded-resource
and list-type passes, reads map keys as `spec.labels[key]`. Values are rendered as Go prints them
(strconv.Quote, fmt's %v for floats, encoding/json for compound values).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from kcp_apiserver.apimachinery.status import Cause

Obj = dict[str, Any]
Path = Any  # None for the root, else (parent, segment): str property, int index or MapKey map key
Check = Callable[[Any, Path, "ValidationErrors"], None]

# kube's wording for maxLength; kube >= 1.32 says "may not be more than %d bytes" (kept in step with
# crdvalidation.too_long, which callers already see).
TOO_LONG = "Too long: may not be longer than {}"


class MapKey(str):
    """A map key in a path: `.key` in kube-openapi messages, `[key]` in field.Path."""


# -- rendering, as Go prints values ------------------------------------------------------------

def go_quote(s: str) -> str:
    """strconv.Quote: printable runes kept, the rest escaped."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F or (o > 0x9F and ch.isprintable()):
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif o < 0x80:
            out.append(f"\\x{o:02x}")
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append('"')
    return "".join(out)


_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}


def _go_float(x: float) -> str:
    """fmt's %v for a float64: shortest digits, exponent form below 1e-4 and from 1e6 (`1e+06`)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    sign, digit_tuple, exp = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exp += len(digit_tuple) - len(digits)  # type: ignore[operator]
    point = len(digits) + exp  # value = 0.<digits> * 10**point
    neg = "-" if sign else ""
    e = point - 1
    if e < -4 or e >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return neg + digits + "0" * (point - len(digits))
    return f"{neg}{digits[:point]}.{digits[point:]}"


def _go_json_value(v: Any) -> Any:
    """A value as Go's encoding/json prints it: whole floats lose their `.0`."""
    t = type(v)
    if t is float and v.is_integer() and abs(v) < 1e21:
        return int(v)
    if t is dict:
        return {k: _go_json_value(x) for k, x in v.items()}
    if t is list:
        return [_go_json_value(x) for x in v]
    return v


def go_json(v: Any) -> str:
    text = json.dumps(_go_json_value(v), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_value(v: Any) -> str:
    """A bad value as field.Error prints it (compound values as JSON, as the rest of this server does)."""
    t = type(v)
    if t is str:
        return go_quote(v)
    if v is None:
        return '"null"'
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return _go_float(v)
    return go_json(v)


def go_number(v: float) -> str:
    return str(v) if type(v) is int else _go_float(v)


# -- paths ---------------------------------------------------------------------------------------

def _path(path: Path, keys_as_index: bool) -> str:
    segs: list[Any] = []
    while path is not None:
        path, seg = path
        segs.append(seg)
    out: list[str] = []
    for seg in reversed(segs):
        if type(seg) is int or (keys_as_index and type(seg) is MapKey):
            out.append(f"[{seg}]")
        else:
            out.append(f".{seg}" if out else seg)
    return "".join(out)


def openapi_path(path: Path) -> str:
    """kube-openapi's path name: `spec.items[2].labels.key`."""
    return _path(path, False)


def field_path(path: Path) -> str:
    """field.Path.String(): like `openapi_path`, but map keys are subscripts (`spec.labels[key]`)."""
    return _path(path, True)


# -- causes --------------------------------------------------------------------------------------

def invalid_value(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {render_value(value)}: {detail}", field)


def type_invalid(field: str, expected: str, actual: str) -> Cause:
    return Cause("FieldValueTypeInvalid",
                 f"Invalid value: {go_quote(actual)}: {field} in body must be of type {expected}: "
                 f"{go_quote(actual)}", field)


def required_value(field: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", field)


def duplicate_value(field: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {render_value(value)}", field)


def too_many_items(field: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", field)


def composite_error(message: str) -> Cause:
    """kube-openapi's non-field errors (anyOf, oneOf, allOf, not) land at the root with an empty value."""
    return Cause("FieldValueInvalid", f'Invalid value: "": {message}', "")


class ValidationErrors:
    """Errors of one validation: kube-openapi's, then embedded-resource ones, then list-type ones."""

    __slots__ = ("errs", "lists", "meta")

    def __init__(self) -> None:
        self.errs: list[Cause] = []
        self.meta: list[Cause] = []
        self.lists: list[Cause] = []
