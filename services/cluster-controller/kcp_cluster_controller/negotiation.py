"""Schema negotiation between physical clusters that serve one type (kcp's schemacompat, in spirit).

When clusters disagree, kcp publishes the lowest common denominator: a field exists in the
published schema only if every cluster serving the type has it, with the same type. A cluster
that narrows the published schema (an older release lacking a field the others have) is
*incompatible*: objects using those fields could not be synced to it. `missing(published, schema)`
names the fields a cluster lacks; with a hand-made CRD the hand-made schema is `published`.

How lists and fields merge (strategic merge patch's strategy and merge key, a list's type and map
keys) is kept only where every cluster says the same: where they differ, the field patches as a
plain CRD field does (replaced whole), which every cluster's objects survive.

Paths are written as `spec.template.spec.containers[*].resizePolicy` (`[*]` for list items,
`{*}` for map values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Schema = dict[str, Any]

INT_OR_STRING = "x-kubernetes-int-or-string"
PRESERVE = "x-kubernetes-preserve-unknown-fields"
# how a field merges: kept only when every cluster agrees
MERGE_KEYS = ("x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-list-type",
              "x-kubernetes-list-map-keys")


def _kind(schema: Mapping[str, Any]) -> str:
    if schema.get(INT_OR_STRING):
        return "int-or-string"
    return str(schema.get("type") or ("object" if schema.get(PRESERVE) else ""))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def lowest_common_denominator(schemas: Iterable[Mapping[str, Any]]) -> Schema:
    """The schema every one of `schemas` accepts: properties they all have, typed as they all agree."""
    result: Schema | None = None
    for schema in schemas:
        result = dict(schema) if result is None else _narrow(result, schema)
    if result is None:
        raise ValueError("no schema to negotiate")
    return result


def _narrow(a: Mapping[str, Any], b: Mapping[str, Any]) -> Schema:
    if _kind(a) != _kind(b):  # no common shape: keep the field, accept anything in it
        return {k: v for k, v in a.items() if k == "description"} | {"type": "object", PRESERVE: True} \
            if _kind(a) == "object" or _kind(b) == "object" else dict(a)
    out = {k: v for k, v in a.items() if k not in MERGE_KEYS or b.get(k) == v}
    if "properties" in a and "properties" in b:
        props_b = b["properties"]
        out["properties"] = {name: _narrow(sub, props_b[name]) for name, sub in a["properties"].items()
                             if name in props_b}
        if "required" in a:
            out["required"] = [r for r in a["required"] if r in out["properties"]]
            if not out["required"]:
                del out["required"]
    elif "properties" in a and b.get(PRESERVE):
        pass  # b takes anything there: a's fields are all accepted
    if isinstance(a.get("items"), Mapping) and isinstance(b.get("items"), Mapping):
        out["items"] = _narrow(a["items"], b["items"])
    if isinstance(a.get("additionalProperties"), Mapping) and isinstance(b.get("additionalProperties"), Mapping):
        out["additionalProperties"] = _narrow(a["additionalProperties"], b["additionalProperties"])
    if "enum" in a and "enum" in b:
        out["enum"] = [v for v in a["enum"] if v in b["enum"]]
    return out


def missing(published: Mapping[str, Any], schema: Mapping[str, Any], path: str = "") -> list[str]:
    """The fields of `published` that `schema` does not accept (absent, or of another type)."""
    if schema.get(PRESERVE) and "properties" not in schema:
        return []
    if _kind(published) != _kind(schema):
        return [f"{path or '<root>'} (type {_kind(published) or 'any'}, the cluster has {_kind(schema) or 'any'})"]
    out: list[str] = []
    theirs = schema.get("properties") or {}
    for name, sub in (published.get("properties") or {}).items():
        if name not in theirs:
            if not schema.get(PRESERVE):
                out.append(_join(path, name))
            continue
        out += missing(sub, theirs[name], _join(path, name))
    if isinstance(published.get("items"), Mapping) and isinstance(schema.get("items"), Mapping):
        out += missing(published["items"], schema["items"], f"{path}[*]")
    if isinstance(published.get("additionalProperties"), Mapping) and \
            isinstance(schema.get("additionalProperties"), Mapping):
        out += missing(published["additionalProperties"], schema["additionalProperties"], f"{path}{{*}}")
    return out


def describe(fields: list[str], limit: int = 1000) -> str:
    """A condition message naming the fields (the first `limit` of them)."""
    shown = ", ".join(fields[:limit])
    more = f" and {len(fields) - limit} more" if len(fields) > limit else ""
    return f"{shown}{more}"
