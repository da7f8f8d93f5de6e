"""RFC 6902 JSON patch, applied to a decoded JSON value: the apiserver's `application/json-patch+json` and
the syncer's per-SyncTarget spec diffs (`experimental.spec-diff.workload.kcp.io/<target>`) share it.

Pure: the caller's document and operations are never changed, and a failure is a `JSONPatchError` that
each caller words its own way (the apiserver as kube's 422, the syncer as an Event).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .jsonvalues import json_copy, json_equal

# kube's JSONPatchMaxCopyBytes (its request body limit): `copy` ops may add at most this much, else each
# copy of the document into itself doubles it (30 ops: gigabytes).
MAX_COPY_BYTES = 3 * 1024 * 1024


class JSONPatchError(ValueError):
    """A JSON patch that does not apply; `path` is the failing operation's path ("" when none)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class _OpFailed(Exception):
    """One operation could not be applied (its path is added by `apply_json_patch`)."""


def apply_json_patch(doc: Any, operations: Any) -> Any:
    """`doc` with the RFC 6902 `operations` (a list of operation objects) applied, as a new value."""
    if not isinstance(operations, list):
        raise JSONPatchError("a JSON patch must be a JSON array of operation objects")
    result: Any = json_copy(doc)
    copied = 0
    for op in operations:
        try:
            if isinstance(op, dict) and op.get("op") == "copy":
                copied += len(json.dumps(_get(result, _pointer(op, "from")), separators=(",", ":")).encode())
                if copied > MAX_COPY_BYTES:
                    raise _OpFailed(f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                                    f"exceeding the limit {MAX_COPY_BYTES}")
            result = _apply_op(result, op)
        except _OpFailed as err:
            path = op.get("path", "") if isinstance(op, dict) else ""
            raise JSONPatchError(str(err), path if isinstance(path, str) else "") from None
    return result


def _apply_op(doc: Any, op: Any) -> Any:
    if not isinstance(op, dict):
        raise _OpFailed("a JSON patch operation must be an object")
    name = op.get("op")
    path = _pointer(op, "path")
    if name in ("add", "replace", "test") and "value" not in op:
        raise _OpFailed(f'{name} operation on "{op["path"]}" has no value')
    if name == "add":
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name == "remove":
        _remove(doc, path)
        return doc
    if name == "replace":
        if not path:
            return copy.deepcopy(op["value"])
        _get(doc, path)  # must exist
        _remove(doc, path)
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name == "move":
        source = _pointer(op, "from")
        if source == path:
            return doc
        if path[: len(source)] == source:
            raise _OpFailed(f'cannot move "{op["from"]}" into its own child "{op["path"]}"')
        return _add(doc, path, _remove(doc, source))
    if name == "copy":
        return _add(doc, path, copy.deepcopy(_get(doc, _pointer(op, "from"))))
    if name == "test":
        if not json_equal(_get(doc, path), op["value"]):
            raise _OpFailed(f'testing value "{op["path"]}" failed')
        return doc
    raise _OpFailed(f"unknown JSON patch operation {name!r}")


def _pointer(op: dict[str, Any], field: str) -> list[str]:
    """An RFC 6901 pointer as its unescaped tokens ("" is the whole document)."""
    text = op.get(field)
    if not isinstance(text, str):
        raise _OpFailed(f'{op.get("op")} operation needs a string "{field}"')
    if text == "":
        return []
    if not text.startswith("/"):
        raise _OpFailed(f'JSON pointer "{text}" must start with "/"')
    return [token.replace("~1", "/").replace("~0", "~") for token in text[1:].split("/")]


def _index(token: str, size: int) -> int:
    """A list index token, valid when 0 <= index < size (size already counts an append slot)."""
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise _OpFailed(f'"{token}" is not a list index')
    index = int(token)
    if index >= size:
        raise _OpFailed(f"list index {index} is out of range")
    return index


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for token in path:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token != "-":
            node = node[_index(token, len(node))]
        else:
            raise _OpFailed(f'path "/{"/".join(path)}" does not exist')
    return node


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent, last = _get(doc, path[:-1]), path[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else _index(last, len(parent) + 1), value)
    else:
        raise _OpFailed(f'cannot add "{last}" to a value that is neither an object nor a list')
    return doc


def _remove(doc: Any, path: list[str]) -> Any:
    if not path:
        raise _OpFailed("cannot remove the whole document")
    parent, last = _get(doc, path[:-1]), path[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last != "-":
        return parent.pop(_index(last, len(parent)))
    raise _OpFailed(f'path "/{"/".join(path)}" does not exist')
