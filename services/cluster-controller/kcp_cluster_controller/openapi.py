"""A Kubernetes type's OpenAPI v3 schema (from /openapi/v3/apis/<group>/<version>) as a CRD's structural schema.
A v2 document (/openapi/v2: kube before 1.24) converts the same way: its `definitions` are the components.

kube publishes its types with `$ref`s into `components.schemas` and a few types whose JSON shape is
not their Go shape. A CRD schema must be self-contained and structural (every node typed), so, as
kube's CRD tooling (controller-gen) writes these types:

- `$ref` (alone or as `allOf: [{$ref}]`) is inlined, its siblings (description) kept;
- IntOrString and Quantity become `x-kubernetes-int-or-string` (anyOf integer/string);
- Time and MicroTime become strings of format date-time;
- RawExtension and FieldsV1 become objects that keep unknown fields;
- the root's `metadata` is `{type: object}` (the server owns ObjectMeta's schema);
- keywords CRD schemas do not take (GVK lists) are dropped, and so are object defaults (`{}`: the
  physical cluster defaults); scalar defaults stay, as list-map keys need them;
- strategic merge patch's `x-kubernetes-patch-strategy` and `-merge-key` stay on their fields here:
  negotiation narrows them with the rest, and the CRD carries them in an annotation (kcpcommon.patchmeta);
  a node without a type keeps unknown fields;
- a list-map key without a default (documents before kube's +default markers) defaults to TCP when it
  is a protocol, as kube defaults it, and is required otherwise.

A type that refers to itself (none of the workload types does) is cut at the second visit with
an object that keeps unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcpcommon.patchmeta import PATCH_KEYS

Schema = dict[str, Any]

REF_PREFIXES = ("#/components/schemas/", "#/definitions/")  # OpenAPI v3, v2 (kube before 1.24)
INT_OR_STRING: Schema = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
DATE_TIME: Schema = {"type": "string", "format": "date-time"}
ANY_OBJECT: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

SPECIAL: Mapping[str, Schema] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": INT_OR_STRING,
    "io.k8s.apimachinery.pkg.api.resource.Quantity": INT_OR_STRING,
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": DATE_TIME,
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": DATE_TIME,
    "io.k8s.apimachinery.pkg.runtime.RawExtension": ANY_OBJECT,
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": ANY_OBJECT,
}

# what a CRD's JSONSchemaProps holds (minus $ref, definitions, defaults, and the composition keywords
# handled apart); anything else in kube's OpenAPI is documentation for other tools
KEPT = frozenset({
    "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "enum",
    "maxProperties", "minProperties", "required", "nullable", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type", "x-kubernetes-map-type", *PATCH_KEYS,
})


class UnknownType(LookupError):
    """The document has no schema for the kind asked for."""


def find_kind(components: Mapping[str, Any], group: str, version: str, kind: str) -> str:
    """The name of the schema whose x-kubernetes-group-version-kind is (group, version, kind)."""
    for name, schema in components.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return name
    raise UnknownType(f"no schema for {kind} in {group or 'core'}/{version}")


def crd_schema(document: Mapping[str, Any], group: str, version: str, kind: str) -> Schema:
    """The openAPIV3Schema of a CRD serving `kind`, from kube's OpenAPI v3 document of its group version."""
    components = (document.get("components") or {}).get("schemas") or document.get("definitions") or {}
    root = _Inliner(components).node(components[find_kind(components, group, version, kind)], ())
    properties = dict(root.get("properties") or {})
    properties["metadata"] = {"type": "object"}
    root["properties"] = properties
    root["type"] = "object"
    return root


class _Inliner:
    def __init__(self, components: Mapping[str, Any]) -> None:
        self.components = components

    def node(self, schema: Mapping[str, Any], seen: tuple[str, ...]) -> Schema:
        ref = _ref_of(schema)
        if ref is not None:
            siblings = {k: v for k, v in schema.items() if k in ("description", *PATCH_KEYS)}
            if ref in SPECIAL:
                return {**SPECIAL[ref], **siblings}
            if ref in seen or ref not in self.components:
                return {**ANY_OBJECT, **siblings}
            target = self.node(self.components[ref], (*seen, ref))
            if "default" in schema and not isinstance(schema["default"], (dict, list)):
                siblings["default"] = schema["default"]
            return {**target, **siblings}
        if schema.get("format") == "int-or-string" or schema.get("x-kubernetes-int-or-string"):
            return {**INT_OR_STRING, **{k: v for k, v in schema.items() if k == "description"}}
        out: Schema = {k: v for k, v in schema.items() if k in KEPT}
        if "default" in schema and not isinstance(schema["default"], (dict, list)):
            out["default"] = schema["default"]  # list-map keys must have one (a port's protocol: TCP)
        if "properties" in schema:
            out["properties"] = {name: self.node(sub, seen) for name, sub in schema["properties"].items()}
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            out["additionalProperties"] = self.node(additional, seen)
        if isinstance(schema.get("items"), Mapping):
            out["items"] = self.node(schema["items"], seen)
            if out.get("x-kubernetes-list-type") == "map":
                out["items"] = _keys_defaulted(out["items"], out.get("x-kubernetes-list-map-keys") or ())
        if "type" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            if "properties" in out or "additionalProperties" in out:
                out["type"] = "object"
            else:
                out.update(ANY_OBJECT)
        if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out


def _keys_defaulted(item: Schema, keys: Any) -> Schema:
    """A list-map key must have a default or be required in a CRD. Documents that predate kube's +default
    markers lack them: a protocol defaults to TCP, as kube defaults it; any other key is required."""
    props = item.get("properties") or {}
    required = list(item.get("required") or [])
    for key in keys:
        prop = props.get(key)
        if prop is None or "default" in prop or key in required:
            continue
        if key == "protocol":
            props[key] = {**prop, "default": "TCP"}
        else:
            required.append(key)
    return {**item, "properties": props, **({"required": required} if required else {})}


def _ref_of(schema: Mapping[str, Any]) -> str | None:
    """`$ref`, or the single `$ref` of an `allOf` (how kube's v3 documents add a description to a ref)."""
    ref = schema.get("$ref")
    if ref is None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
            ref = all_of[0].get("$ref")
    if isinstance(ref, str):
        for prefix in REF_PREFIXES:
            if ref.startswith(prefix):
                return ref[len(prefix):]
    return None
