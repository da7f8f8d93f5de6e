"""Decoded JSON values judged as JSON sees them, not as Python does.

Python says `True == 1` and calls `True` an int; JSON (and so kube's
validation, JSON patch `test` and enum checks) does not. One place decides.
"""

from __future__ import annotations

from typing import Any

from kcpcommon.jsonvalues import json_copy as json_copy  # shared with the syncer
from kcpcommon.jsonvalues import json_equal as json_equal


def json_type(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value: null, boolean, integer, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# kube's JSON decoders refuse nesting deeper than 10000 ("exceeded max depth"). orjson, which every
# response, stored object and watch event goes through, refuses to encode deeper than 254 containers;
# a list, a watch event or a Table row adds up to 4 around an object. So the server stores nothing
# deeper than 250: it answers deeper bodies with kube's own "exceeded max depth" refusal, at this limit.
MAX_DEPTH = 250


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether value nests more than `limit` objects and arrays (the value itself counts as one).

    Iterative, so it answers for any depth without recursing."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, level = stack.pop()
        children = current.values() if isinstance(current, dict) else current if isinstance(current, list) else None
        if children is None:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return False


def count_nodes(value: Any) -> int:
    """How many JSON values `value` holds, itself included: the size that evaluation budgets scale with."""
    count, stack = 0, [value]
    while stack:
        current = stack.pop()
        count += 1
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return count
