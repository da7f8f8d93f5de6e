"""Server-side apply's merge: an applied configuration over the live object, by the type's schema.

The configuration's values win. Granular objects merge key by key; map lists merge item by item
(by their key fields) and set lists by value, keeping live-only items where they stood and the
configuration's items in its order (structured-merge-diff's order); atomic lists and objects, and
scalars, are replaced whole. `prune` then removes what the applier set before and no longer sets,
unless someone still owns it.
"""

from __future__ import annotations

import copy
from typing import Any

from kcp_apiserver.registry import fieldpath as fp
from kcp_apiserver.registry.fieldsets import _declared, _element, _granular, _list_kind, key_defaults
from kcp_apiserver.registry.typeschema import SchemaNode


def merge(live: Any, config: Any, node: SchemaNode | None) -> Any:
    """live with config applied over it; config's values are taken as they are (the caller owns them)."""
    if _granular(live, node) and _granular(config, node):
        out = dict(live)
        for name, value in config.items():
            if value is None:
                out.pop(name, None)
                continue
            child = node.field(name) if node is not None else None
            out[name] = merge(live[name], value, child) if name in live else value
        return out
    kind = _list_kind(config, node)
    if kind is not None and isinstance(live, list) and node is not None:
        return _merge_list(live, config, kind, node)
    return config


def _merge_list(live: list[Any], config: list[Any], kind: str, node: SchemaNode) -> list[Any]:
    items_node = node.items()
    defaults = key_defaults(node) if kind == "map" else None
    live_keys = [_element(item, kind, node, defaults) for item in live]
    config_keys = [_element(item, kind, node, defaults) for item in config]
    by_live = dict(zip(live_keys, live, strict=True))
    in_config = set(config_keys)
    out: list[Any] = []
    li = ci = 0
    while li < len(live) or ci < len(config):
        if li < len(live) and ci < len(config) and live_keys[li] == config_keys[ci]:
            out.append(merge(live[li], config[ci], items_node))
            li += 1
            ci += 1
        elif li < len(live) and live_keys[li] not in in_config:
            out.append(live[li])
            li += 1
        elif ci < len(config):
            key = config_keys[ci]
            out.append(merge(by_live[key], config[ci], items_node) if key in by_live else config[ci])
            ci += 1
        else:
            li += 1  # a live item the configuration placed earlier
    return out


def fill_key_defaults(value: Any, node: SchemaNode | None) -> None:
    """Give every map-list item, in place, the defaulted key fields it leaves out, as kube's defaulting does
    to the merged object; the applier does not own them (its field set keys the item by them only)."""
    if node is None:
        return
    if isinstance(value, dict):
        for name, child in value.items():
            if isinstance(child, (dict, list)):
                fill_key_defaults(child, node.field(name))
        return
    if not isinstance(value, list):
        return
    items_node = node.items()
    defaults = key_defaults(node) if _list_kind(value, node) == "map" else None
    for item in value:
        if defaults and isinstance(item, dict):
            for key, default in defaults.items():
                if key not in item:
                    item[key] = copy.deepcopy(default)
        if isinstance(item, (dict, list)):
            fill_key_defaults(item, items_node)


def prune(obj: Any, drop: fp.Set, keep: fp.Set, node: SchemaNode | None) -> None:
    """Remove from obj, in place, the members of `drop` that `keep` does not hold.

    As structured-merge-diff's prune: a path is kept when someone owns it, or when it is a struct
    field someone owns something under; the rest of `drop` below a kept path is still removed."""
    if isinstance(obj, dict):
        for element, dropped in drop.items():
            name = element[2:]
            if not element.startswith("f:") or name not in obj:
                continue
            kept = keep.get(element)
            held = kept is not None and (fp.is_member(kept) or _declared(node, name))
            if fp.is_member(dropped) and not held:
                del obj[name]
            else:
                child = node.field(name) if node is not None else None
                value = obj[name]
                had = bool(value) if isinstance(value, (dict, list)) else False
                prune(value, fp.children(dropped), fp.children(kept) if kept else {}, child)
                if had and not value:
                    del obj[name]  # emptied by the removal: gone, as kube's encoders omit an empty map or list
        return
    if isinstance(obj, list) and node is not None:
        kind = _list_kind(obj, node)
        if kind is None:
            return
        items_node = node.items()
        defaults = key_defaults(node) if kind == "map" else None
        survivors = []
        for item in obj:
            element = _element(item, kind, node, defaults)
            dropped = drop.get(element)
            if dropped is not None:
                kept = keep.get(element)
                if fp.is_member(dropped) and (kept is None or not fp.is_member(kept)):
                    continue
                prune(item, fp.children(dropped), fp.children(kept) if kept else {}, items_node)
            survivors.append(item)
        obj[:] = survivors


def copied(config: Any) -> Any:
    """A private copy of a configuration, so merging and defaulting never touch the request's."""
    return copy.deepcopy(config)
