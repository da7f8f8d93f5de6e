"""Structural defaulting of a custom resource, as kube's decoder applies a CRD schema's defaults."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apiextensions.valuevalidation import CompiledNode

_MISSING = object()

def apply_structural_defaults(x: Any, node: CompiledNode) -> None:
    """structural defaulting: fill missing (or non-nullable null) fields, then recurse, defaults included."""
    t = type(x)
    if t is dict:
        for k, child in node.default_props:
            v = x.get(k, _MISSING)
            if v is _MISSING or (v is None and not child.nullable):
                x[k] = child.copy_default()
        for k, child in node.deep_default_props:
            v = x.get(k)
            if type(v) is dict or type(v) is list:
                apply_structural_defaults(v, child)
        extra = node.additional
        if extra is not None and extra.defaults_below:
            props = node.props
            for k, v in x.items():
                if k in props:
                    continue
                if v is None and not extra.nullable and extra.has_default:
                    x[k] = v = extra.copy_default()
                if type(v) is dict or type(v) is list:
                    apply_structural_defaults(v, extra)
    elif t is list:
        items = node.items
        if items is not None and items.defaults_below:
            for i, v in enumerate(x):
                if v is None and not items.nullable and items.has_default:
                    x[i] = v = items.copy_default()
                if type(v) is dict or type(v) is list:
                    apply_structural_defaults(v, items)
