"""Field sets of objects, read through their TypeSchema: what an object sets, and what a write changed.

As structured-merge-diff walks typed values: objects are granular unless their schema makes them
atomic; a map list's items are addressed by their key fields, a set list's by value; atomic lists
and scalars are leaves. Without a schema (unknown or preserved fields) objects are granular and
lists atomic, as kube's "deduced" type.

Two walks differ only in which inner nodes are members. `object_set` is what an applied
configuration owns: a declared field holding a non-empty object is a parent only. `compare`
reports every node of an added or removed subtree as a member, as kube's comparison does, which
is why an Update that adds `labels` owns `labels` itself too.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apimachinery.jsonvalues import MAX_DEPTH
from kcp_apiserver.registry import fieldpath as fp
from kcp_apiserver.registry.typeschema import SchemaNode

MISSING: Any = object()
# a set nests one level per object level, inside metadata.managedFields[].fieldsV1 (4 levels down): values
# deeper than this are owned whole, so a stored object never nests deeper than the deepest one accepted
MAX_SET_DEPTH = MAX_DEPTH - 6


class DuplicateItem(ValueError):
    """A map or set list holds two items with one key: the path of the list and the duplicated element."""

    def __init__(self, path: tuple[str, ...], element: str) -> None:
        super().__init__(fp.render(path) or ".")
        self.path = path
        self.element = element


def _granular(value: Any, node: SchemaNode | None) -> bool:
    return isinstance(value, dict) and (node is None or node.map_type != "atomic")


def _list_kind(value: Any, node: SchemaNode | None) -> str | None:
    """"set" or "map" for a list merged by item, None for a leaf (atomic, or not a list)."""
    if not isinstance(value, list) or node is None:
        return None
    kind = node.list_type
    if kind == "map" and node.list_map_keys:
        return "map"
    return "set" if kind == "set" else None


def _declared(node: SchemaNode | None, name: str) -> bool:
    """A struct field, as opposed to a map entry or an unknown (preserved) field."""
    return node is not None and node.values() is None and node.field(name) is not None


def key_defaults(node: SchemaNode) -> dict[str, Any]:
    """The schema defaults of a map list's key fields: an item leaving one out is keyed (and filled) by it."""
    items_node = node.items()
    out: dict[str, Any] = {}
    if items_node is None:
        return out
    for key in node.list_map_keys:
        key_node = items_node.field(key)
        if key_node is not None and key_node.default is not None:
            out[key] = key_node.default
    return out


def _element(item: Any, kind: str, node: SchemaNode, defaults: dict[str, Any] | None = None) -> str:
    if kind == "map" and isinstance(item, dict):
        return fp.key_element(item, node.list_map_keys, defaults)
    return fp.value_element(item)


def _items(value: list[Any], kind: str, node: SchemaNode, path: tuple[str, ...],
           strict: bool) -> dict[str, Any]:
    """A merged list's items by element; a repeated element is DuplicateItem when strict, else the first wins."""
    out: dict[str, Any] = {}
    defaults = key_defaults(node) if kind == "map" else None
    for item in value:
        element = _element(item, kind, node, defaults)
        if element in out:
            if strict:
                raise DuplicateItem(path, element)
            continue
        out[element] = item
    return out


# -- what a value sets -----------------------------------------------------------------------

def object_set(value: Any, node: SchemaNode | None, *, strict: bool = False) -> fp.Set:
    """The fields a value (an applied configuration) sets, as kube's ToFieldSet."""
    return _children(value, node, False, (), strict)


def _children(value: Any, node: SchemaNode | None, all_members: bool, path: tuple[str, ...],
              strict: bool) -> fp.Set:
    if _granular(value, node):
        out: fp.Set = {}
        deep = len(path) + 1 >= MAX_SET_DEPTH
        for name, child in value.items():
            if deep:
                out["f:" + name] = {}
                continue
            child_node = node.field(name) if node is not None else None
            kids = _children(child, child_node, all_members, (*path, "f:" + name), strict)
            member = (all_members or child is None or child == {} or not _declared(node, name)
                      or not (_granular(child, child_node) or _list_kind(child, child_node)))
            made = fp.make_node(kids, member)
            if made is not None:
                out["f:" + name] = made
        return out
    kind = _list_kind(value, node)
    if kind is None or node is None:
        return {}
    items_node = node.items()
    out = {}
    deep = len(path) + 1 >= MAX_SET_DEPTH
    for element, item in _items(value, kind, node, path, strict).items():
        made = {} if deep else fp.make_node(_children(item, items_node, all_members, (*path, element), strict), True)
        out[element] = made
    return out


def _whole(value: Any, node: SchemaNode | None, depth: int) -> fp.Node:
    """An added or removed subtree at `depth` in the set: every node a member."""
    made = fp.make_node(_children(value, node, True, ("",) * depth, False), True)
    return made if made is not None else {}


# -- what a write changed --------------------------------------------------------------------

def compare(old: Any, new: Any, node: SchemaNode | None) -> tuple[fp.Set, fp.Set]:
    """(modified or added, removed) between two objects; equal subtrees are skipped unwalked."""
    changed: fp.Set = {}
    removed: fp.Set = {}
    _compare_into(old, new, node, changed, removed, 0)
    return changed, removed


def _compare_into(old: Any, new: Any, node: SchemaNode | None, changed: fp.Set, removed: fp.Set,
                  depth: int) -> None:
    """Compare two values that both exist and are walked by element (granular objects or merged lists)."""
    if isinstance(old, dict):
        for name, new_value in new.items():
            child = node.field(name) if node is not None else None
            _compare_child("f:" + name, old.get(name, MISSING), new_value, child, changed, removed, depth + 1)
        for name, old_value in old.items():
            if name not in new:
                removed["f:" + name] = _whole(old_value, node.field(name) if node is not None else None, depth + 1)
        return
    assert node is not None
    kind = _list_kind(old, node) or "set"
    items_node = node.items()
    old_items = _items(old, kind, node, (), False)
    new_items = _items(new, kind, node, (), False)
    for element, new_item in new_items.items():
        _compare_child(element, old_items.get(element, MISSING), new_item, items_node, changed, removed, depth + 1)
    for element, old_item in old_items.items():
        if element not in new_items:
            removed[element] = _whole(old_item, items_node, depth + 1)


def _compare_child(element: str, old: Any, new: Any, node: SchemaNode | None, changed: fp.Set,
                   removed: fp.Set, depth: int) -> None:
    if old is MISSING:
        changed[element] = _whole(new, node, depth)
        return
    if old == new and type(old) is type(new):
        return
    same_shape = (_granular(old, node) and _granular(new, node)) or (
        _list_kind(old, node) is not None and _list_kind(new, node) is not None)
    if not same_shape or depth >= MAX_SET_DEPTH:
        changed[element] = {}
        return
    kids_changed: fp.Set = {}
    kids_removed: fp.Set = {}
    _compare_into(old, new, node, kids_changed, kids_removed, depth)
    if kids_changed:
        changed[element] = kids_changed
    if kids_removed:
        removed[element] = kids_removed
