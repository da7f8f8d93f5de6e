"""Sets of field paths, as structured-merge-diff's fieldpath.Set, held in their FieldsV1 form.

A set is a dict from path elements to child nodes, exactly as `metadata.managedFields[].fieldsV1`
writes it: `f:<field>`, `k:<key fields as JSON>` (an item of a map list), `v:<value as JSON>` (an
item of a set list), `i:<index>` (an item of an atomic list, seldom seen). A child node `{}` is a
member with nothing below it; a child with children is a member only when it holds the `.` key.
The root is never a member. Keeping the wire form as the working form means decoding and encoding
managedFields cost nothing; sets are treated as immutable values (operations return new dicts and
may share unchanged subtrees).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

Set = dict[str, Any]
Node = dict[str, Any]
SELF = "."
_PREFIXES = ("f:", "k:", "v:", "i:")


def field(name: str) -> str:
    return "f:" + name


def key_element(item: dict[str, Any], keys: tuple[str, ...], defaults: Mapping[str, Any] | None = None) -> str:
    """A map list item's element: its key fields as JSON with sorted names.

    A key field the item leaves out is keyed by its schema default when there is one (`defaults`), as
    structured-merge-diff keys it, so `{port: 80}` is the item `{port: 80, protocol: TCP}`."""
    fields = {k: item[k] for k in keys if k in item}
    if defaults:
        for k, value in defaults.items():
            fields.setdefault(k, value)
    return "k:" + orjson.dumps(fields, option=orjson.OPT_SORT_KEYS).decode()


def value_element(value: Any) -> str:
    return "v:" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def index_element(index: int) -> str:
    return f"i:{index}"


def is_member(node: Node) -> bool:
    return not node or SELF in node


def children(node: Node) -> Set:
    if SELF not in node:
        return node
    return {k: v for k, v in node.items() if k != SELF}


def make_node(kids: Set, member: bool) -> Node | None:
    """The node for a path with these children; None when it would hold nothing (not in the set)."""
    if not kids:
        return {} if member else None
    return {SELF: {}, **kids} if member else kids


def union(a: Set, b: Set) -> Set:
    if not a:
        return b
    if not b or a is b:
        return a
    out = dict(a)
    for k, bv in b.items():
        av = out.get(k)
        if av is None:
            out[k] = bv
        elif av is not bv:
            out[k] = make_node(union(children(av), children(bv)), is_member(av) or is_member(bv))
    return out


def difference(a: Set, b: Set) -> Set:
    if not a or not b:
        return a
    out: Set = {}
    for k, av in a.items():
        bv = b.get(k)
        if bv is None:
            out[k] = av
            continue
        node = make_node(difference(children(av), children(bv)), is_member(av) and not is_member(bv))
        if node is not None:
            out[k] = node
    return out


def intersection(a: Set, b: Set) -> Set:
    if not a or not b:
        return {}
    out: Set = {}
    for k, av in a.items():
        bv = b.get(k)
        if bv is None:
            continue
        node = make_node(intersection(children(av), children(bv)), is_member(av) and is_member(bv))
        if node is not None:
            out[k] = node
    return out


def members(s: Set, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path, in sorted order (a parent before its children), as tuples of elements."""
    for k in sorted(s):
        node = s[k]
        path = (*prefix, k)
        if is_member(node):
            yield path
        yield from members(children(node), path)


def render(path: tuple[str, ...]) -> str:
    """A path as kube prints it in conflicts: `.spec.containers[name="app"].image`, `[="a"]`, `[0]`."""
    out = []
    for element in path:
        kind, text = element[:2], element[2:]
        if kind == "f:":
            out.append("." + text)
        elif kind == "k:":
            fields = orjson.loads(text)
            out.append("[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in sorted(fields.items())) + "]")
        elif kind == "v:":
            out.append(f"[={text}]")
        else:
            out.append(f"[{text}]")
    return "".join(out)


def encode(s: Set) -> Set:
    """The set in kube's serialized order: `.` first, then elements sorted."""
    out: Set = {}
    if SELF in s:
        out[SELF] = {}
    for k in sorted(s):
        if k != SELF:
            out[k] = encode(s[k]) if s[k] else {}
    return out


def valid(s: Any, depth: int = 0) -> bool:
    """Whether a decoded fieldsV1 is a well-formed set (what kube's FieldsV1 decoder accepts)."""
    if not isinstance(s, dict) or depth > 300:
        return False
    for k, v in s.items():
        if k == SELF:
            if v != {} or depth == 0:
                return False
            continue
        if not isinstance(k, str) or not k.startswith(_PREFIXES) or not valid(v, depth + 1):
            return False
        if k[0] in "kv":
            try:
                decoded = orjson.loads(k[2:])
            except orjson.JSONDecodeError:
                return False
            if k[0] == "k" and not isinstance(decoded, dict):
                return False
        elif k[0] == "i" and not k[2:].isdigit():
            return False
    return True


def without(s: Set, path: tuple[str, ...]) -> Set:
    """The set with the subtree at path removed (used to drop fields kube never tracks)."""
    if not path or path[0] not in s:
        return s
    out = dict(s)
    if len(path) == 1:
        del out[path[0]]
        return out
    node = out[path[0]]
    rest = make_node(without(children(node), path[1:]), is_member(node))
    if rest is None:
        del out[path[0]]
    else:
        out[path[0]] = rest
    return out
