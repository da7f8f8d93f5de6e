"""One schema interface for every served type, built-in or custom.

Built-in types carry kube's OpenAPI definitions and custom resources their CRD's structural schema;
both answer the same questions through `TypeSchema`, so field validation, strategic merge patch and
server-side apply read one interface instead of reaching into either kind of schema.

Topology follows structured-merge-diff as kube derives it from OpenAPI (kube-openapi's schemaconv):
a list's `x-kubernetes-list-type` (with `x-kubernetes-list-map-keys`) decides when present;
otherwise a `merge` patch strategy makes it a map keyed by its patch merge key, or a set without
one; every other list is atomic. Objects are granular unless `x-kubernetes-map-type: atomic`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from kcp_apiserver.apimachinery.status import Cause

ListType = Literal["atomic", "set", "map"]
MapType = Literal["granular", "atomic"]
Obj = dict[str, Any]

_MERGE_STRATEGIES = ("merge", "merge,retainKeys")  # what schemaconv reads as an associative list


class SchemaNode(Protocol):
    """The schema of one value, reached from a type's root by field path."""

    @property
    def type(self) -> str:
        """The JSON type (object, array, string, integer, number, boolean), or "" where the schema does not say."""

    @property
    def list_type(self) -> ListType | None:
        """How a list merges: atomic (replaced whole), set (of scalars), map (keyed); None off lists."""

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        """The fields that identify an item of a map list."""

    @property
    def default(self) -> Any:
        """The schema's `default` for this value (kube's OpenAPI, a CRD's structural schema); None without one."""

    @property
    def map_type(self) -> MapType | None:
        """Whether an object's keys are owned one by one (granular) or together (atomic); None off objects."""

    @property
    def preserves_unknown_fields(self) -> bool:
        """Keys the schema does not name are kept (and not reported) rather than pruned."""

    @property
    def patch_strategies(self) -> tuple[str, ...]:
        """Strategic merge patch's `x-kubernetes-patch-strategy` of the field holding this value, split."""

    @property
    def patch_merge_key(self) -> str | None:
        """Strategic merge patch's `x-kubernetes-patch-merge-key` of the field holding this value."""

    def field(self, name: str) -> SchemaNode | None:
        """What key `name` of this object holds: its property, else the map value schema; None if unknown."""

    def values(self) -> SchemaNode | None:
        """The schema of this map's values (additionalProperties), or None."""

    def items(self) -> SchemaNode | None:
        """The schema of this list's items, or None."""


class TypeSchema(SchemaNode, Protocol):
    """A served type's schema: its root node, and what a write does with an object of the type."""

    @property
    def has_defaults(self) -> bool:
        """Whether `default` can change anything (reads of stored objects need defaulting then too)."""

    def decode_errors(self, obj: Obj) -> list[str]:
        """Why decoding would refuse obj (values of the wrong JSON type), worded as kube's decoder does."""

    def prune(self, obj: Obj) -> list[str]:
        """Drop the fields the schema does not know, in place; return their paths as kube reports them."""

    def default(self, obj: Obj) -> None:
        """Apply the schema's defaults in place (after pruning, as kube does)."""

    def validate(self, obj: Obj, old: Obj | None) -> list[Cause]:
        """What the schema rejects in obj (old is the stored object on update, for transition rules)."""


def node_at(node: SchemaNode | None, path: Iterable[str | int]) -> SchemaNode | None:
    """The schema at a field path: names descend into fields or map values, integers into list items."""
    for step in path:
        if node is None:
            return None
        node = node.items() if isinstance(step, int) else node.field(step)
    return node


def list_topology(extensions: Mapping[str, Any]) -> tuple[ListType, tuple[str, ...]]:
    """A list's type and map keys from its schema's extensions, as schemaconv derives them."""
    declared = extensions.get("x-kubernetes-list-type")
    if declared is not None:
        if declared == "map":
            keys = extensions.get("x-kubernetes-list-map-keys") or ()
            return "map", tuple(k for k in keys if isinstance(k, str))
        return ("set", ()) if declared == "set" else ("atomic", ())
    if extensions.get("x-kubernetes-patch-strategy") in _MERGE_STRATEGIES:
        key = extensions.get("x-kubernetes-patch-merge-key")
        return ("map", (key,)) if isinstance(key, str) else ("set", ())
    return "atomic", ()


def map_topology(extensions: Mapping[str, Any]) -> MapType:
    """An object's map type: atomic only when the schema says so."""
    return "atomic" if extensions.get("x-kubernetes-map-type") == "atomic" else "granular"


def patch_strategies(extensions: Mapping[str, Any]) -> tuple[str, ...]:
    raw = extensions.get("x-kubernetes-patch-strategy")
    return tuple(s.strip() for s in raw.split(",") if s.strip()) if isinstance(raw, str) else ()


class RootDelegate:
    """A TypeSchema's walk starts at its root node: these forward the node's answers (none without a root)."""

    root: SchemaNode | None

    @property
    def type(self) -> str:
        return self.root.type if self.root is not None else ""

    @property
    def list_type(self) -> ListType | None:
        return self.root.list_type if self.root is not None else None

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        return self.root.list_map_keys if self.root is not None else ()

    @property
    def default(self) -> Any:
        return self.root.default if self.root is not None else None

    @property
    def map_type(self) -> MapType | None:
        return self.root.map_type if self.root is not None else None

    @property
    def preserves_unknown_fields(self) -> bool:
        return self.root.preserves_unknown_fields if self.root is not None else False

    @property
    def patch_strategies(self) -> tuple[str, ...]:
        return self.root.patch_strategies if self.root is not None else ()

    @property
    def patch_merge_key(self) -> str | None:
        return self.root.patch_merge_key if self.root is not None else None

    def field(self, name: str) -> SchemaNode | None:
        return self.root.field(name) if self.root is not None else None

    def values(self) -> SchemaNode | None:
        return self.root.values() if self.root is not None else None

    def items(self) -> SchemaNode | None:
        return self.root.items() if self.root is not None else None
