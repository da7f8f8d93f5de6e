"""Strategic merge patch metadata of an imported kube type, carried beside its CRD schema.

kube's OpenAPI marks how strategic merge patch merges a field (`x-kubernetes-patch-strategy`,
`x-kubernetes-patch-merge-key`: containers merged by name, ports by containerPort). A CRD schema
cannot hold these: JSONSchemaProps has no such fields, so kube drops them from a hand-made CRD (and
`kubectl apply --validate=strict` refuses them). The cluster controller therefore moves them out of
the schema it imports into the CRD's annotation `PATCH_ANNOTATION`, a JSON object from field path to
the field's extensions; the server puts them back (`annotated`) for the CRDs it serves as kube's own
types, to patch, apply and publish the type as kube does. CRD schemas stay what kube accepts.

Paths name properties joined by `.`, `[*]` for list items and `{*}` for map values, as schema
negotiation names fields: `spec.template.spec.containers[*].ports`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

PATCH_ANNOTATION = "workload.kcp.io/patch-strategies"
PATCH_KEYS = ("x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key")

Schema = dict[str, Any]
PatchMeta = dict[str, dict[str, str]]  # field path -> its patch extensions


def _children(schema: Mapping[str, Any], path: str) -> list[tuple[str, Mapping[str, Any]]]:
    out = [(f"{path}.{name}" if path else name, sub) for name, sub in (schema.get("properties") or {}).items()
           if isinstance(sub, Mapping)]
    if isinstance(schema.get("items"), Mapping):
        out.append((f"{path}[*]", schema["items"]))
    if isinstance(schema.get("additionalProperties"), Mapping):
        out.append((f"{path}{{*}}", schema["additionalProperties"]))
    return out


def split(schema: Mapping[str, Any]) -> tuple[Schema, PatchMeta]:
    """A copy of `schema` without patch extensions, and the extensions by path."""
    stripped = copy.deepcopy(dict(schema))
    meta: PatchMeta = {}

    def walk(node: dict[str, Any], path: str) -> None:
        found = {key: node.pop(key) for key in PATCH_KEYS if key in node}
        if found and path:
            meta[path] = {k: str(v) for k, v in found.items()}
        for sub_path, sub in _children(node, path):
            walk(sub, sub_path)  # type: ignore[arg-type]  # the copy's nodes are dicts

    walk(stripped, "")
    return stripped, meta


def annotated(schema: Mapping[str, Any], meta: Mapping[str, Mapping[str, str]]) -> Schema:
    """A copy of `schema` with the patch extensions of `meta` back on their fields (unknown paths ignored)."""
    out = copy.deepcopy(dict(schema))
    if not meta:
        return out

    def walk(node: dict[str, Any], path: str) -> None:
        node.update(meta.get(path) or {})
        for sub_path, sub in _children(node, path):
            walk(sub, sub_path)  # type: ignore[arg-type]

    walk(out, "")
    return out


def encode(meta: Mapping[str, Mapping[str, str]]) -> str:
    return json.dumps(meta, sort_keys=True, separators=(",", ":"))


def decode(text: str | None) -> PatchMeta:
    """The annotation's metadata; empty when absent or unreadable (the type then patches as a CRD's lists do)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {path: {k: v for k, v in ext.items() if k in PATCH_KEYS and isinstance(v, str)}
            for path, ext in value.items() if isinstance(path, str) and isinstance(ext, dict)}
