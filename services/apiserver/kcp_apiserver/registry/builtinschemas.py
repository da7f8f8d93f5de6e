"""The built-in types' real OpenAPI schemas, their TypeSchemas, and the patch metadata they carry.

The schemas come from the `kubernetes_validate` wheel, which ships kube's
definitions in JSON-schema form (`$defs`, nullable type lists, enums on
apiVersion/kind). kubectl expects kube's own OpenAPI v2 shape, so they are
converted once, lazily, on first use (about 70 ms), then shared read-only.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kcp_apiserver.registry.builtintypeschema import OpenAPINode, OpenAPINodes, OpenAPITypeSchema
from kcp_apiserver.registry.typeschema import RootDelegate

_SCHEMAS_DIR = "kubernetes-json-schema"
DEFAULT_RELEASE = "1.32"  # the release kcp's own built-in types are described by


def _shipped_releases() -> tuple[str, ...]:
    """The Kubernetes releases the wheel ships schemas for, oldest first ("1.25", ...)."""
    found = []
    for entry in importlib.resources.files("kubernetes_validate").joinpath(_SCHEMAS_DIR).iterdir():
        name = entry.name
        if name.startswith("v") and name.endswith(".0-local"):
            major, _, minor = name[1:-len(".0-local")].partition(".")
            if major.isdigit() and minor.isdigit():
                found.append((int(major), int(minor)))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


RELEASES: tuple[str, ...] = _shipped_releases()


def newest_release() -> str:
    return RELEASES[-1] if RELEASES else DEFAULT_RELEASE
V2_PREFIX = "#/definitions/"
V3_PREFIX = "#/components/schemas/"
_COMBINATORS = ("oneOf", "anyOf", "allOf")
# kube's `+default` markers the wheel's schemas drop: kube publishes them as `default` in its OpenAPI, and
# server-side apply reads them to key a map-list item whose configuration leaves the key field out
_DEFAULTS = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}


def definitions(release: str = DEFAULT_RELEASE) -> dict[str, dict[str, Any]]:
    """All built-in definitions of a Kubernetes release in OpenAPI v2 form, keyed by kube's dotted name.

    Shared by every caller: treat the result as read-only (deep copy to edit).
    """
    return _definitions(release)


@functools.cache  # keyed by the release alone: definitions() and definitions("1.32") are one load
def _definitions(release: str) -> dict[str, dict[str, Any]]:
    source = importlib.resources.files("kubernetes_validate").joinpath(_SCHEMAS_DIR, f"v{release}.0-local",
                                                                       "_definitions.json")
    raw = json.loads(source.read_bytes())["$defs"]
    out = {name: _to_v2(schema) for name, schema in raw.items()}
    for (name, field), value in _DEFAULTS.items():
        prop = out.get(name, {}).get("properties", {}).get(field)
        if prop is not None:
            prop.setdefault("default", value)
    return out


def _to_v2(schema: dict[str, Any]) -> dict[str, Any]:
    """One JSON-schema node as OpenAPI v2: walks only schema positions, never property names."""
    if any(k in schema for k in _COMBINATORS) and "type" not in schema:
        collapsed = _collapse_scalar_union(schema)
        if collapsed is not None:
            return collapsed
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = V2_PREFIX + value.rsplit("/", 1)[-1]
        elif key == "type":
            if isinstance(value, list):
                value = next((t for t in value if t != "null"), None)
            if value is not None:
                out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _property_to_v2(name, prop) for name, prop in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _to_v2(value)
        elif key in _COMBINATORS and isinstance(value, list):
            out[key] = [_to_v2(v) for v in value]
        else:
            out[key] = value
    return out


def _property_to_v2(name: str, prop: dict[str, Any]) -> dict[str, Any]:
    converted = _to_v2(prop)
    if name in ("apiVersion", "kind"):
        converted.pop("enum", None)  # kube's schemas name no fixed values; shared types (List) would break
    return converted


def _collapse_scalar_union(schema: dict[str, Any]) -> dict[str, Any] | None:
    """IntOrString and Quantity are `oneOf` scalars here; kube's v2 says `type: string` (+ int-or-string)."""
    branches = [b for key in _COMBINATORS for b in schema.get(key, [])]
    types: set[str] = set()
    for branch in branches:
        t = branch.get("type") if isinstance(branch, dict) else None
        types.update(t if isinstance(t, list) else [t] if isinstance(t, str) else [])
    types.discard("null")
    if "string" not in types or not types <= {"string", "integer", "number"}:
        return None
    out: dict[str, Any] = {k: v for k, v in schema.items() if k not in _COMBINATORS}
    out["type"] = "string"
    if "integer" in types:
        out["format"] = "int-or-string"
    return out


@functools.cache
def _gvk_index(release: str) -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions(release).items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            index.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)
    return index


def definition_for(group: str, version: str, kind: str, release: str = DEFAULT_RELEASE) -> str | None:
    """The definition name of a group/version/kind, or None if no built-in schema describes it."""
    found = _gvk_index(release).get((group, version, kind))
    if found is not None:
        return found
    # No GVK extension: match `<...>.<group-segment>.<version>.<kind>` by name.
    segments = ("core", "meta") if not group else (group.split(".")[0],)
    suffix = f".{version}.{kind}"
    for segment in segments:
        matches = [n for n in definitions(release) if n.endswith(suffix) and n[: -len(suffix)].endswith("." + segment)]
        if len(matches) == 1:
            return matches[0]
    return None


@functools.cache
def _refs(name: str, release: str) -> frozenset[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[-1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(definitions(release).get(name, {}))
    return frozenset(found)


def closure(names: Iterable[str], release: str = DEFAULT_RELEASE) -> dict[str, dict[str, Any]]:
    """The named definitions plus all they reference, transitively (shared dicts: do not edit)."""
    defs = definitions(release)
    seen: set[str] = set()
    pending = [n for n in names if n in defs]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending.extend(r for r in _refs(name, release) if r in defs and r not in seen)
    return {name: defs[name] for name in sorted(seen)}


def to_v3(defs: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of v2 definitions whose refs point at `#/components/schemas/`."""

    def convert(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: convert(v) for k, v in node.items()}
            ref = out.get("$ref")
            if isinstance(ref, str) and ref.startswith(V2_PREFIX):
                out["$ref"] = V3_PREFIX + ref[len(V2_PREFIX):]
            return out
        if isinstance(node, list):
            return [convert(v) for v in node]
        return node

    return {name: convert(schema) for name, schema in defs.items()}


@functools.cache
def _nodes(release: str) -> OpenAPINodes:
    return OpenAPINodes(definitions(release))


def type_schema(name: str, release: str = DEFAULT_RELEASE) -> OpenAPITypeSchema:
    """The TypeSchema of a built-in definition: one per (name, release), shared by every resource and
    logical cluster.

    Cheap to ask for: the definitions load on the first walk, not here.
    """
    return _type_schema(name, release)


@functools.cache
def _type_schema(name: str, release: str) -> OpenAPITypeSchema:
    return OpenAPITypeSchema(name, functools.partial(_nodes, release), release=release)


class PatchMeta(RootDelegate):
    """Strategic merge patch's words for a node of a built-in TypeSchema: its field's strategy and merge key.

    A view, not a second source: the node answers. A meta without a node knows nothing (maps merge
    as maps, lists are replaced).
    """

    root: OpenAPINode | None

    def __init__(self, node: OpenAPINode | None = None) -> None:
        self.root = node

    @classmethod
    def for_definition(cls, name: str) -> PatchMeta:
        """The meta of a root type, e.g. `io.k8s.api.core.v1.Pod` (knows nothing if unknown)."""
        return cls(type_schema(name).root)

    @classmethod
    def unknown(cls) -> PatchMeta:
        return cls()

    @property
    def schema(self) -> Mapping[str, Any] | None:
        """The node's schema, references resolved (None when unknown)."""
        return self.root.schema if self.root is not None else None

    @property
    def strategies(self) -> tuple[str, ...]:
        return self.patch_strategies

    @property
    def merge_key(self) -> str | None:
        return self.patch_merge_key

    @property
    def strategy(self) -> str:
        """The strategy as kube writes it: "", "merge", "replace", "retainKeys", "merge,retainKeys"."""
        return ",".join(self.strategies)

    @property
    def merges(self) -> bool:
        return "merge" in self.strategies

    @property
    def replaces(self) -> bool:
        return "replace" in self.strategies

    @property
    def retains_keys(self) -> bool:
        return "retainKeys" in self.strategies

    def field(self, name: str) -> PatchMeta:
        """The meta of property `name` of this object (or of a map value, via additionalProperties)."""
        return PatchMeta(self.root.field(name) if self.root is not None else None)

    def values(self) -> PatchMeta:
        return PatchMeta(self.root.values() if self.root is not None else None)

    def items(self) -> PatchMeta:
        """The meta of this list's elements."""
        return PatchMeta(self.root.items() if self.root is not None else None)
