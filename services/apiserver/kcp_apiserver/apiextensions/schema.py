"""Structural-schema machinery for custom resource objects: validation, pruning and defaulting.

Behaviour and wording follow kube-apiserver's apiextensions-apiserver as of v1.32:

* `validate` is k8s.io/kube-openapi's SchemaValidator as ValidateCustomResource turns its result into
  field errors, plus the two extra passes the custom resource strategy runs (schemaobjectmeta.Validate for
  x-kubernetes-embedded-resource, structurallisttype.ValidateListSetsAndMaps for list types). kube-openapi
  names paths `spec.items[2]` and `spec.labels.key`; the two extra passes use field.Path, whose map keys
  read `spec.labels[key]`. Both are reproduced as kube prints them.
* `prune` is structural pruning plus PruneNonNullableNullsWithoutDefaults, as the request decoder runs them.
* `apply_defaults` is structural defaulting.

The root's apiVersion, kind and metadata are left to the server's own ObjectMeta handling.

A schema is compiled once into a tree of `_Node`s whose checks are closures selected per JSON kind, so a
request only walks the object: values whose node has nothing but a type to check never cost a call.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
import unicodedata
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from kcp_apiserver.apiextensions.goregexp import go_regexp, linear_regexp
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import (
    max_len_error,
    regex_error,
    validate_object_meta,
)

Obj = dict[str, Any]
Path = Any  # None for the root, else (parent, segment): str property, int index or _Key map key
Check = Callable[[Any, Path, "_Ctx"], None]

META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
_MISSING = object()

# kube's wording for maxLength; kube >= 1.32 says "may not be more than %d bytes" (kept in step with
# crdvalidation.too_long, which callers already see).
TOO_LONG = "Too long: may not be longer than {}"


class _Key(str):
    """A map key in a path: `.key` in kube-openapi messages, `[key]` in field.Path."""


# -- rendering, as Go prints values ------------------------------------------------------------

def _go_quote(s: str) -> str:
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


def _go_json(v: Any) -> str:
    text = json.dumps(_go_json_value(v), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _render(v: Any) -> str:
    """A bad value as field.Error prints it (compound values as JSON, as the rest of this server does)."""
    t = type(v)
    if t is str:
        return _go_quote(v)
    if v is None:
        return '"null"'
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return _go_float(v)
    return _go_json(v)


def _num(v: float) -> str:
    return str(v) if type(v) is int else _go_float(v)


# -- paths ---------------------------------------------------------------------------------------

def _path(path: Path, keys_as_index: bool) -> str:
    segs: list[Any] = []
    while path is not None:
        path, seg = path
        segs.append(seg)
    out: list[str] = []
    for seg in reversed(segs):
        if type(seg) is int or (keys_as_index and type(seg) is _Key):
            out.append(f"[{seg}]")
        else:
            out.append(f".{seg}" if out else seg)
    return "".join(out)


def _name(path: Path) -> str:
    """kube-openapi's path name: `spec.items[2].labels.key`."""
    return _path(path, False)


def _field(path: Path) -> str:
    """field.Path.String(): like `_name`, but map keys are subscripts (`spec.labels[key]`)."""
    return _path(path, True)


# -- causes --------------------------------------------------------------------------------------

def _invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_render(value)}: {detail}", field)


def _type_invalid(field: str, expected: str, actual: str) -> Cause:
    return Cause("FieldValueTypeInvalid",
                 f"Invalid value: {_go_quote(actual)}: {field} in body must be of type {expected}: "
                 f"{_go_quote(actual)}", field)


def _required(field: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", field)


def _duplicate(field: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {_render(value)}", field)


def _too_many(field: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", field)


def _composite(message: str) -> Cause:
    """kube-openapi's non-field errors (anyOf, oneOf, allOf, not) land at the root with an empty value."""
    return Cause("FieldValueInvalid", f'Invalid value: "": {message}', "")


class _Ctx:
    """Errors of one validation: kube-openapi's, then embedded-resource ones, then list-type ones."""

    __slots__ = ("errs", "lists", "meta")

    def __init__(self) -> None:
        self.errs: list[Cause] = []
        self.meta: list[Cause] = []
        self.lists: list[Cause] = []


# -- string formats, as kube-openapi's strfmt registry checks them ------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
_UUID3 = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
_UUID4 = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}", re.IGNORECASE)
_UUID5 = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}", re.IGNORECASE)
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
_HEXCOLOR = re.compile(r"#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_OCTET = r"(?:0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])"
_RGB = re.compile(rf"rgb\([ \t\n\f\r]*{_OCTET}[ \t\n\f\r]*,[ \t\n\f\r]*{_OCTET}[ \t\n\f\r]*,"
                  rf"[ \t\n\f\r]*{_OCTET}[ \t\n\f\r]*\)")
_SSN = re.compile(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}")
_CREDITCARD = re.compile(r"4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
                         r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|[+-][0-9]{2}:[0-9]{2})")
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)")
_SCALA_DURATION = re.compile("[ \t\n\f\r]*(?:[0-9]+[ \t\n\f\r]*[A-Za-z\u00b5]+[ \t\n\f\r]*)+")
_SCALA_PART = re.compile("([0-9]+)[ \t\n\f\r]*([A-Za-z\u00b5]+)")
_DURATION_UNITS = (("ns", "nano"), ("us", "\u00b5s", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
                   ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))
_HOST_CLASS = "a-zA-Z0-9$"  # non-ASCII letters and symbols are mapped onto 'a' and '$' first
_HOSTNAME = re.compile(rf"[{_HOST_CLASS}](?:-?[{_HOST_CLASS}]{{0,62}})?|"
                       rf"(?:[{_HOST_CLASS}](?:[{_HOST_CLASS}-]{{0,61}}[{_HOST_CLASS}])?\.)+[a-zA-Z]{{2,63}}")
_ATEXT = "A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~\u0080-\U0010ffff"
_ADDR_SPEC = (rf"(?:[{_ATEXT}]+(?:\.[{_ATEXT}]+)*|\"(?:[^\"\\\r\n]|\\.)*\")"
              rf"@(?:[{_ATEXT}]+(?:\.[{_ATEXT}]+)*|\[[^\[\]\\]*\])")
# `(?:[...]+|...)*` backtracks exponentially in Python's re on `a-a-a-...!`; RE2 answers in linear time.
_EMAIL = linear_regexp(rf"[ \t]*(?:{_ADDR_SPEC}|(?:[{_ATEXT} \t.]+|\"(?:[^\"\\\r\n]|\\.)*\")*[ \t]*<{_ADDR_SPEC}>)[ \t]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_FORBIDDEN = re.compile(r"[ \"#%<>\\^`{|}]")


def _full(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: pattern.fullmatch(s) is not None


def _is_date(s: str) -> bool:
    m = _DATE.fullmatch(s)
    if m is None:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    parts = s.lower().split("t")
    if len(s) < 4 or len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME.match(parts[1])
    return m is not None and m.end() == len(parts[1]) and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _is_duration(s: str) -> bool:
    if _GO_DURATION.fullmatch(s):
        return True
    if not _SCALA_DURATION.fullmatch(s):
        return False
    for _, unit in _SCALA_PART.findall(s):
        unit = unit.lower()
        for variants in _DURATION_UNITS:
            if unit.startswith(variants[-1]) or any(unit == v for v in variants):
                return True
    return False


def _ipv4_sloppy(s: str) -> bool:
    """net.ParseIP as Go < 1.17 did it: leading zeros allowed."""
    parts = s.split(".")
    return len(parts) == 4 and all(p.isascii() and p.isdigit() and int(p) <= 255 for p in parts)


def _strip_zeros(s: str) -> str:
    head, _, tail = s.rpartition(":")
    if "." in tail and _ipv4_sloppy(tail):
        tail = ".".join(str(int(p)) for p in tail.split("."))
    return f"{head}:{tail}" if head or s.startswith(":") else tail


def _parse_ip(s: str, sloppy: bool) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in s or not s.isascii():
        return None
    if sloppy:
        if _ipv4_sloppy(s):
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in s.split(".")))
        if ":" in s:
            s = _strip_zeros(s)
    try:
        return ipaddress.ip_address(s)
    except ValueError:
        return None


def _is_cidr(s: str) -> bool:
    addr, slash, bits = s.partition("/")
    ip = _parse_ip(addr, sloppy=True)
    if not slash or ip is None or not (bits.isascii() and bits.isdigit()):
        return False
    return int(bits) <= (32 if _ipv4_sloppy(addr) else 128)


def _is_mac(s: str) -> bool:
    """net.ParseMAC: 6, 8 or 20 octets as `xx:xx`, `xx-xx` or `xxxx.xxxx`."""
    if len(s) < 14 or not s.isascii():
        return False
    if s[2] in ":-":
        groups = s.split(s[2])
        size = 2
    elif s[4] == ".":
        groups = s.split(".")
        size = 4
    else:
        return False
    octets = len(groups) * size // 2
    return octets in (6, 8, 20) and all(len(g) == size and all(c in "0123456789abcdefABCDEF" for c in g)
                                        for g in groups)


def _is_hostname(s: str) -> bool:
    mapped = "".join(c if c.isascii() else "a" if unicodedata.category(c)[0] == "L"
                     else "$" if unicodedata.category(c)[0] == "S" else "!" for c in s)
    mapped = "".join("$" if c in "+<=>^`|~" else c for c in mapped)
    if _HOSTNAME.fullmatch(mapped) is None or len(s.encode()) > 255:
        return False
    return all(len(label.encode()) <= 63 for label in s.split("."))


def _is_request_uri(s: str) -> bool:
    """url.ParseRequestURI: an absolute URI or an absolute path."""
    if not s or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        return False
    if s == "*":
        return True
    m = _SCHEME.match(s)
    if m is None and s.startswith(":"):
        return False
    scheme, rest = (s[:m.end() - 1], s[m.end():]) if m else ("", s)
    rest = rest.split("?", 1)[0]
    if not rest.startswith("/"):
        return bool(scheme)
    if scheme and rest.startswith("//"):
        authority, _, rest = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            end = host.find("]")
            if end < 0:
                return False
            port = host[end + 1:]
            if port and not ((port[0] == ":" and port[1:].isdigit()) or port == ":"):
                return False
        elif ":" in host:
            port = host.rpartition(":")[2]
            if port and not (port.isascii() and port.isdigit()):
                return False
        if _HOST_FORBIDDEN.search(host.replace("%", "")) or _BAD_ESCAPE.search(authority):
            return False
    return _BAD_ESCAPE.search(rest) is None


def _is_email(s: str) -> bool:
    return _EMAIL.fullmatch(s) and "@" in s


def _isbn10(s: str) -> bool:
    s = re.sub(r"[\s-]+", "", s)
    if not re.fullmatch(r"[0-9]{9}X|[0-9]{10}", s):
        return False
    total = sum((i + 1) * int(c) for i, c in enumerate(s[:9])) + 10 * (10 if s[9] == "X" else int(s[9]))
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    s = re.sub(r"[\s-]+", "", s)
    if not re.fullmatch(r"[0-9]{13}", s):
        return False
    total = sum((1, 3)[i % 2] * int(c) for i, c in enumerate(s[:12]))
    return int(s[12]) == (10 - total % 10) % 10


def _is_creditcard(s: str) -> bool:
    s = re.sub(r"[^0-9]+", "", s)
    if not _CREDITCARD.fullmatch(s):
        return False
    total = 0
    for i, c in enumerate(reversed(s)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n >= 10 else n
    return total % 10 == 0


FORMATS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: len(s) == 24 and all(c in "0123456789abcdefABCDEF" for c in s),
    "uri": _is_request_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": lambda s: "." in s and _parse_ip(s, sloppy=True) is not None,
    "ipv6": lambda s: ":" in s and _parse_ip(s, sloppy=False) is not None,
    "cidr": _is_cidr,
    "mac": _is_mac,
    "uuid": _full(_UUID),
    "uuid3": _full(_UUID3),
    "uuid4": _full(_UUID4),
    "uuid5": _full(_UUID5),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _is_creditcard,
    "ssn": lambda s: len(s) == 11 and _SSN.fullmatch(s) is not None,
    "hexcolor": _full(_HEXCOLOR),
    "rgbcolor": _full(_RGB),
    "byte": _full(_BASE64),
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
}
"""kube's supported CRD formats, keyed by name without dashes; any other format (int32, int64, float,
double, ...) is stripped by kube before validation and so ignored here."""


# -- compiled nodes ------------------------------------------------------------------------------

_JSON_KIND = {str: ("string", ""), int: ("integer", "int64"), float: ("number", "float64"),
              bool: ("boolean", ""), list: ("array", ""), dict: ("object", "")}
_PY_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
             "array": (list,), "object": (dict,)}
_KINDS = (str, int, float, bool, list, dict)


def _json_int(f: float) -> bool:
    """swag.IsFloat64AJSONInteger: a float that is a whole number within JSON's safe integer range."""
    return math.isfinite(f) and abs(f) <= 2 ** 53 - 1 and f == math.floor(f)


def _near_int(f: float) -> bool:
    """IsFloat64AJSONInteger for multipleOf: whole within a relative error of 1e-9."""
    if not math.isfinite(f) or abs(f) > 2 ** 53 - 1:
        return False
    g = float(round(f))
    return f == g or abs(f - g) / (abs(f) + abs(g)) < 1e-9


def _type_problem(value: Any, types: tuple[str, ...], fmt: str) -> tuple[str, str] | None:
    """kube-openapi's typeValidator, quirks included: (expected, actual) when the type is wrong."""
    sch, data_fmt = _JSON_KIND[type(value)]
    float_int = sch == "number" and "integer" in types and _json_int(value)
    int_float = sch == "integer" and "number" in types
    strlike = type(value) in (str, list)
    if fmt and not strlike and not (sch in types or data_fmt == fmt or float_int or int_float):
        return fmt, data_fmt
    if fmt and strlike and "number" not in types and "integer" not in types:
        return None
    if not (sch in types or float_int or int_float):
        return ",".join(types), sch
    return None


def _enum_equal(data: Any, e: Any) -> bool:
    """reflect.DeepEqual after converting the value to the enum value's Go type, as kube-openapi does."""
    te, td = type(e), type(data)
    if te is int or te is float:
        if td is not int and td is not float:
            return False
        if te is int and td is float:
            return math.isfinite(data) and int(data) == e  # Go truncates float64 -> int64
        return data == e
    if te is bool or te is str:
        return td is te and data == e
    return td is te and _go_json(data) == _go_json(e)


class _Node:
    """One compiled schema node.

    `validate(value, path, ctx)` does kube-openapi's checks (plus, on structural nodes, the list-type and
    embedded-resource ones); `fast` holds the Python types for which it has nothing to do, so callers
    skip the call. The other attributes drive pruning and defaulting.
    """

    __slots__ = (
        "additional",
        "additional_allows",
        "allows_any",
        "deep_default_props",
        "default",
        "default_is_scalar",
        "default_props",
        "defaults_below",
        "embedded",
        "fast",
        "has_default",
        "items",
        "nullable",
        "preserve",
        "prop_items",
        "props",
        "validate",
    )

    additional: _Node | None  # additionalProperties as a schema
    additional_allows: bool  # additionalProperties is not false
    allows_any: bool  # additionalProperties is true
    deep_default_props: tuple[tuple[str, _Node], ...]  # properties with a default at or below them
    default: Any
    default_is_scalar: bool
    default_props: tuple[tuple[str, _Node], ...]  # properties with a default of their own
    defaults_below: bool
    embedded: bool
    fast: frozenset[type]
    has_default: bool
    items: _Node | None
    nullable: bool
    preserve: bool
    prop_items: tuple[tuple[str, _Node], ...]  # properties validated here (the root's meta fields left out)
    props: dict[str, _Node]
    validate: Check

    def copy_default(self) -> Any:
        return self.default if self.default_is_scalar else _copy_json(self.default)


def _copy_json(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return {k: _copy_json(x) for k, x in v.items()}
    if t is list:
        return [_copy_json(x) for x in v]
    return v


def _compile(s: Any, structural: bool, root: bool = False, depth: int = 0) -> _Node:
    """Compile one schema node; `structural` is false inside allOf/anyOf/oneOf/not (value validations)."""
    if not isinstance(s, dict):
        s = {}
    if depth > 200:
        raise ValueError("schema nesting is too deep")
    node = _Node()
    node.nullable = s.get("nullable") is True
    node.preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    node.embedded = root or s.get("x-kubernetes-embedded-resource") is True
    node.has_default = "default" in s and s["default"] is not None
    node.default = s.get("default")
    node.default_is_scalar = type(node.default) not in (dict, list)

    props_raw = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    node.props = {k: _compile(v, structural, False, depth + 1) for k, v in props_raw.items()}
    node.prop_items = tuple((k, n) for k, n in node.props.items() if not (root and k in META_FIELDS))
    extra = s.get("additionalProperties")
    node.additional = _compile(extra, structural, False, depth + 1) if isinstance(extra, dict) else None
    node.additional_allows = extra is not False
    node.allows_any = extra is True
    node.items = _compile(s["items"], structural, False, depth + 1) if isinstance(s.get("items"), dict) else None

    node.default_props = tuple((k, n) for k, n in node.props.items() if n.has_default)
    node.deep_default_props = tuple((k, n) for k, n in node.props.items() if n.defaults_below)
    node.defaults_below = bool(node.has_default or node.deep_default_props
                               or (node.additional is not None and node.additional.defaults_below)
                               or (node.items is not None and node.items.defaults_below))
    _build_validator(node, s, structural, root, depth)
    return node


def _build_validator(node: _Node, s: Obj, structural: bool, root: bool, depth: int) -> None:
    """node.validate: kube-openapi's validators in its order, only those that apply to the value's kind."""
    raw_fmt = s.get("format")
    fmt = raw_fmt if isinstance(raw_fmt, str) else ""
    fmt = fmt if fmt.replace("-", "") in FORMATS else ""  # kube strips every other format
    if s.get("x-kubernetes-int-or-string") is True:
        types: tuple[str, ...] = ("integer", "string")
    else:
        types = (s["type"],) if isinstance(s.get("type"), str) and s["type"] else ()
    typed = bool(types or fmt)
    ok_types = frozenset(t for name in types for t in _PY_TYPES.get(name, ())) if typed else frozenset(_KINDS)
    if "integer" in types and "number" not in types:
        ok_types -= {float}  # whole floats are integers: checked on the slow path
    null_error = bool(types) and "null" not in types and not node.nullable
    type_name = ",".join(types)

    common = [c for c in (_junctor_check(s, depth),) if c is not None]
    enum_check = _enum_check(s)
    tail = [enum_check] if enum_check is not None else []
    number = [c for c in (_number_check(s),) if c is not None]
    slice_ = [c for c in (_slice_check(node, s, structural),) if c is not None]
    object_ = [c for c in (_object_check(node, s, structural, root),) if c is not None]
    by_kind: dict[type, tuple[Check, ...]] = {
        str: tuple(common + _string_checks(s, fmt) + tail),
        int: tuple(common + number + tail),
        float: tuple(common + number + tail),
        bool: tuple(common + tail),
        list: tuple(common + slice_ + tail),
        dict: tuple(common + tail + object_),
    }
    node.fast = frozenset(t for t in ok_types if not by_kind[t])

    def validate(value: Any, path: Path, ctx: _Ctx) -> None:
        if value is None:  # kube-openapi runs only the type and enum checks on null
            if null_error:
                ctx.errs.append(_type_invalid(_name(path), type_name, "null"))
            if enum_check is not None:
                enum_check(value, path, ctx)
            return
        t = type(value)
        if t not in ok_types:
            problem = _type_problem(value, types, fmt)
            if problem is not None:
                ctx.errs.append(_type_invalid(_name(path), problem[0], problem[1]))
        for check in by_kind.get(t, ()):
            check(value, path, ctx)

    node.validate = validate


def _string_checks(s: Obj, fmt: str) -> list[Check]:
    checks: list[Check] = []
    max_len, min_len = _int_or_none(s.get("maxLength")), _int_or_none(s.get("minLength"))
    pattern_text = s.get("pattern") if isinstance(s.get("pattern"), str) and s.get("pattern") else None
    pattern = go_regexp(pattern_text) if pattern_text else None
    if max_len is not None or min_len is not None or pattern is not None:
        def string_check(value: str, path: Path, ctx: _Ctx) -> None:
            # kube-openapi reports only the first of these
            if max_len is not None and len(value) > max_len:
                ctx.errs.append(Cause("FieldValueTooLong", TOO_LONG.format(max_len), _name(path)))
            elif min_len is not None and len(value) < min_len:
                name = _name(path)
                ctx.errs.append(_invalid(name, value, f"{name} in body should be at least {min_len} chars long"))
            elif pattern is not None and not pattern.search(value):
                name = _name(path)
                ctx.errs.append(_invalid(name, value, f"{name} in body should match '{pattern_text}'"))
        checks.append(string_check)
    if fmt:
        valid = FORMATS[fmt.replace("-", "")]

        def format_check(value: str, path: Path, ctx: _Ctx) -> None:
            if not valid(value):
                name = _name(path)
                ctx.errs.append(Cause("FieldValueTypeInvalid", f"Invalid value: {_go_quote(value)}: {name} in body "
                                                               f"must be of type {fmt}: {_go_quote(value)}", name))
        checks.append(format_check)
    return checks


def _int_or_none(v: Any) -> int | None:
    return int(v) if type(v) in (int, float) else None


def _number(v: Any) -> float | None:
    return v if type(v) in (int, float) else None


def _number_check(s: Obj) -> Check | None:
    maximum, minimum, multiple = _number(s.get("maximum")), _number(s.get("minimum")), _number(s.get("multipleOf"))
    ex_max, ex_min = s.get("exclusiveMaximum") is True, s.get("exclusiveMinimum") is True
    if maximum is None and minimum is None and multiple is None:
        return None

    def number_check(value: float, path: Path, ctx: _Ctx) -> None:
        is_int = type(value) is int  # kube compares ints against the bound truncated to an integer
        if multiple is not None and multiple > 0:
            factor = int(multiple) if is_int and int(multiple) != 0 else float(multiple)
            if type(factor) is int:
                bad = value % factor != 0
            else:
                bad = not _near_int(value / multiple if multiple >= 1 else (1 / multiple) * value)
            if bad:
                name = _name(path)
                ctx.errs.append(_invalid(name, value, f"{name} in body should be a multiple of {_num(factor)}"))
        if minimum is not None:
            bound = int(minimum) if is_int else float(minimum)
            if value < bound or (ex_min and value <= bound):
                name = _name(path)
                word = "greater than" if ex_min else "greater than or equal to"
                ctx.errs.append(_invalid(name, value, f"{name} in body should be {word} {_num(bound)}"))
        if maximum is not None:
            bound = int(maximum) if is_int else float(maximum)
            if value > bound or (ex_max and value >= bound):
                name = _name(path)
                word = "less than" if ex_max else "less than or equal to"
                ctx.errs.append(_invalid(name, value, f"{name} in body should be {word} {_num(bound)}"))

    return number_check


def _enum_check(s: Obj) -> Check | None:
    enum = s.get("enum")
    if not isinstance(enum, list) or not enum:
        return None
    supported = ", ".join(_go_quote(e if type(e) is str else _go_json(e)) for e in enum)
    strings = frozenset(e for e in enum if type(e) is str)
    others = [e for e in enum if type(e) is not str and e is not None]

    def enum_check(value: Any, path: Path, ctx: _Ctx) -> None:
        if type(value) is str:
            if value in strings:
                return
        elif value is not None and any(_enum_equal(value, e) for e in others):
            return
        ctx.errs.append(Cause("FieldValueNotSupported", f"Unsupported value: {_render(value)}: supported values: "
                                                        f"{supported}", _name(path)))

    return enum_check


def _errors_of(node: _Node, value: Any, path: Path) -> list[Cause]:
    ctx = _Ctx()
    node.validate(value, path, ctx)
    return ctx.errs


def _junctor_check(s: Obj, depth: int) -> Check | None:
    """allOf / anyOf / oneOf / not: value validations, reported with kube-openapi's composite messages."""
    def subs(key: str) -> list[_Node]:
        raw = s.get(key)
        return [_compile(x, False, False, depth + 1) for x in raw] if isinstance(raw, list) else []

    any_of, one_of, all_of = subs("anyOf"), subs("oneOf"), subs("allOf")
    not_ = _compile(s["not"], False, False, depth + 1) if isinstance(s.get("not"), dict) else None
    if not (any_of or one_of or all_of or not_):
        return None

    def junctors(value: Any, path: Path, ctx: _Ctx) -> None:
        if any_of:
            best: list[Cause] | None = None
            for sub in any_of:
                errs = _errors_of(sub, value, path)
                if not errs:
                    break
                best = errs if best is None else best
            else:
                ctx.errs.append(_composite(f"{_go_quote(_name(path))} must validate at least one schema (anyOf)"))
                ctx.errs.extend(best or ())
        if one_of:
            valid, best = 0, None
            for sub in one_of:
                errs = _errors_of(sub, value, path)
                if not errs:
                    valid += 1
                elif best is None:
                    best = errs
            if valid != 1:
                found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                ctx.errs.append(_composite(f"{_go_quote(_name(path))} must validate one and only one schema "
                                           f"(oneOf). {found}"))
                if valid == 0:
                    ctx.errs.extend(best or ())
        if all_of:
            valid = 0
            for sub in all_of:
                errs = _errors_of(sub, value, path)
                valid += not errs
                ctx.errs.extend(errs)
            if valid != len(all_of):
                more = ". None validated" if valid == 0 else ""
                ctx.errs.append(_composite(f"{_go_quote(_name(path))} must validate all the schemas (allOf){more}"))
        if not_ is not None and not _errors_of(not_, value, path):
            ctx.errs.append(_composite(f"{_go_quote(_name(path))} must not validate the schema (not)"))

    return junctors


def _set_key(x: Any) -> Any:
    """Go's map-key identity for list-set items: scalars by type and value, compounds by their JSON."""
    t = type(x)
    return ("json", _go_json(x)) if t is dict or t is list else (t, x)


class _Unspecified:
    pass


_UNSPECIFIED = _Unspecified()


def _duplicate_indices(keys: list[Any]) -> list[int]:
    """The index of each value's second appearance (kube reports each duplicated value once)."""
    seen: dict[Any, int] = {}
    out = []
    for i, k in enumerate(keys):
        key = _set_key(k) if k is not _UNSPECIFIED else _UNSPECIFIED
        count = seen.get(key, 0)
        if count == 1:
            out.append(i)
        seen[key] = count + 1
    return out


def _list_type_check(s: Obj) -> Callable[[list[Any], Path, _Ctx], None] | None:
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        def check_set(value: list[Any], path: Path, ctx: _Ctx) -> None:
            if len(value) > 1:
                for i in _duplicate_indices(value):
                    ctx.lists.append(_duplicate(_field((path, i)), value[i]))
        return check_set
    if list_type != "map":
        return None
    keys = [k for k in s.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]

    def check_map(value: list[Any], path: Path, ctx: _Ctx) -> None:
        for i, x in enumerate(value):
            if x is not None and type(x) is not dict:
                ctx.lists.append(_invalid(_field((path, i)), x, "must be an object for an array of list-type map"))
                return
        if len(value) <= 1:
            return
        if len(keys) == 1:
            key = keys[0]
            found = [_UNSPECIFIED if x is None else x.get(key, _UNSPECIFIED) for x in value]
            for i in _duplicate_indices(found):
                ctx.lists.append(_duplicate(_field((path, i)), {} if found[i] is _UNSPECIFIED else {key: found[i]}))
            return
        tuples = [{} if x is None else {k: x[k] for k in keys if k in x} for x in value]
        for i in _duplicate_indices(tuples):
            ctx.lists.append(_duplicate(_field((path, i)), tuples[i]))

    return check_map


def _slice_check(node: _Node, s: Obj, structural: bool) -> Check | None:
    items = node.items
    min_items, max_items = _int_or_none(s.get("minItems")), _int_or_none(s.get("maxItems"))
    unique = s.get("uniqueItems") is True
    list_check = _list_type_check(s) if structural else None
    if items is None and min_items is None and max_items is None and not unique and list_check is None:
        return None
    fast = items.fast if items is not None else frozenset()

    def slice_check(value: list[Any], path: Path, ctx: _Ctx) -> None:
        if items is not None:
            for i, item in enumerate(value):
                if type(item) not in fast:
                    items.validate(item, (path, i), ctx)
        size = len(value)
        if min_items is not None and size < min_items:
            name = _name(path)
            ctx.errs.append(_invalid(name, size, f"{name} in body should have at least {min_items} items"))
        if max_items is not None and size > max_items:
            ctx.errs.append(_too_many(_name(path), size, max_items))
        if unique and _duplicate_indices(value):
            name = _name(path)
            ctx.errs.append(_invalid(name, "", f"{name} in body shouldn't contain duplicates"))
        if list_check is not None:
            list_check(value, path, ctx)

    return slice_check


def _object_check(node: _Node, s: Obj, structural: bool, root: bool) -> Check | None:
    min_props, max_props = _int_or_none(s.get("minProperties")), _int_or_none(s.get("maxProperties"))
    required = tuple(k for k in s.get("required") or () if isinstance(k, str))
    props, prop_items, extra = node.props, node.prop_items, node.additional
    forbid_extra = not node.additional_allows
    embedded = structural and node.embedded and not root
    root_meta = _root_metadata_check(node) if root else None
    if not (min_props is not None or max_props is not None or required or prop_items or extra is not None
            or forbid_extra or embedded or root_meta):
        return None

    def descend(value: Obj, path: Path, ctx: _Ctx) -> None:
        if forbid_extra:
            for k in value:
                if k not in props and not (root and k in META_FIELDS):
                    name = _name(path)
                    ctx.errs.append(_invalid(name, k, f"{name}.{k} in body is a forbidden property"))
        elif extra is not None:
            fast = extra.fast
            for k, v in value.items():
                if k not in props and type(v) not in fast and not (root and k in META_FIELDS):
                    extra.validate(v, (path, _Key(k)), ctx)
        for k, child in prop_items:
            v = value.get(k, _MISSING)
            if v is not _MISSING and type(v) not in child.fast:
                child.validate(v, (path, k), ctx)
        for k in required:
            if k not in value:
                ctx.errs.append(_required(_name((path, k))))
        if root_meta is not None:
            root_meta(value, ctx)

    def object_check(value: Obj, path: Path, ctx: _Ctx) -> None:
        if embedded:
            ctx.meta.extend(_embedded_errors(value, _field(path)))
        size = len(value)
        problem = None
        if min_props is not None and size < min_props:
            name = _name(path)
            problem = _invalid(name, size, f"{name} in body should have at least {min_props} properties")
        elif max_props is not None and size > max_props:
            problem = _too_many(_name(path), size, max_props)
        if problem is None:
            descend(value, path, ctx)
            return
        # kube-openapi stops here; the list-type and embedded-resource passes still look inside
        ctx.errs.append(problem)
        saved, ctx.errs = ctx.errs, []
        descend(value, path, ctx)
        ctx.errs = saved

    return object_check


def _root_metadata_check(node: _Node) -> Callable[[Obj, _Ctx], None] | None:
    """Schemas may restrict metadata.name and metadata.generateName; the rest of metadata is the server's."""
    meta = node.props.get("metadata")
    checks = [(k, meta.props[k]) for k in ("name", "generateName") if meta is not None and k in meta.props]
    if not checks:
        return None

    def root_meta(value: Obj, ctx: _Ctx) -> None:
        metadata = value.get("metadata")
        if type(metadata) is dict:
            for k, child in checks:
                if k in metadata and type(metadata[k]) not in child.fast:
                    child.validate(metadata[k], ((None, "metadata"), k), ctx)

    return root_meta


# -- embedded resources ----------------------------------------------------------------------------

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character")
_META_TYPES = {"name": str, "generateName": str, "namespace": str, "selfLink": str, "uid": str,
               "resourceVersion": str, "creationTimestamp": str, "deletionTimestamp": str, "generation": int,
               "deletionGracePeriodSeconds": int, "labels": dict, "annotations": dict, "finalizers": list,
               "ownerReferences": list, "managedFields": list}
_GO_TYPES = {str: "string", int: "int64", dict: "map[string]string", list: "[]string"}
_JSON_NAMES = {str: "string", int: "number", float: "number", bool: "bool", list: "array", dict: "object"}


def _object_meta_error(meta: Any) -> str:
    """encoding/json's complaint when metadata does not decode into an ObjectMeta, or ""."""
    if type(meta) is not dict:
        return f"json: cannot unmarshal {_JSON_NAMES.get(type(meta), 'value')} into Go value of type v1.ObjectMeta"
    for k, want in _META_TYPES.items():
        v = meta.get(k)
        if v is None:
            continue
        ok = type(v) is want or (want is int and type(v) is float and v.is_integer())
        if ok and want is dict:
            bad = next((x for x in v.values() if x is not None and type(x) is not str), _MISSING)
            if bad is not _MISSING:
                return (f"json: cannot unmarshal {_JSON_NAMES[type(bad)]} into Go struct field ObjectMeta.{k} "
                        "of type string")
        if ok and k == "finalizers":
            bad = next((x for x in v if x is not None and type(x) is not str), _MISSING)
            if bad is not _MISSING:
                return (f"json: cannot unmarshal {_JSON_NAMES[type(bad)]} into Go struct field ObjectMeta.{k} "
                        "of type string")
        if not ok:
            go = "[]v1.OwnerReference" if k == "ownerReferences" else "[]v1.ManagedFieldsEntry" \
                if k == "managedFields" else _GO_TYPES[want]
            return f"json: cannot unmarshal {_JSON_NAMES[type(v)]} into Go struct field ObjectMeta.{k} of type {go}"
    return ""


def _embedded_errors(x: Obj, at: str) -> list[Cause]:
    """schemaobjectmeta's validateEmbeddedResource: apiVersion and kind required, metadata as ObjectMeta."""
    errs: list[Cause] = []
    for key in ("apiVersion", "kind"):
        if key not in x:
            errs.append(_required(f"{at}.{key}"))
    if "apiVersion" in x:
        v = x["apiVersion"]
        if type(v) is not str:
            errs.append(_invalid(f"{at}.apiVersion", v, "must be a string"))
        elif not v:
            errs.append(_invalid(f"{at}.apiVersion", v, "must not be empty"))
        elif v != "/" and v.count("/") > 1:
            errs.append(_invalid(f"{at}.apiVersion", v, f"unexpected GroupVersion string: {v}"))
    if "kind" in x:
        v = x["kind"]
        if type(v) is not str:
            errs.append(_invalid(f"{at}.kind", v, "must be a string"))
        elif not v:
            errs.append(_invalid(f"{at}.kind", v, "must not be empty"))
        else:
            problems = []
            if len(v.encode()) > 63:
                problems.append(max_len_error(63))
            if _DNS1035.fullmatch(v.lower()) is None:
                problems.append(regex_error(_DNS1035_MSG, _DNS1035.pattern, "my-name", "abc-123"))
            if problems:
                errs.append(_invalid(f"{at}.kind", v, "may have mixed case, but should otherwise match: "
                                     + ",".join(problems)))
    if "metadata" in x:
        meta = x["metadata"]
        problem = _object_meta_error(meta)
        if problem:
            errs.append(_invalid(f"{at}.metadata", meta, problem))
        elif type(meta) is dict:
            checked = dict(meta)
            checked["name"] = checked.get("name") or "fakename"
            for c in validate_object_meta(checked, namespaced=bool(checked.get("namespace")),
                                          name_is_path_segment=True):
                errs.append(Cause(c.reason, c.message, at + "." + c.field if c.field else at))
    return errs


# -- pruning -----------------------------------------------------------------------------------------

_OBJECT_META_FIELDS = frozenset(_META_TYPES)


def _join(p: str, k: str) -> str:
    return f"{p}.{k}" if p else k


def _prune_object_meta(meta: Obj, p: str, out: list[str]) -> None:
    """An embedded resource's metadata goes through ObjectMeta: unknown fields and empty values drop."""
    for k in [k for k in meta if k not in _OBJECT_META_FIELDS]:
        out.append(_join(p, k))
        del meta[k]
    for k in [k for k, v in meta.items() if v is None or (v in ("", {}, []) and k != "deletionGracePeriodSeconds")
              or (k == "generation" and v == 0 and type(v) is not bool)]:
        del meta[k]


def _prune(x: Any, node: _Node | None, p: str, out: list[str], root: bool = False) -> None:
    """structural pruning of a dict or list `x` (PruneWithOptions), non-nullable nulls included."""
    if node is not None and node.preserve:
        _skip_prune(x, node, p, out, root)
        return
    if type(x) is list:
        items = node.items if node is not None else None
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                _prune(v, items, f"{p}[{i}]", out)
        return
    if node is None:
        out.extend(_join(p, k) for k in x)
        x.clear()
        return
    props, extra, embedded = node.props, node.additional, node.embedded
    drop: list[str] = []
    for k, v in x.items():
        if embedded and k in META_FIELDS:
            if not root and k == "metadata" and type(v) is dict:
                _prune_object_meta(v, _join(p, k), out)
            child = props.get(k)
            if v is None and child is not None and not child.nullable and not child.has_default:
                drop.append(k)
            continue
        child = props.get(k)  # props never maps to None
        if child is None:
            if extra is None and not node.allows_any:
                out.append(_join(p, k))
                drop.append(k)
                continue
            child = extra
        t = type(v)
        if v is None:
            if child is not None and not child.nullable and not child.has_default:
                drop.append(k)
        elif t is dict or t is list:
            _prune(v, child, _join(p, k), out)
    for k in drop:
        del x[k]


def _skip_prune(x: Any, node: _Node, p: str, out: list[str], root: bool = False) -> None:
    """Under x-kubernetes-preserve-unknown-fields unknown keys stay; known ones are still pruned."""
    if type(x) is list:
        items = node.items
        if items is not None:
            for i, v in enumerate(x):
                if type(v) is dict or type(v) is list:
                    _skip_prune(v, items, f"{p}[{i}]", out)
        return
    props, extra, embedded = node.props, node.additional, node.embedded
    drop: list[str] = []
    for k, v in x.items():
        if embedded and k in META_FIELDS:
            if not root and k == "metadata" and type(v) is dict:
                _prune_object_meta(v, _join(p, k), out)
            continue
        child = props.get(k, extra)
        if child is None:
            continue
        t = type(v)
        if v is None:
            if not child.nullable and not child.has_default:
                drop.append(k)
        elif t is dict or t is list:
            _prune(v, child, _join(p, k), out)
    for k in drop:
        del x[k]


# -- defaulting ----------------------------------------------------------------------------------------

def _default(x: Any, node: _Node) -> None:
    """structural defaulting: fill missing (or non-nullable null) fields, then recurse, defaults included."""
    t = type(x)
    if t is dict:
        for k, child in node.default_props:
            v = x.get(k, _MISSING)
            if v is _MISSING or (v is None and not child.nullable):
                x[k] = child.copy_default()
        for k, child in node.deep_default_props:
            v = x.get(k)
            if type(v) is dict or type(v) is list:
                _default(v, child)
        extra = node.additional
        if extra is not None and extra.defaults_below:
            props = node.props
            for k, v in x.items():
                if k in props:
                    continue
                if v is None and not extra.nullable and extra.has_default:
                    x[k] = v = extra.copy_default()
                if type(v) is dict or type(v) is list:
                    _default(v, extra)
    elif t is list:
        items = node.items
        if items is not None and items.defaults_below:
            for i, v in enumerate(x):
                if v is None and not items.nullable and items.has_default:
                    x[i] = v = items.copy_default()
                if type(v) is dict or type(v) is list:
                    _default(v, items)


# -- public API ----------------------------------------------------------------------------------------

class CompiledSchema:
    """A CRD version's openAPIV3Schema, compiled once: callers cache one per schema."""

    __slots__ = ("_root", "schema")

    def __init__(self, schema: Obj) -> None:
        self.schema = schema
        self._root = _compile(schema, True, root=True)

    @property
    def has_defaults(self) -> bool:
        """Whether any structural node has a default (reads then need defaulting too)."""
        return self._root.defaults_below

    def validate(self, obj: Obj) -> list[Cause]:
        """Every schema violation of obj, as kube's ValidateCustomResource and the strategy's passes word them."""
        ctx = _Ctx()
        if type(obj) not in self._root.fast:
            self._root.validate(obj, None, ctx)
        errs = ctx.errs
        if len(errs) > 1:  # kube-openapi's Result drops repeated messages
            seen: set[tuple[str, str]] = set()
            unique: list[Cause] = []
            for c in errs:
                key = (c.field, c.message)
                if key not in seen:
                    seen.add(key)
                    unique.append(c)
            errs = unique
        return errs + ctx.meta + ctx.lists

    def prune(self, obj: Obj) -> list[str]:
        """Drop fields the schema does not know, in place; return their paths, sorted, as kube reports them.

        Non-nullable nulls without a default are dropped too (not reported), as kube's decoder does.
        """
        out: list[str] = []
        if type(obj) is dict:
            _prune(obj, self._root, "", out, root=True)
        out.sort()
        return out

    def apply_defaults(self, obj: Obj) -> None:
        """Apply the schema's defaults in place (after pruning, as kube does)."""
        if self._root.defaults_below and type(obj) is dict:
            _default(obj, self._root)


def compile_schema(openapi_v3_schema: Obj) -> CompiledSchema:
    """Compile a CRD version's openAPIV3Schema (a structural schema) into validator, pruner and defaulter."""
    return CompiledSchema(openapi_v3_schema if isinstance(openapi_v3_schema, dict) else {})
