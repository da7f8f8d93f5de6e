"""Read-only JSON values, so an informer's cache cannot be corrupted by a handler.

Objects in a shared cache are seen by every controller in the process; one
that mutates a cached object in place silently changes what the others see
(client-go's most common controller bug). The cache therefore holds frozen
values: `FrozenDict`/`FrozenList` are real `dict`/`list` subclasses (so
`json.dumps`, `isinstance` and `==` work) whose mutating methods raise.

To change an object, take a mutable copy: `thaw(obj)` or `copy.deepcopy(obj)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import orjson

READ_ONLY = "objects from an informer's cache are read-only: copy them first (thaw() or copy.deepcopy())"


def _read_only(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(READ_ONLY)


class FrozenDict(dict[str, Any]):
    """A dict that refuses to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        copied: dict[str, Any] = thaw(self)
        return copied

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only
    __iadd__ = __imul__ = _read_only

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        copied: list[Any] = thaw(self)
        return copied

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


# JSON's scalar types: returned as they are, without a call (most values of an object are scalars)
_SCALARS = frozenset({str, int, float, bool, type(None)})
_FROZEN_OF: dict[type, type] = {dict: FrozenDict, list: FrozenList}


def freeze(value: Any) -> Any:
    """A deep read-only copy of a JSON value (already-frozen parts are reused, not copied).

    Dispatches on the exact type first: every event an informer caches is frozen, and this is most
    of what that costs (twice the speed of isinstance checks and a call per scalar).
    """
    kind = type(value)
    if kind is dict:
        return FrozenDict({k: v if type(v) in _SCALARS else freeze(v) for k, v in value.items()})
    if kind is list:
        return FrozenList([v if type(v) in _SCALARS else freeze(v) for v in value])
    if kind in _SCALARS or kind is FrozenDict or kind is FrozenList:
        return value
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList(freeze(v) for v in value)
    return value


def freeze_like(value: Any, previous: Any) -> Any:
    """`freeze(value)` that reuses the parts of `previous` (an earlier frozen state of the same object) that
    are unchanged. An update changes a few fields (a pod's status, not its spec), and an equal part is
    proved equal in C far faster than it is frozen again in Python; the states then also share memory.

    Equal means the same JSON: `==` alone would take 1 for 1.0 or true, so a part that compares equal is
    also checked to encode to the same bytes (else it is frozen anew).
    """
    if type(value) is not dict or not isinstance(previous, FrozenDict):
        return freeze(value)
    return FrozenDict(frozen_items(value, previous))


def frozen_items(value: Mapping[str, Any], previous: Any) -> dict[str, Any]:
    """The top level of `freeze_like(value, previous)` as a plain dict (for a caller's own FrozenDict subclass)."""
    if not isinstance(previous, FrozenDict):
        return {k: v if type(v) in _SCALARS else freeze(v) for k, v in value.items()}
    copied = {}
    for k, v in value.items():
        kind = type(v)
        if kind in _SCALARS:
            copied[k] = v
            continue
        old = previous.get(k)
        if type(old) is _FROZEN_OF.get(kind) and old == v and orjson.dumps(old) == orjson.dumps(v):
            copied[k] = old
        elif kind is dict and type(old) is FrozenDict:
            copied[k] = FrozenDict(frozen_items(v, old))
        else:
            copied[k] = freeze(v)
    return copied


def thaw(value: Any) -> Any:
    """A deep mutable copy (plain dicts and lists) of a JSON value, frozen or not."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value
