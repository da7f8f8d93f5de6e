"""The vocabulary every CRD rule module shares: fields as kube's Go types decode them, field paths,
the field errors kube words, and walking a JSONSchemaProps tree."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import max_len_error, regex_error, render_value, required

Obj = dict[str, Any]
META_FIELDS = ("metadata", "kind", "apiVersion")

DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                      "alphabetic character, and end with an alphanumeric character")
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)


# -- kube's field.Error kinds that apimachinery.validation has no builder for ---------------

def not_supported(path: str, value: Any, supported: list[str] | tuple[str, ...]) -> Cause:
    quoted = ", ".join(f'"{s}"' for s in supported)
    return Cause("FieldValueNotSupported", f"Unsupported value: {render_value(value)}: supported values: {quoted}",
                 path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {render_value(value)}", path)


def too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", path)


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be longer than {limit}", path)


def validate_dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: versions, plurals, singulars, short names and categories."""
    errs = []
    if len(value.encode("utf-8", "surrogatepass")) > 63:
        errs.append(max_len_error(63))
    if _DNS1035_LABEL_RE.fullmatch(value) is None:
        errs.append(regex_error(_DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


# -- field paths and fields as Go decodes them ----------------------------------------------------

def sub_path(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def key_path(path: str, key: Any) -> str:
    return f"{path}[{key}]"


def get(obj: Any, key: str) -> Any:
    """A field as Go decodes it: absent and JSON null are the same zero value."""
    return obj.get(key) if isinstance(obj, dict) else None


def get_str(obj: Any, key: str) -> str:
    value = get(obj, key)
    return value if isinstance(value, str) else ""


def enum_value(path: str, value: str, accepted: tuple[str, ...]) -> list[Cause]:
    """validateEnumStrings: required, and one of the accepted values."""
    if not value:
        return [required(path)]
    return [] if value in accepted else [not_supported(path, value, accepted)]


# -- schema traversal helpers -------------------------------------------------------------------

def sub_schemas(s: Obj) -> list[Obj]:
    """Every schema directly below s, wherever JSONSchemaProps can nest one."""
    subs: list[Any] = []
    items = get(s, "items")
    subs += items if isinstance(items, list) else [items]
    for key in ("allOf", "anyOf", "oneOf"):
        subs += get(s, key) or []
    subs.append(get(s, "not"))
    for key in ("properties", "patternProperties", "definitions"):
        subs += list((get(s, key) or {}).values())
    for key in ("additionalProperties", "additionalItems"):
        subs.append(get(s, key))
    subs += list((get(s, "dependencies") or {}).values())
    return [x for x in subs if isinstance(x, dict)]


def schema_has(s: Any, pred: Callable[[Obj], bool]) -> bool:
    if not isinstance(s, dict):
        return False
    return pred(s) or any(schema_has(sub, pred) for sub in sub_schemas(s))
