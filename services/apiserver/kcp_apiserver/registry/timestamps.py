"""Timestamps stored as kube stores them: metav1.Time in RFC 3339 seconds, MicroTime in microseconds, UTC.

kube decodes every write into its Go type and encodes it again, so `2026-11-23T12:30:47.610947+00:00`
sent by a Python client is stored as `2026-11-23T12:30:47Z` (a Time) or `2026-11-23T12:30:47.610947Z`
(a MicroTime), and a string Go cannot parse fails the request. Readers (Table printers, kubectl, Go
clients) rely on that form. Which fields are times comes from the OpenAPI definitions (a `$ref` to
meta/v1 Time or MicroTime, or `format: date-time`), compiled once per type into a tree of paths.
Custom resources have only their metadata typed (kube leaves date-time strings in a CR's own schema
as they are).
"""

from __future__ import annotations

import functools
from typing import Any

from kcp_apiserver.apimachinery import gojson, metatime
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.validation import render_value
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.resource import Obj, Resource

TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
ITEMS, VALUES = "[]", "{}"  # steps into every list item / every map value

# A compiled tree: field name (or ITEMS / VALUES) -> True for a MicroTime, False for a Time, or a subtree.
Plan = dict[str, Any]


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _compile(node: Any, stack: frozenset[str]) -> bool | Plan | None:
    """The plan of one schema node: a leaf kind, a subtree, or None when it holds no timestamps."""
    if not isinstance(node, dict):
        return None
    name = _ref_name(node)
    if name in (TIME, MICRO_TIME):
        return name == MICRO_TIME
    if name is not None:
        return _compile_definition(name, stack) if name not in stack else None
    if node.get("type") == "string" and node.get("format") == "date-time":
        return False
    plan: Plan = {}
    for key, child in (node.get("properties") or {}).items():
        sub = _compile(child, stack)
        if sub is not None:
            plan[key] = sub
    for key, step in (("items", ITEMS), ("additionalProperties", VALUES)):
        sub = _compile(node.get(key), stack)
        if sub is not None:
            plan[step] = sub
    for branch in (*node.get("allOf", ()), *node.get("oneOf", ()), *node.get("anyOf", ())):
        sub = _compile(branch, stack)
        if isinstance(sub, dict):
            plan.update(sub)
    return plan or None


@functools.cache
def _compile_definition(name: str, stack: frozenset[str] = frozenset()) -> bool | Plan | None:
    definition = builtinschemas.definitions().get(name)
    if name in (TIME, MICRO_TIME):
        return name == MICRO_TIME
    return _compile(definition, stack | {name}) if definition is not None else None


@functools.cache
def plan_for(definition: str | None) -> Plan:
    """The timestamp paths of a built-in definition; None (a custom resource) has only its metadata's."""
    if definition is None:
        meta = _compile_definition(OBJECT_META)
        return {"metadata": meta} if isinstance(meta, dict) else {}
    plan = _compile_definition(definition)
    return plan if isinstance(plan, dict) else {}


def _definition(res: Resource, obj: Obj) -> str | None:
    """The definition describing obj: a converted type's object may be in its storage shape."""
    if res.is_custom:
        return None
    if res.to_storage is not None:
        group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
        found = builtinschemas.definition_for(group, version, str(obj.get("kind") or res.kind))
        if found is not None:
            return found
    return res.definition


class _BadTime(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _normalize_value(value: Any, micro: bool) -> Any:
    if value is None:
        return None  # JSON null is a zero time, kept as null
    if not isinstance(value, str):
        kind = "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else (
            "bool" if isinstance(value, bool) else "array" if isinstance(value, list) else "object")
        raise _BadTime(f"json: cannot unmarshal {kind} into Go value of type string")
    try:
        return metatime.normalize(value, micro=micro)
    except metatime.TimeParseError as exc:
        raise _BadTime(str(exc)) from exc


Change = tuple[Any, Any, str]  # (container, key, normalized value)


def _collect(plan: Plan, node: Any, changes: list[Change]) -> None:
    """Every rewrite the plan makes in node; raises _BadTime before anything is changed."""
    if isinstance(node, dict):
        for key, sub in plan.items():
            if key == VALUES:
                for map_key, value in node.items():
                    _step(node, map_key, sub, value, changes)
            elif key != ITEMS and key in node:
                _step(node, key, sub, node[key], changes)
    elif isinstance(node, list) and ITEMS in plan:
        for index, value in enumerate(node):
            _step(node, index, plan[ITEMS], value, changes)


def _step(parent: Any, key: Any, sub: bool | Plan, value: Any, changes: list[Change]) -> None:
    if isinstance(sub, bool):
        normalized = _normalize_value(value, sub)
        if normalized != value:
            changes.append((parent, key, normalized))
    else:
        _collect(sub, value, changes)


def normalize_timestamps(res: Resource, obj: Obj, *, patch: bool = False) -> None:
    """Rewrite obj's Time and MicroTime fields in place as kube stores them; refuse what Go cannot parse.

    A create or update body that fails is 400 `<Kind> in version "<v>" cannot be handled as a <Kind>`,
    as kube's decoder answers; a patched object that fails is kube's 422 on the `patch` field.
    """
    changes: list[Change] = []
    try:
        _collect(plan_for(_definition(res, obj)), obj, changes)
    except _BadTime as exc:
        if not patch:
            raise st.bad_request(f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                                 f"{exc.message}") from None
        message = f"Invalid value: {render_value(gojson.marshal(obj))}: {exc.message}"
        raise st.APIError(422, "Invalid", f' "" is invalid: patch: {message}',
                          {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]}
                          ) from None
    for parent, key, value in changes:
        parent[key] = value


__all__ = ["normalize_timestamps", "plan_for"]
