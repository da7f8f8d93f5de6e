"""kube's cost model for CEL rules: cel-go's estimator (checker/cost.go) over a rule's checked AST.

A rule's cost is counted in kube's units: 1 per identifier, field selection and O(1) call, a tenth per
character a string function traverses, and a comprehension's body once per element of its range. Sizes
come from a `sizes` function of a value's path (`self.spec.items.@items`): at CRD create/update the
schema's maxItems, maxProperties and maxLength bound them (kube's DeclType: an unbounded list is as
long as a 3 MiB request allows, a string's maxLength is counted as 4 bytes per character, map keys
as 0), and when a rule runs, the object's own sizes do. The second is what this server charges as a
rule's "actual" cost: cel-expr-python counts no cost, and this estimate bounds from above what cel-go
would count on the same object (it is exact but for short-circuits that skip work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.apiextensions.celast import CheckedAst, Node

MAX_REQUEST_BYTES = 3 * 1024 * 1024  # kube's celconfig.MaxRequestSizeBytes
_UNBOUNDED = (1 << 64) - 1
_STRING_TRAVERSAL = 0.1  # kube's common.StringTraversalCostFactor
_REGEX_STRING_LENGTH = 0.25  # kube's common.RegexStringLengthCostFactor
_SCALARS = frozenset({"integer", "number", "boolean", "int", "uint", "double", "bool", "null_type", "timestamp",
                      "duration"})
_SCALAR_RESULTS = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_&&_", "_||_", "!_", "@in", "size",
                             "startsWith", "endsWith", "contains", "matches", "has", "int", "uint", "double", "bool",
                             "_-_", "_*_", "_/_", "_%_", "-_", "@not_strictly_false", "indexOf", "lastIndexOf"})
_COMPARISONS = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})
# string functions kube's library estimates by the characters they traverse, their result as long as the input
_STRING_COPIES = frozenset({"lowerAscii", "upperAscii", "trim", "substring"})

Path = tuple[str, ...]
_LIST_BASE_COST = 10  # cel-go's common.ListCreateBaseCost
_MAP_BASE_COST = 30  # cel-go's common.MapCreateBaseCost
_SCALAR_TEXT = 25  # the longest text of an int, uint, double or bool


@dataclass(frozen=True, slots=True)
class Estimate:
    """A [min, max] range of a cost or a size, saturating at 2^64-1 as cel-go's uint64 arithmetic does."""

    min: int = 0
    max: int = 0

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(_sat(self.min + other.min), _sat(self.max + other.max))

    def times(self, other: Estimate) -> Estimate:
        return Estimate(_sat(self.min * other.min), _sat(self.max * other.max))

    def factor(self, per_unit: float) -> Estimate:
        return Estimate(_sat(math.ceil(self.min * per_unit)), _sat(math.ceil(self.max * per_unit)))

    def union(self, other: Estimate) -> Estimate:
        return Estimate(min(self.min, other.min), max(self.max, other.max))


def _sat(value: int) -> int:
    return value if value < _UNBOUNDED else _UNBOUNDED


_ONE = Estimate(1, 1)
_UNKNOWN_SIZE = Estimate(0, _UNBOUNDED)


# -- kube's DeclType, as much of it as costs need ------------------------------------------------------

@dataclass(slots=True)
class Shape:
    """A schema node as kube's CEL types see it: what it is, how many elements it may hold, how small it is."""

    kind: str  # object, map, list, string, bytes, integer, number, boolean, dyn, timestamp, duration
    max_elements: int = 0
    min_size: int = 1
    fields: dict[str, Shape] = field(default_factory=dict)
    elem: Shape | None = None


_MIN_SIZES = {"integer": 1, "number": 1, "boolean": 4}


def shape_of(schema: Any, resource_root: bool = False) -> Shape:
    """kube's SchemaDeclType: maxItems/maxProperties/maxLength, or what a request of max size could hold."""
    if not isinstance(schema, dict):
        return Shape("dyn", MAX_REQUEST_BYTES - 2)
    if schema.get("x-kubernetes-int-or-string"):
        return Shape("dyn", MAX_REQUEST_BYTES - 2, 1)
    kind = schema.get("type")
    if kind == "array":
        items = shape_of(schema.get("items"), bool(_get(schema.get("items"), "x-kubernetes-embedded-resource")))
        limit = schema.get("maxItems")
        count = max(limit, 0) if isinstance(limit, int) else (MAX_REQUEST_BYTES - 2) // (items.min_size + 1)
        return Shape("list", count, 2, elem=items)
    if kind == "object" or resource_root:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not schema.get("properties"):
            values = shape_of(extra, bool(extra.get("x-kubernetes-embedded-resource")))
            limit = schema.get("maxProperties")
            count = max(limit, 0) if isinstance(limit, int) else (MAX_REQUEST_BYTES - 2) // (values.min_size + 6)
            return Shape("map", count, 2, elem=values)
        props = dict(schema.get("properties") or {})
        if resource_root or schema.get("x-kubernetes-embedded-resource"):
            meta = {"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}
            props = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, **props, "metadata": meta}
        required = set(schema.get("required") or [])
        fields, min_size = {}, 2
        for name, prop in props.items():
            child = shape_of(prop, bool(_get(prop, "x-kubernetes-embedded-resource")))
            fields[name] = child
            if name in required and _get(prop, "default") is None:
                min_size += len(name) + child.min_size + 4
        return Shape("object", len(fields), min_size, fields=fields)
    if kind == "string":
        return Shape("bytes" if schema.get("format") == "byte" else "string", _string_length(schema), 2)
    kind = kind if isinstance(kind, str) else "dyn"
    return Shape(kind, 0, _MIN_SIZES.get(kind, 1))


def _string_length(schema: dict[str, Any]) -> int:
    limit = schema.get("maxLength")
    if isinstance(limit, int):
        return max(limit, 0) * (1 if schema.get("format") == "byte" else 4)
    fmt = schema.get("format")
    if fmt in ("duration", "date", "date-time"):
        return {"duration": 32, "date": 12, "date-time": 37}[fmt]
    enum = [v for v in schema.get("enum") or [] if isinstance(v, str)]
    if enum:
        return max(len(v) for v in enum)
    return MAX_REQUEST_BYTES - 2


def _get(schema: Any, key: str) -> Any:
    return schema.get(key) if isinstance(schema, dict) else None


class SchemaSizes:
    """Sizes bounded by the schema, for the estimate made when a CRD is written."""

    def __init__(self, shape: Shape) -> None:
        self._shape = shape

    def size(self, path: Path) -> Estimate | None:
        node = self._at(path)
        if node is None:
            return None
        return _ONE if node.kind in _SCALARS else Estimate(0, node.max_elements)

    def is_list(self, path: Path) -> bool:
        node = self._at(path)
        return node is not None and node.kind == "list"

    def _at(self, path: Path) -> Shape | None:
        node: Shape | None = self._shape
        for name in path[1:]:  # path[0] is self or oldSelf, both of this shape
            if node is None:
                return None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                return Shape("string", 0, 2)  # kube's map key type carries no size: it counts as 0
            else:
                node = node.fields.get(name)
        return node


class ValueSizes:
    """The sizes of the values a rule runs on: the largest value found at each path."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def size(self, path: Path) -> Estimate | None:
        found = self._at(path)
        if found is None:
            return None
        if found and all(isinstance(f, (bool, int, float)) or f is None for f in found):
            return _ONE
        return Estimate(0, max((len(f) for f in found if isinstance(f, (str, bytes, list, dict))), default=0))

    def is_list(self, path: Path) -> bool:
        return any(isinstance(f, list) for f in self._at(path) or ())

    def _at(self, path: Path) -> list[Any] | None:
        if path[0] not in self._values:
            return None
        found = [self._values[path[0]]]
        for name in path[1:]:
            if name in ("@items", "@values"):
                found = [v for f in found for v in (f.values() if isinstance(f, dict) else f if isinstance(f, list)
                                                    else ())]
            elif name == "@keys":
                found = [k for f in found if isinstance(f, dict) for k in f]
            else:
                found = [f[name] for f in found if isinstance(f, dict) and name in f]
        return found


Sizes = SchemaSizes | ValueSizes


# -- the estimator -------------------------------------------------------------------------------------

def estimate(ast: CheckedAst, sizes: Sizes) -> Estimate:
    """The cost range of one expression, as cel-go's checker.Cost computes it."""
    return _Coster(ast, sizes).cost(ast.root, {})


@dataclass(slots=True)
class _Info:
    """What the walk learns of a node besides its cost: the value path it reads and its size if computed."""

    path: Path | None = None
    size: Estimate | None = None
    scalar: bool = False


class _Coster:
    def __init__(self, ast: CheckedAst, sizes: Sizes) -> None:
        self._ast = ast
        self._sizes = sizes
        self._info: dict[int, _Info] = {}

    def size(self, node: Node) -> Estimate:
        info = self._info.get(node.id) or _Info()
        if info.size is not None:
            return info.size
        if info.path is not None and (known := self._sizes.size(info.path)) is not None:
            return known
        return _ONE if info.scalar else _UNKNOWN_SIZE

    def cost(self, node: Node, ranges: dict[str, Node]) -> Estimate:
        info = _Info()
        self._info[node.id] = info
        if node.kind == "const":
            if isinstance(node.value, (str, bytes)):
                info.size = Estimate(len(node.value), len(node.value))
            else:
                info.scalar = True
            return Estimate()
        if node.kind == "ident":
            bound = ranges.get(node.name)
            if bound is not None:
                parent = self._info[bound.id].path
                if parent is not None:
                    info.path = (*parent, "@items" if self._sizes.is_list(parent) else "@keys")
            elif node.name in ("self", "oldSelf"):
                info.path = (node.name,)
            return _ONE
        if node.kind == "select":
            assert node.target is not None
            total = self.cost(node.target, ranges) + _ONE
            parent = self._info[node.target.id].path
            if node.test_only:
                info.scalar = True
            elif parent is not None:
                info.path = (*parent, node.name)
            return total
        if node.kind == "call":
            return self._call(node, info, ranges)
        if node.kind == "list":
            info.size = Estimate(len(node.args), len(node.args))
            return sum((self.cost(e, ranges) for e in node.args), Estimate()) + Estimate(_LIST_BASE_COST,
                                                                                         _LIST_BASE_COST)
        if node.kind == "map":
            info.size = Estimate(len(node.args), len(node.args))
            total = sum((self.cost(k, ranges) + self.cost(v, ranges) for k, v in zip(node.keys, node.args, strict=True)),
                        Estimate())
            return total + Estimate(_MAP_BASE_COST, _MAP_BASE_COST)
        if node.kind == "comprehension":
            iter_range, init, condition, step, result = node.loop
            total = self.cost(iter_range, ranges) + self.cost(init, ranges)
            inner = {**ranges, node.name: iter_range}
            per_element = self.cost(condition, inner) + self.cost(step, inner)
            total = total + self.cost(result, ranges)
            count = self.size(iter_range)
            info.size = count
            return total + count.times(per_element)
        return Estimate()

    def _call(self, node: Node, info: _Info, ranges: dict[str, Node]) -> Estimate:
        name, args = node.name, node.args
        arg_costs = [self.cost(a, ranges) for a in args]
        total = sum(arg_costs, Estimate())
        if node.target is not None:
            total = total + self.cost(node.target, ranges)
        info.scalar = name in _SCALAR_RESULTS
        overloads = self._ast.overloads.get(node.id, ())
        if name in ("_&&_", "_||_") and len(arg_costs) == 2:
            return Estimate(arg_costs[0].min, (arg_costs[0] + arg_costs[1]).max)
        if name == "_?_:_" and len(args) == 3:
            info.size = self.size(args[1]).union(self.size(args[2]))
            info.scalar = self._info[args[1].id].scalar and self._info[args[2].id].scalar
            return arg_costs[0] + arg_costs[1].union(arg_costs[2])
        if name == "_[_]" and len(args) == 2:
            parent = self._info[args[0].id].path
            if parent is not None:
                info.path = (*parent, "@items" if self._sizes.is_list(parent) else "@values")
            return total + _ONE
        if name == "@in" and len(args) == 2:
            return total + (self.size(args[1]) if "in_list" in overloads or not overloads else _ONE)
        if name == "_+_" and len(args) == 2:
            left, right = self.size(args[0]), self.size(args[1])
            combined = Estimate(_sat(left.min + right.min), _sat(left.max + right.max))
            if any(o.startswith("add_string") or o.startswith("add_bytes") for o in overloads):
                info.size = combined
                return total + combined.factor(_STRING_TRAVERSAL)
            if any(o.startswith("add_list") for o in overloads):
                info.size = combined
            info.scalar = not overloads or all(o.split("_")[-1] in ("int64", "uint64", "double") for o in overloads)
            return total + _ONE
        if name in _COMPARISONS and len(args) == 2:
            smallest = min(self.size(args[0]).max, self.size(args[1]).max)
            return total + Estimate(1 if smallest else 0, smallest).factor(_STRING_TRAVERSAL)
        library = self._library(node, info)
        return total + (_ONE if library is None else library)

    def _library(self, node: Node, info: _Info) -> Estimate | None:
        """The cost of cel-go's string functions and of kube's library (apiserver/pkg/cel/library/cost.go) for
        those this runtime has; None for an O(1) call."""
        name, args, target = node.name, node.args, node.target
        if name in ("startsWith", "endsWith") and target is not None and len(args) == 1:
            return self.size(args[0]).factor(_STRING_TRAVERSAL)
        if name == "contains" and target is not None and len(args) == 1:
            return self.size(target).factor(_STRING_TRAVERSAL).times(self.size(args[0]).factor(_STRING_TRAVERSAL))
        if name == "matches" and args:
            text, pattern = (target, args[0]) if target is not None else (args[0], args[-1])
            return (self.size(text) + _ONE).factor(_STRING_TRAVERSAL).times(
                self.size(pattern).factor(_REGEX_STRING_LENGTH))
        if target is None:
            if name == "string" and len(args) == 1 and (self._info[args[0].id].scalar or self.size(args[0]) == _ONE):
                info.size = Estimate(1, _SCALAR_TEXT)  # a number or bool printed is short
            return None
        size = self.size(target)
        if name in _STRING_COPIES:
            info.size = size
            return size.factor(_STRING_TRAVERSAL)
        if name in ("indexOf", "lastIndexOf"):
            item = self._item_size(target)
            if item is None:  # a string
                return size.factor(_STRING_TRAVERSAL)
            return size.times(_ONE + item.factor(_STRING_TRAVERSAL))
        if name == "split":
            info.size = Estimate(0, size.max)
            return size.factor(2 * _STRING_TRAVERSAL)
        if name == "replace" and len(args) >= 2:
            info.size = _replaced_size(size, self.size(args[0]), self.size(args[1]))
            return size.factor(2 * _STRING_TRAVERSAL)
        if name == "join":
            item = self._item_size(target) or _UNKNOWN_SIZE
            separators = Estimate(max(size.min - 1, 0), max(size.max - 1, 0))
            joined = size.times(item) + (self.size(args[0]).times(separators) if args else Estimate())
            info.size = joined
            return joined.factor(_STRING_TRAVERSAL)
        if name == "quote":
            info.size = Estimate(_sat(size.min + 2), _sat(size.max * 2 + 2))
            return size.factor(_STRING_TRAVERSAL)
        if name == "format":
            return size.factor(_STRING_TRAVERSAL)
        return None

    def _item_size(self, node: Node) -> Estimate | None:
        """The size of a list's items, None if the node is not known to be a list."""
        path = self._info[node.id].path
        if path is None or not self._sizes.is_list(path):
            return None
        return self._sizes.size((*path, "@items")) or _UNKNOWN_SIZE


def _replaced_size(size: Estimate, old: Estimate, new: Estimate) -> Estimate:
    """The longest result of replace(), as kube's library bounds it."""
    if old.min == 0:
        return Estimate(0, _sat(_sat((size.max + 1) * new.max) + size.max))
    if new.max <= old.min:
        return Estimate(0, size.max)
    return Estimate(0, _sat(math.ceil(size.max / old.min) * new.max))
