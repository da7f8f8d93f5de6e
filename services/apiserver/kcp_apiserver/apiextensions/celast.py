"""The checked syntax tree of a compiled CEL expression, read from cel-expr-python's own serialization.

kube's cost estimate walks a rule's checked AST (cel-go's checker/cost.go); cel-expr-python gives no AST
objects, but `Expression.serialize()` is a `google.protobuf.Any` holding the `cel.expr.CheckedExpr`
its C++ checker built. The few messages needed (Expr, Constant, the reference map's overload ids) are
read here straight from the protobuf wire format, and each node keeps its own bytes so that a subtree
can be run alone (`subprogram`) and a comprehension over part of its range (`chunk_program`), which is
how `celloops` runs comprehensions past the C++ runtime's iteration budget.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_CHECKED_EXPR_URL = b"type.googleapis.com/cel.expr.CheckedExpr"
# cel.expr.Expr's fields: id, then one of the kinds below
_KINDS = {3: "const", 4: "ident", 5: "select", 6: "call", 7: "list", 8: "map", 9: "comprehension"}


@dataclass(frozen=True, slots=True)
class Node:
    """One expression of the tree; `kind` names which of the fields below are set."""

    id: int
    kind: str
    raw: bytes = field(repr=False)
    name: str = ""  # ident name, selected field, called function, comprehension iteration variable
    value: Any = None  # a constant's value
    test_only: bool = False  # a select that is `has(...)`
    target: Node | None = None  # select operand, member call target
    args: tuple[Node, ...] = ()  # call arguments, list elements, map values
    keys: tuple[Node, ...] = ()  # map keys
    accu_var: str = ""
    # comprehension: iter_range, accu_init, loop_condition, loop_step, result
    loop: tuple[Node, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckedAst:
    root: Node
    overloads: dict[int, tuple[str, ...]]  # call id -> the overload ids the checker chose
    maps: bytes = field(repr=False)  # the CheckedExpr's reference and type maps, as encoded


def parse(serialized: bytes) -> CheckedAst:
    """The checked AST of `Expression.serialize()`."""
    any_fields = dict((num, value) for num, _, value in _fields(serialized))
    if any_fields.get(1) != _CHECKED_EXPR_URL:
        raise ValueError("not a serialized cel.expr.CheckedExpr")
    root: Node | None = None
    overloads: dict[int, tuple[str, ...]] = {}
    maps = bytearray()
    for num, _, value in _fields(any_fields[2]):
        if num == 2:  # reference_map entry: key id, value Reference(name=1, overload_id=3)
            maps += _tagged(2, value)
            entry = dict(_grouped(value))
            ref_id = entry.get(1, [0])[0]
            ids = tuple(v.decode() for v in dict(_grouped(entry.get(2, [b""])[0])).get(3, []))
            if ids:
                overloads[ref_id] = ids
        elif num == 3:
            maps += _tagged(3, value)
        elif num == 4:
            root = _expr(value)
    if root is None:
        raise ValueError("serialized CheckedExpr holds no expression")
    return CheckedAst(root, overloads, bytes(maps))


def subprogram(ast: CheckedAst, node: Node) -> bytes:
    """A serialized CheckedExpr that evaluates `node` alone (free variables come from the activation)."""
    checked = ast.maps + _tagged(4, node.raw)
    return _tagged(1, _CHECKED_EXPR_URL) + _tagged(2, checked)


CHUNK_VAR = "@chunk"
ACCU_VAR = "@accu"
_FRESH_ID = 1 << 40  # above any id the checker gives


def chunk_program(ast: CheckedAst, comprehension: Node) -> bytes:
    """A serialized CheckedExpr running `comprehension`'s loop over the list `@chunk`, starting from the
    accumulator `@accu` and yielding the accumulator: a long range can then be walked a chunk at a time."""
    condition, step = comprehension.loop[2], comprehension.loop[3]
    body = (_tagged(1, comprehension.name.encode()) + _tagged(2, _ident(_FRESH_ID, CHUNK_VAR))
            + _tagged(3, comprehension.accu_var.encode()) + _tagged(4, _ident(_FRESH_ID + 1, ACCU_VAR))
            + _tagged(5, condition.raw) + _tagged(6, step.raw)
            + _tagged(7, _ident(_FRESH_ID + 2, comprehension.accu_var)))
    expr = _encode_varint(2 << 3) + _encode_varint(comprehension.id) + _tagged(9, body)
    return _tagged(1, _CHECKED_EXPR_URL) + _tagged(2, ast.maps + _tagged(4, expr))


def call_program(ast: CheckedAst, call: Node) -> tuple[bytes, tuple[str, ...]]:
    """A serialized CheckedExpr applying `call`'s function (same overloads) to arguments given as data, and the
    names of those arguments (target first): a call can then be applied to values computed apart."""
    names = (("@target",) if call.target is not None else ()) + tuple(f"@arg{i}" for i in range(len(call.args)))
    body = bytearray()
    for i, name in enumerate(names):
        ident = _ident(_FRESH_ID + 3 + i, name)
        body += _tagged(1, ident) if name == "@target" else _tagged(3, ident)
        if name == "@target":
            body += _tagged(2, call.name.encode())
    if call.target is None:
        body = bytearray(_tagged(2, call.name.encode())) + body
    expr = _encode_varint(2 << 3) + _encode_varint(call.id) + _tagged(6, bytes(body))
    return _tagged(1, _CHECKED_EXPR_URL) + _tagged(2, ast.maps + _tagged(4, expr)), names


def _ident(node_id: int, name: str) -> bytes:
    return _encode_varint(2 << 3) + _encode_varint(node_id) + _tagged(4, _tagged(1, name.encode()))


def _expr(raw: bytes) -> Node:
    node_id, kind, body = 0, "", b""
    for num, _, value in _fields(raw):
        if num == 2:
            node_id = _signed(value)
        elif num in _KINDS:
            kind, body = _KINDS[num], value
    parts = _grouped(body)
    if kind == "const":
        return Node(node_id, kind, raw, value=_constant(body))
    if kind == "ident":
        return Node(node_id, kind, raw, name=_text(parts, 1))
    if kind == "select":
        return Node(node_id, kind, raw, name=_text(parts, 2), target=_expr(parts[1][0]) if 1 in parts else None,
                    test_only=bool(parts.get(3, [0])[0]))
    if kind == "call":
        return Node(node_id, kind, raw, name=_text(parts, 2), target=_expr(parts[1][0]) if 1 in parts else None,
                    args=tuple(_expr(a) for a in parts.get(3, [])))
    if kind == "list":
        return Node(node_id, kind, raw, args=tuple(_expr(e) for e in parts.get(1, [])))
    if kind == "map":
        keys, values = [], []
        for entry in parts.get(2, []):
            fields = _grouped(entry)
            key = fields[3][0] if 3 in fields else None
            keys.append(_expr(key) if key is not None else Node(0, "const", b"", value=_text(fields, 2)))
            values.append(_expr(fields[4][0]))
        return Node(node_id, kind, raw, keys=tuple(keys), args=tuple(values))
    if kind == "comprehension":
        loop = tuple(_expr(parts[n][0]) if n in parts else Node(0, "const", b"") for n in (2, 4, 5, 6, 7))
        return Node(node_id, kind, raw, name=_text(parts, 1), accu_var=_text(parts, 3), loop=loop)
    return Node(node_id, kind or "unknown", raw)


def _constant(body: bytes) -> Any:
    for num, _, value in _fields(body):
        if num == 1:
            return None
        if num == 2:
            return bool(value)
        if num == 3:
            return _signed(value)
        if num == 4:
            return value
        if num == 5:
            return struct.unpack("<d", value)[0]
        if num == 6:
            return value.decode("utf-8")
        if num == 7:
            return bytes(value)
    return None


def _text(parts: dict[int, list[Any]], num: int) -> str:
    values = parts.get(num)
    return values[0].decode("utf-8") if values else ""


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _grouped(buf: bytes) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for num, _, value in _fields(buf):
        out.setdefault(num, []).append(value)
    return out


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one protobuf message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield num, wire, value


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _tagged(num: int, payload: bytes) -> bytes:
    """A length-delimited field, encoded."""
    return _encode_varint(num << 3 | 2) + _encode_varint(len(payload)) + payload


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
