"""A CRD version's subresources (scale paths), printer columns and selectable fields, as kube
validates them."""

from __future__ import annotations

import re

from kcp_apiserver.apiextensions.fields import Obj, duplicate, get, get_str, too_many
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required

MAX_SELECTABLE_FIELDS = 8
PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")


def _simple_json_path(value: str, path: str) -> list[Cause]:
    if not value:
        return [invalid(path, value, "must not be empty")]
    if value[0] != ".":
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def validate_subresources(sub: Obj | None, path: str) -> list[Cause]:
    scale = get(sub, "scale")
    if scale is None:
        return []
    causes: list[Cause] = []
    for key, prefix, where in (("specReplicasPath", ".spec.", ".spec"), ("statusReplicasPath", ".status.", ".status")):
        value, fpath = get_str(scale, key), f"{path}.scale.{key}"
        if not value:
            causes.append(required(fpath))
        elif errs := _simple_json_path(value, fpath):
            causes += errs
        elif not value.startswith(prefix):
            causes.append(invalid(fpath, value, f"should be a json path under {where}"))
    selector = get_str(scale, "labelSelectorPath")
    if selector:
        fpath = f"{path}.scale.labelSelectorPath"
        if errs := _simple_json_path(selector, fpath):
            causes += errs
        elif not selector.startswith((".spec.", ".status.")):
            causes.append(invalid(fpath, selector, "should be a json path under either .spec or .status"))
    return causes


def validate_column(col: Obj, path: str) -> list[Cause]:
    """A printer column; kube reports the jsonPath at its internal name, `JSONPath`."""
    causes: list[Cause] = []
    if not get_str(col, "name"):
        causes.append(required(f"{path}.name"))
    types = ",".join(PRINTER_COLUMN_TYPES)
    kind = get_str(col, "type")
    if not kind:
        causes.append(required(f"{path}.type", f"must be one of {types}"))
    elif kind not in PRINTER_COLUMN_TYPES:
        causes.append(invalid(f"{path}.type", kind, f"must be one of {types}"))
    fmt = get_str(col, "format")
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        causes.append(invalid(f"{path}.format", fmt, f"must be one of {','.join(PRINTER_COLUMN_FORMATS)}"))
    json_path = get_str(col, "jsonPath")
    if not json_path:
        causes.append(required(f"{path}.JSONPath"))
    else:
        causes += _simple_json_path(json_path, f"{path}.JSONPath")
    return causes


_PATH_PART = re.compile(r"\.([A-Za-z_$][A-Za-z0-9_$-]*)|\['((?:[^'\\]|\\.)*)'\]")


def _resolve_field_path(schema: Obj, json_path: str) -> tuple[list[str], Obj | None, str]:
    """A selectable field's path (`.spec.a` or `['a']`, no array indexes) and the schema it reaches."""
    parts: list[str] = []
    pos = 0
    while pos < len(json_path):
        match = _PATH_PART.match(json_path, pos)
        if match is None:
            return parts, None, f"expected [ or . at position {pos}"
        parts.append(match.group(1) if match.group(1) is not None else match.group(2))
        pos = match.end()
    if not parts:
        return parts, None, "must not be empty"
    node: Obj | None = schema
    for i, part in enumerate(parts):
        props = get(node, "properties") or {}
        if part in props:
            node = props[part]
        elif isinstance(get(node, "additionalProperties"), dict):
            node = node["additionalProperties"]  # type: ignore[index]
        else:
            where = "." + ".".join(parts[:i + 1])
            return parts, None, f"does not refer to a valid field: {where}"
    return parts, node, ""


def validate_selectable(fields: list[Obj], schema: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, sel in enumerate(fields):
        ipath = f"{path}[{i}].jsonPath"
        json_path = get_str(sel, "jsonPath")
        if not json_path:
            causes.append(required(ipath))
            continue
        parts, node, err = _resolve_field_path(schema, json_path)
        if err:
            causes.append(invalid(ipath, json_path, f"is an invalid path: {err}"))
            continue
        if parts[0] == "metadata":
            causes.append(invalid(ipath, json_path, "must not point to fields in metadata"))
        if get_str(node, "type") not in ("string", "boolean", "integer"):
            causes.append(invalid(ipath, json_path, "must point to a field of type string, boolean or integer. "
                                                    "Enum string fields and strings with formats are allowed."))
        key = ".".join(parts)
        if key in seen:
            causes.append(duplicate(ipath, json_path))
        seen.add(key)
    if len(seen) > MAX_SELECTABLE_FIELDS:
        causes.append(too_many(path, len(seen), MAX_SELECTABLE_FIELDS))
    return causes
