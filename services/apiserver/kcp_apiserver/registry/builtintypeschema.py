"""OpenAPI schemas behind the one schema interface: the built-in types' TypeSchema.

A node is made the first time a walk reaches its place in the definitions and shared from then on,
whichever type reached it: a Pod's and a Deployment's containers are one node. The same nodes walk
a CRD's structural schema, which is OpenAPI without references.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from kcp_apiserver.apimachinery.jsonvalues import json_type
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.typeschema import (
    ListType,
    MapType,
    Obj,
    RootDelegate,
    list_topology,
    map_topology,
    patch_strategies,
)
from kcpcommon.quantity import KUBE_EXPRESSION, canonical_decimal_si, canonical_quantity, try_parse_quantity

Schema = Mapping[str, Any]
_MAX_REFS = 32
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,),
}
_GO_VALUE_KINDS = {"boolean": "bool", "integer": "number"}  # encoding/json's words where OpenAPI's differ
_GO_TYPES = {"integer": "int", "number": "float64", "boolean": "bool", "object": "map", "array": "slice"}
_TYPE_META = ("apiVersion", "kind")
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
QUANTITY_REFUSED = f"quantities must match the regular expression '{KUBE_EXPRESSION}'"  # kube's decoding error
# Go's zero values: what encoding/json leaves in a list item or map value that was `null`
_ZERO_VALUES: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}


class OpenAPINodes:
    """The nodes of one set of OpenAPI definitions (`#/definitions/<name>` references), made on first use.

    `structural` is for CRD schemas: only `x-kubernetes-preserve-unknown-fields` keeps unknown keys
    there, where a built-in's free-form object (`type: object` and nothing else) keeps them too.
    """

    def __init__(self, definitions: Mapping[str, Schema], *, structural: bool = False) -> None:
        self.definitions = definitions
        self.structural = structural
        self._nodes: dict[int, OpenAPINode] = {}  # by id of a schema the node holds, so ids stay unique

    def node(self, declared: Schema | None) -> OpenAPINode | None:
        """The node of a schema as a field declares it (a `$ref` plus the field's own extensions)."""
        if declared is None:
            return None
        found = self._nodes.get(id(declared))
        if found is None:
            found = self._nodes[id(declared)] = OpenAPINode(self, declared)
        return found

    def definition(self, name: str) -> OpenAPINode | None:
        return self.node(self.definitions.get(name))

    def resolve(self, schema: Schema) -> Schema | None:
        """Follow `$ref`s to the schema they name (None if one names nothing)."""
        for _ in range(_MAX_REFS):
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                return schema
            target = self.definitions.get(ref.rsplit("/", 1)[-1])
            if target is None:
                return None
            schema = target
        return None


class OpenAPINode:
    """One value's schema: the field's declaration over the definition it references."""

    __slots__ = (
        "_extra",
        "_items",
        "_nodes",
        "declared",
        "default",
        "int_or_string",
        "list_map_keys",
        "list_type",
        "map_type",
        "opaque",
        "patch_merge_key",
        "patch_strategies",
        "preserves_unknown_fields",
        "props",
        "py_types",
        "quantity",
        "schema",
        "type",
    )

    def __init__(self, nodes: OpenAPINodes, declared: Schema) -> None:
        resolved = nodes.resolve(declared)
        s: Schema = resolved or {}
        self._nodes = nodes
        self.declared = declared
        self.schema = resolved  # None when a reference leads nowhere: the node knows nothing
        # the field's own extensions win over its type's (kube marks e.g. one ObjectReference field granular)
        ext = {k: v for source in (s, declared) for k, v in source.items() if k.startswith("x-kubernetes-")}
        raw_type = s.get("type")
        self.type: str = raw_type if isinstance(raw_type, str) else ""
        self.default: Any = declared.get("default", s.get("default"))  # the field's own over its type's
        props, extra, items = s.get("properties"), s.get("additionalProperties"), s.get("items")
        self.props: Mapping[str, Schema] | None = props if isinstance(props, dict) else None
        self._extra: Schema | None = extra if isinstance(extra, dict) else None
        self._items: Schema | None = items if isinstance(items, dict) else None
        is_list = self.type == "array" or self._items is not None
        is_object = self.type == "object" or self.props is not None or self._extra is not None
        self.list_type: ListType | None = None
        self.list_map_keys: tuple[str, ...] = ()
        if is_list:
            self.list_type, self.list_map_keys = list_topology(ext)
        self.map_type: MapType | None = map_topology(ext) if is_object else None
        free_form = not nodes.structural and self.type == "object" and self.props is None and self._extra is None
        self.preserves_unknown_fields = ext.get("x-kubernetes-preserve-unknown-fields") is True or free_form
        self.patch_strategies = patch_strategies(declared)  # a field's patch metadata sits on the field
        key = declared.get("x-kubernetes-patch-merge-key")
        self.patch_merge_key: str | None = key if isinstance(key, str) else None
        # decoding: an empty or preserving schema checks nothing below it
        self.opaque = not s or bool(s.get("x-kubernetes-preserve-unknown-fields"))
        self.int_or_string = bool(s.get("x-kubernetes-int-or-string")) or s.get("format") == "int-or-string"
        self.py_types = _JSON_TYPES.get(self.type)
        ref = declared.get("$ref")
        self.quantity = isinstance(ref, str) and ref.rsplit("/", 1)[-1] == _QUANTITY

    def field(self, name: str) -> OpenAPINode | None:
        prop = self.props.get(name) if self.props is not None else None
        return self._nodes.node(prop if prop is not None else self._extra)

    def values(self) -> OpenAPINode | None:
        return self._nodes.node(self._extra)

    def items(self) -> OpenAPINode | None:
        return self._nodes.node(self._items)


class OpenAPITypeSchema(RootDelegate):
    """A built-in type's TypeSchema over its OpenAPI definition; the definitions load on the first walk.

    kube decodes built-in types into Go structs: unknown fields are dropped, values of the wrong JSON
    type refuse to decode. Defaults and validation are the type's own code (`Resource.prepare` and
    `Resource.validate`, as kube's defaulters and strategies), so here they do nothing.
    """

    has_defaults = False

    def __init__(self, definition: str, nodes: Callable[[], OpenAPINodes], *, release: str = "") -> None:
        self.definition = definition
        self.release = release  # the Kubernetes release the definition is from
        self._nodes = nodes

    @functools.cached_property
    def root(self) -> OpenAPINode | None:  # type: ignore[override]
        return self._nodes().definition(self.definition)

    def decode_errors(self, obj: Obj) -> list[str]:
        """Also leaves obj as kube's decoding leaves it: a `null` list item or map value becomes its type's
        zero value, a Quantity its canonical text when written as a JSON number (`0.1` -> `100m`)."""
        errors: list[str] = []
        _decode(obj, self.root, "", errors)
        return errors

    def prune(self, obj: Obj) -> list[str]:
        unknown: list[str] = []
        _prune(obj, self.root, "", unknown, top=True)
        return unknown

    def default(self, obj: Obj) -> None:
        return None

    def validate(self, obj: Obj, old: Obj | None) -> list[Cause]:
        return []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _decode(value: Any, node: OpenAPINode | None, path: str, errors: list[str]) -> None:
    """Type errors as Go's encoding/json words them, stopping at the first one on each branch."""
    if value is None or node is None or node.opaque:
        return
    if node.quantity:  # kube's Quantity parses whatever JSON it is given, quoted or not
        if try_parse_quantity(value) is None:
            errors.append(QUANTITY_REFUSED)
        return
    if node.int_or_string:
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errors.append(f"{path or '.'}: expected an integer or a string, got {_go_value_kind(value)}")
        return
    expected = node.py_types
    if expected is not None and (not isinstance(value, expected) or (isinstance(value, bool)
                                                                     and node.type != "boolean")):
        errors.append(f"json: cannot unmarshal {_go_value_kind(value)} into Go struct field "
                      f"{path or '.'} of type {_GO_TYPES.get(node.type, node.type)}")
        return
    if isinstance(value, dict):
        if node.props is None and node.values() is None:
            return
        for key, child in value.items():
            child_node = node.field(key)
            is_field = node.props is not None and key in node.props  # else a map's value
            value[key] = child = _as_decoded(child, child_node, null_is_zero=not is_field)
            _decode(child, child_node, _join(path, key), errors)
    elif isinstance(value, list) and node.items() is not None:
        items = node.items()
        for index, item in enumerate(value):
            value[index] = item = _as_decoded(item, items, null_is_zero=True)
            _decode(item, items, f"{path}[{index}]", errors)


def _as_decoded(value: Any, node: OpenAPINode | None, *, null_is_zero: bool) -> Any:
    """A value as kube stores it: a Quantity (a JSON number or text) is its canonical text; `null` as a list
    item or map value (`null_is_zero`) is its Go type's zero value (a null string argument is ""), where a
    field's null is the field unset."""
    if node is None or node.opaque:
        return value
    if node.quantity:
        if value is None:
            return "0" if null_is_zero else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return canonical_decimal_si(Fraction(repr(value)) if isinstance(value, float) else Fraction(value))
        if isinstance(value, str) and try_parse_quantity(value) is not None:
            return canonical_quantity(value)  # `0.5` reads back `500m`; text kube refuses is left to the check
        return value
    if value is None and null_is_zero:
        if node.int_or_string:
            return 0
        if node.type == "object" and not node.preserves_unknown_fields:
            return {}
        return _ZERO_VALUES.get(node.type)
    return value


def _prune(value: Any, node: OpenAPINode | None, path: str, unknown: list[str], *, top: bool = False) -> None:
    """Drop the keys no property or map value schema covers; apiVersion and kind stay at the root."""
    if node is None or node.opaque:
        return
    if isinstance(value, dict):
        props, extra = node.props, node.values()
        if props is None:
            if extra is not None:
                for key, child in value.items():
                    _prune(child, extra, _join(path, key), unknown)
            return
        drop: list[str] = []
        for key, child in value.items():
            if key in props:
                _prune(child, node.field(key), _join(path, key), unknown)
            elif extra is not None:
                _prune(child, extra, _join(path, key), unknown)
            elif not (top and key in _TYPE_META):
                unknown.append(_join(path, key))
                drop.append(key)
        for key in drop:
            del value[key]
    elif isinstance(value, list):
        items = node.items()
        if items is not None:
            for index, item in enumerate(value):
                _prune(item, items, f"{path}[{index}]", unknown)


def _go_value_kind(value: Any) -> str:
    """How Go's encoding/json names a value it cannot unmarshal: bool, number, string, array, object, null."""
    kind = json_type(value)
    return _GO_VALUE_KINDS.get(kind, kind)
