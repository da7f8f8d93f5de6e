"""Structural pruning of a custom resource (PruneWithOptions), plus PruneNonNullableNullsWithoutDefaults,
as kube's request decoder runs them."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.embeddedresource import OBJECT_META_TYPES
from kcp_apiserver.apiextensions.valueerrors import Obj
from kcp_apiserver.apiextensions.valuevalidation import META_FIELDS, CompiledNode

_OBJECT_META_FIELDS = frozenset(OBJECT_META_TYPES)


def _join(p: str, k: str) -> str:
    return f"{p}.{k}" if p else k


def _prune_object_meta(meta: Obj, p: str, out: list[str]) -> None:
    """An embedded resource's metadata goes through ObjectMeta: unknown fields and empty values drop."""
    for k in [k for k in meta if k not in _OBJECT_META_FIELDS]:
        out.append(_join(p, k))
        del meta[k]
    for k in [k for k, v in meta.items() if v is None or (v in ("", {}, []) and k != "deletionGracePeriodSeconds")
              or (k == "generation" and v == 0 and type(v) is not bool)]:
        del meta[k]


def prune_structural(x: Any, node: CompiledNode | None, p: str, out: list[str], root: bool = False) -> None:
    """structural pruning of a dict or list `x` (PruneWithOptions), non-nullable nulls included."""
    if node is not None and node.preserve:
        _skip_prune(x, node, p, out, root)
        return
    if type(x) is list:
        items = node.items if node is not None else None
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                prune_structural(v, items, f"{p}[{i}]", out)
        return
    if node is None:
        out.extend(_join(p, k) for k in x)
        x.clear()
        return
    props, extra, embedded = node.props, node.additional, node.embedded
    drop: list[str] = []
    for k, v in x.items():
        if embedded and k in META_FIELDS:
            if not root and k == "metadata" and type(v) is dict:
                _prune_object_meta(v, _join(p, k), out)
            child = props.get(k)
            if v is None and child is not None and not child.nullable and not child.has_default:
                drop.append(k)
            continue
        child = props.get(k)  # props never maps to None
        if child is None:
            if extra is None and not node.allows_any:
                out.append(_join(p, k))
                drop.append(k)
                continue
            child = extra
        t = type(v)
        if v is None:
            if child is not None and not child.nullable and not child.has_default:
                drop.append(k)
        elif t is dict or t is list:
            prune_structural(v, child, _join(p, k), out)
    for k in drop:
        del x[k]


def _skip_prune(x: Any, node: CompiledNode, p: str, out: list[str], root: bool = False) -> None:
    """Under x-kubernetes-preserve-unknown-fields unknown keys stay; known ones are still pruned."""
    if type(x) is list:
        items = node.items
        if items is not None:
            for i, v in enumerate(x):
                if type(v) is dict or type(v) is list:
                    _skip_prune(v, items, f"{p}[{i}]", out)
        return
    props, extra, embedded = node.props, node.additional, node.embedded
    drop: list[str] = []
    for k, v in x.items():
        if embedded and k in META_FIELDS:
            if not root and k == "metadata" and type(v) is dict:
                _prune_object_meta(v, _join(p, k), out)
            continue
        child = props.get(k, extra)
        if child is None:
            continue
        t = type(v)
        if v is None:
            if not child.nullable and not child.has_default:
                drop.append(k)
        elif t is dict or t is list:
            prune_structural(v, child, _join(p, k), out)
    for k in drop:
        del x[k]
