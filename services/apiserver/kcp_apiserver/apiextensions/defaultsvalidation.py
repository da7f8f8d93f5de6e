"""Defaults inside a CRD schema (kube's ValidateDefaults): each must survive pruning and validate
against its own schema node, worded as kube's ValidateCustomResource words value problems."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.apiextensions.fields import (
    META_FIELDS,
    Obj,
    get,
    get_str,
    not_supported,
    schema_has,
    sub_path,
    too_long,
    too_many,
)
from kcp_apiserver.apiextensions.goregexp import go_regexp
from kcp_apiserver.apiextensions.structural import structural_init_error, validate_structural
from kcp_apiserver.apimachinery.jsonvalues import json_equal, json_type
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, render_value, required


def validate_defaults(schema: Obj, path: str, require_pruned: bool = True) -> list[Cause]:
    """Every default must survive pruning and validate against its own schema node.

    Run only on structural schemas. The root counts as an embedded resource, so defaults under
    its apiVersion/kind/metadata are judged as metadata (here: by value only).
    """
    return _defaults(schema, path, False, require_pruned, root=True)


def _defaults(s: Obj, path: str, inside_meta: bool, require_pruned: bool, root: bool = False) -> list[Cause]:
    embedded = root or s.get("x-kubernetes-embedded-resource") is True
    if embedded:
        inside_meta = False
    causes: list[Cause] = []
    default = s.get("default")
    if default is not None:
        dpath = f"{path}.default"
        if not inside_meta and require_pruned:
            pruned = copy.deepcopy(default)
            prune(pruned, s, embedded)
            if pruned != default:
                causes.append(invalid(dpath, default, "must not have unknown fields"))
        causes += value_causes(dpath, default, s)
    if isinstance(get(s, "items"), dict):
        causes += _defaults(s["items"], f"{path}.items", inside_meta, require_pruned)
    for name, sub in (get(s, "properties") or {}).items():
        causes += _defaults(sub, f"{path}.properties[{name}]", inside_meta or (embedded and name in META_FIELDS),
                            require_pruned)
    return causes


def prune(value: Any, s: Obj | None, resource_root: bool = False) -> None:
    """Drop, in place, object fields the structural schema does not specify (kube's pruning)."""
    if s is None:
        return
    if isinstance(value, dict):
        props = get(s, "properties") or {}
        extra = get(s, "additionalProperties")
        preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = resource_root or s.get("x-kubernetes-embedded-resource") is True
        for key in list(value):
            if embedded and key in META_FIELDS:
                continue
            if key in props:
                prune(value[key], props[key], False)
            elif isinstance(extra, dict):
                prune(value[key], extra, False)
            elif extra is True or preserve:
                continue
            else:
                del value[key]
    elif isinstance(value, list) and isinstance(get(s, "items"), dict):
        for item in value:
            prune(item, s["items"], False)


def has_unpruned_defaults(schema: Obj) -> bool:
    """Whether a stored schema already has defaults with unknown fields (then updates may keep them)."""
    if not schema_has(schema, lambda n: get(n, "default") is not None):
        return False
    if structural_init_error(schema) is not None or validate_structural(schema, ""):
        return False

    def walk(s: Obj) -> bool:
        default = s.get("default")
        if default is not None:
            pruned = copy.deepcopy(default)
            prune(pruned, s, s.get("x-kubernetes-embedded-resource") is True)
            if pruned != default:
                return True
        subs = [s["items"]] if isinstance(get(s, "items"), dict) else []
        return any(walk(x) for x in subs + list((get(s, "properties") or {}).values()))

    return walk(schema)


def _go_value(value: Any) -> str:
    """fmt's %v for a JSON value, as kube-openapi puts limits and enum values in messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if value is None:
        return "<nil>"
    if isinstance(value, (str, int, float)):
        return str(value)
    return render_value(value)


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return json_type(value) == kind


@dataclass
class _Problem:
    code: str
    name: str
    value: Any = None
    detail: Any = None
    extra: list[Any] = field(default_factory=list)


def _check(value: Any, s: Obj, name: str, out: list[_Problem]) -> None:
    """kube-openapi's schema validation of one value (type, enum, bounds, junctors, nested fields)."""
    if value is None and s.get("nullable") is True:
        return
    kind = get_str(s, "type")
    if s.get("x-kubernetes-int-or-string") is True and not kind:
        if not (_type_ok(value, "integer") or isinstance(value, str)):
            out.append(_Problem("type", name, value, "integer,string", [json_type(value)]))
            return
    elif kind and not _type_ok(value, kind):
        out.append(_Problem("type", name, value, kind, [json_type(value)]))
        return
    where = f"{name} in body"
    for sub in get(s, "allOf") or []:
        _check(value, sub, name, out)
    if (any_of := get(s, "anyOf")) and not any(_passes(value, sub, name) for sub in any_of):
        out.append(_Problem("invalid", name, value, f"{where} must validate at least one schema (anyOf)"))
    if (one_of := get(s, "oneOf")) and sum(_passes(value, sub, name) for sub in one_of) != 1:
        out.append(_Problem("invalid", name, value, f"{where} must validate one and only one schema (oneOf)"))
    if isinstance(get(s, "not"), dict) and _passes(value, s["not"], name):
        out.append(_Problem("invalid", name, value, f"{where} must not validate the schema (not)"))
    enum = get(s, "enum")
    if isinstance(enum, list) and enum and not any(json_equal(value, e) for e in enum):
        out.append(_Problem("enum", name, value, None, [_go_value(e) for e in enum]))
    if isinstance(value, str):
        length = len(value)
        if isinstance(get(s, "maxLength"), (int, float)) and length > s["maxLength"]:
            out.append(_Problem("toolong", name, value, int(s["maxLength"])))
        if isinstance(get(s, "minLength"), (int, float)) and length < s["minLength"]:
            out.append(_Problem("invalid", name, value, f"{where} should be at least {int(s['minLength'])} chars long"))
        pattern = get_str(s, "pattern")
        compiled = go_regexp(pattern) if pattern else None
        if compiled is not None and not compiled.search(value):
            out.append(_Problem("invalid", name, value, f"{where} should match '{pattern}'"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value, s, name, out)
    if isinstance(value, list):
        if isinstance(get(s, "maxItems"), (int, float)) and len(value) > s["maxItems"]:
            out.append(_Problem("toomany", name, len(value), int(s["maxItems"])))
        if isinstance(get(s, "minItems"), (int, float)) and len(value) < s["minItems"]:
            out.append(_Problem("invalid", name, value, f"{where} should have at least {int(s['minItems'])} items"))
        if isinstance(get(s, "items"), dict):
            for i, item in enumerate(value):
                _check(item, s["items"], f"{name}.{i}" if name else str(i), out)
    if isinstance(value, dict):
        _check_object(value, s, name, out)


def _check_number(value: float, s: Obj, name: str, out: list[_Problem]) -> None:
    where = f"{name} in body"
    maximum, minimum, multiple = get(s, "maximum"), get(s, "minimum"), get(s, "multipleOf")
    if isinstance(maximum, (int, float)):
        if s.get("exclusiveMaximum") is True and value >= maximum:
            out.append(_Problem("invalid", name, value, f"{where} should be less than {_go_value(maximum)}"))
        elif value > maximum:
            out.append(_Problem("invalid", name, value,
                                f"{where} should be less than or equal to {_go_value(maximum)}"))
    if isinstance(minimum, (int, float)):
        if s.get("exclusiveMinimum") is True and value <= minimum:
            out.append(_Problem("invalid", name, value, f"{where} should be greater than {_go_value(minimum)}"))
        elif value < minimum:
            out.append(_Problem("invalid", name, value,
                                f"{where} should be greater than or equal to {_go_value(minimum)}"))
    if isinstance(multiple, (int, float)) and multiple > 0:
        ratio = value / multiple
        if not math.isclose(ratio, round(ratio), rel_tol=0, abs_tol=1e-9):
            out.append(_Problem("invalid", name, value, f"{where} should be a multiple of {_go_value(multiple)}"))


def _check_object(value: Obj, s: Obj, name: str, out: list[_Problem]) -> None:
    where = f"{name} in body"
    if isinstance(get(s, "maxProperties"), (int, float)) and len(value) > s["maxProperties"]:
        out.append(_Problem("toomany", name, len(value), int(s["maxProperties"])))
    if isinstance(get(s, "minProperties"), (int, float)) and len(value) < s["minProperties"]:
        out.append(_Problem("invalid", name, value,
                            f"{where} should have at least {int(s['minProperties'])} properties"))
    for key in get(s, "required") or []:
        if key not in value:
            out.append(_Problem("required", sub_path(name, key)))
    props = get(s, "properties") or {}
    extra = get(s, "additionalProperties")
    for key, item in value.items():
        child = sub_path(name, key)
        if key in props:
            _check(item, props[key], child, out)
        elif isinstance(extra, dict):
            _check(item, extra, child, out)
        elif extra is False:
            out.append(_Problem("invalid", child, item, f"{child} in body is a forbidden property"))


def _passes(value: Any, s: Obj, name: str) -> bool:
    problems: list[_Problem] = []
    _check(value, s, name, problems)
    return not problems


def value_causes(path: str, value: Any, schema: Obj) -> list[Cause]:
    """A value's problems against a schema node, as kube's ValidateCustomResource words them."""
    problems: list[_Problem] = []
    _check(value, schema, "", problems)
    causes = []
    for p in problems:
        at = sub_path(path, p.name) if p.name else path
        if p.code == "required":
            causes.append(required(at))
        elif p.code == "enum":
            causes.append(not_supported(at, p.value, p.extra))
        elif p.code == "toolong":
            causes.append(too_long(at, p.detail))
        elif p.code == "toomany":
            causes.append(too_many(at, p.value, p.detail))
        elif p.code == "type":
            causes.append(Cause("FieldValueTypeInvalid", f"Invalid value: {render_value(p.value)}: {p.name} in body "
                                                         f'must be of type {p.detail}: "{p.extra[0]}"', at))
        else:
            causes.append(invalid(at, p.value, p.detail))
    return causes
