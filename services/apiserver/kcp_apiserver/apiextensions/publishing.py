"""A CRD version's schema as kube publishes it in OpenAPI, where clients validate against it.

OpenAPI v2 cannot say "any fields allowed here", and kubectl validates client-side against v2 (a
`kind: List` file, or a server that does not validate): a node that lists properties forbids every
other field. So kube publishes v2 with the v3-only constructs taken out: under
`x-kubernetes-preserve-unknown-fields` a node lists no properties or items (a root that preserves
unknown fields is published as a bare object), `nullable` nodes lose their type and children (and
are no longer required), arrays left without items lose their type, and allOf/oneOf/anyOf/not are
dropped. Embedded resources (`x-kubernetes-embedded-resource`) gain apiVersion, kind and metadata,
except in v2 under a node that preserves unknown fields.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]

OBJECT_META_REF = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_JUNCTORS = ("allOf", "oneOf", "anyOf", "not")


def published_schema(schema: Schema, *, v2: bool) -> Schema:
    """A deep copy of a CRD version's openAPIV3Schema, shaped as kube publishes it (v2 or v3)."""
    out = copy.deepcopy(schema)
    if v2:
        _to_v2(out)
    _add_embedded_properties(out, v2=v2)
    return out


def root_preserves_unknown(schema: Schema) -> bool:
    """kube publishes such a kind in v2 as a bare object: any listed property would forbid the rest."""
    return bool(schema.get("x-kubernetes-preserve-unknown-fields"))


def _children(node: Schema) -> list[Schema]:
    children = [v for v in (node.get("properties") or {}).values() if isinstance(v, dict)]
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            children.append(node[key])
    return children


def _to_v2(node: Schema) -> None:
    """kube's ToStructuralOpenAPIV2 on one node, then on its children (which still carry `nullable`)."""
    for junctor in _JUNCTORS:
        node.pop(junctor, None)
    if node.pop("nullable", False):
        for key in ("type", "items", "properties"):
            node.pop(key, None)
    if node.get("x-kubernetes-preserve-unknown-fields"):
        node.pop("items", None)
        node.pop("properties", None)
    if "items" not in node and node.get("type") == "array":
        del node["type"]  # kubectl cannot handle an array without an item schema
    required = node.get("required")
    if isinstance(required, list):
        nullable = {name for name, prop in (node.get("properties") or {}).items()
                    if isinstance(prop, dict) and prop.get("nullable")}
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("nullable"):
            node.pop("required")
        elif nullable:
            node["required"] = [name for name in required if name not in nullable]
    for child in _children(node):
        _to_v2(child)


def _add_embedded_properties(node: Schema, *, v2: bool) -> None:
    for child in _children(node):
        _add_embedded_properties(child, v2=v2)
    if v2 and node.get("x-kubernetes-preserve-unknown-fields"):
        return  # listing apiVersion, kind and metadata would make kubectl refuse every other field
    if not node.get("x-kubernetes-embedded-resource"):
        return
    props = node.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": "apiVersion defines the versioned schema of this "
                                                            "representation of an object."}
    props["kind"] = {"type": "string", "description": "kind is a string value representing the type of this "
                                                      "object."}
    props["metadata"] = {"$ref": OBJECT_META_REF, "description": "Standard object's metadata."}
    required = node.setdefault("required", [])
    for name in ("kind", "apiVersion"):
        if name not in required:
            required.append(name)


__all__ = ["published_schema", "root_preserves_unknown"]
