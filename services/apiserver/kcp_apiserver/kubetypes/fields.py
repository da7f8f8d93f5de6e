"""Reading a kube object's parts leniently: a malformed member reads as empty, since the schema's
decode already refused what kube would not decode, and defaults and validation must not crash on the rest."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.registry.resource import Obj


def member(obj: Obj, key: str) -> Obj:
    """obj[key] when it is an object, else an empty one (kube would have refused to decode it)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def spec(obj: Obj) -> Obj:
    return member(obj, "spec")


def dicts(value: Any) -> list[Obj]:
    """The objects of a list (anything else: none)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
