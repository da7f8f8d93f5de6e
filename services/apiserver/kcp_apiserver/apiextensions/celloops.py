"""Comprehensions driven from Python, for the rules cel-expr-python's iteration budget stops.

cel-expr-python 0.1.3 compiles in a budget of 10,000 comprehension iterations per evaluation, with no
option to raise it (`NewEnv` and its YAML config have no limits; the `Iteration budget exceeded` error
comes from the C++ runtime options the binding fixes), so `self.l.all(a, self.l.all(b, ...))` over 100
items fails although kube runs it (60,603 of kube's cost units, where kube allows 1,000,000 a call).
Other runtimes were measured and set aside: cel-python (pure Python) took 2.5 s for that rule, the Rust
binding (common-expression-language) has no budget at all and different error texts; neither counts
kube's cost. So the cost is bounded beforehand by kube's model (`celcost`) and, when the C++ runtime
runs out of iterations, the rule is run again here, split into programs that each fit the budget: a
comprehension's range is walked in chunks (`celast.chunk_program`, halved until a chunk fits, down to
one element whose body is split in turn), `&&`, `||`, `!` and `?:` above comprehensions are decided
here with CEL's semantics (an error loses to a deciding false/true), and every other subtree runs in
the C++ runtime as its own program (`celast.subprogram`) with the iteration variables as data. A rule
within kube's per-call cost (at most ~170,000 iterations) so costs tens of C++ calls, not one per
element: 160,000 elements of `all()` take ~0.1 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apiextensions.celast import (
    ACCU_VAR,
    CHUNK_VAR,
    CheckedAst,
    Node,
    call_program,
    chunk_program,
    subprogram,
)

ITERATION_BUDGET_EXCEEDED = "Iteration budget exceeded"
_FIRST_CHUNK = 8192  # elements; the C++ runtime allows 10,000 iterations, nested ones included
# map() and filter() append to their result list by copying it in the C++ runtime, quadratic in the length
# (map over 8,000 items: 7 s), so they are built in chunks this long and joined here (~0.2 s for 30,000)
_LIST_CHUNK = 64


@dataclass(frozen=True, slots=True)
class CelError:
    """An evaluation error, carried as a value as CEL does."""

    message: str


class Driver:
    """Runs one compiled expression with its comprehensions looped in Python."""

    def __init__(self, env: Any, ast: CheckedAst) -> None:
        self._env = env
        self._ast = ast
        self._programs: dict[int, Any] = {}
        self._chunks: dict[int, Any] = {}
        self._calls: dict[int, tuple[Any, tuple[str, ...]]] = {}
        self._builds = _list_builders(ast.root)

    def run(self, data: dict[str, Any]) -> Any:
        """The expression's value, or a CelError; called once the whole expression ran out of iterations."""
        return self._eval(self._ast.root, data, native_first=False)

    def _eval(self, node: Node, scope: dict[str, Any], native_first: bool = True) -> Any:
        """A subtree's value: in the C++ runtime when its budget suffices, else split further here."""
        if node.kind == "ident" and node.name in scope:
            return scope[node.name]
        tried = native_first and node.id not in self._builds
        if tried:
            value = self._native(node, scope)
            if not _out_of_iterations(value):
                return value
        if node.kind == "comprehension":
            return self._comprehension(node, scope)
        if node.kind == "call" and node.target is None:
            if node.name in ("_&&_", "_||_") and len(node.args) == 2:
                return self._logical(node, scope)
            if node.name == "!_" and len(node.args) == 1:
                value = self._eval(node.args[0], scope)
                return (not value) if isinstance(value, bool) else _no_overload(value, "!_")
            if node.name == "@not_strictly_false" and len(node.args) == 1:
                value = self._eval(node.args[0], scope)
                return value if isinstance(value, bool) else True
            if node.name == "_?_:_" and len(node.args) == 3:
                condition = self._eval(node.args[0], scope)
                if not isinstance(condition, bool):
                    return _no_overload(condition, "_?_:_")
                return self._eval(node.args[1] if condition else node.args[2], scope)
            return self._call(node, scope)
        if node.kind == "call":
            return self._call(node, scope)
        return value if tried else self._native(node, scope)  # a subtree that cannot be split further

    def _call(self, node: Node, scope: dict[str, Any]) -> Any:
        """A function over comprehensions: its arguments computed apart, then the function applied to their
        values (CEL functions other than &&, || and ?: are strict: an error argument is the result)."""
        operands = [self._eval(n, scope) for n in (node.target, *node.args) if n is not None]
        for value in operands:
            if isinstance(value, CelError):
                return value
        if node.id not in self._calls:
            serialized, names = call_program(self._ast, node)
            self._calls[node.id] = (self._env.deserialize(serialized), names)
        program, names = self._calls[node.id]
        return _outcome(program, dict(zip(names, operands, strict=True)))

    def _logical(self, node: Node, scope: dict[str, Any]) -> Any:
        left = self._eval(node.args[0], scope)
        if left is (node.name == "_||_"):
            return left
        return _decide(node.name, left, self._eval(node.args[1], scope))

    def _comprehension(self, node: Node, scope: dict[str, Any]) -> Any:
        """The loop over chunks of the range; all() and exists() start each chunk afresh and combine the
        chunks' answers with && or ||, the others carry their accumulator from chunk to chunk."""
        iter_range, init, condition, step, result = node.loop
        values = self._eval(iter_range, scope)
        if isinstance(values, CelError):
            return values
        if isinstance(values, dict):
            values = list(values)
        elif not isinstance(values, list):
            return CelError(f"expression of type '{type(values).__name__}' cannot be range of a comprehension")
        start = self._eval(init, scope)
        if isinstance(start, CelError) or _error_read(node, scope) is not None:
            return start if isinstance(start, CelError) else _error_read(node, scope)
        logical = step.kind == "call" and step.name in ("_&&_", "_||_") and bool(step.args) \
            and step.args[0].kind == "ident" and step.args[0].name == node.accu_var
        builds = _builds_list(node)
        accumulator, i = start, 0
        # the whole range already ran out of iterations, unless this builds a list (never run whole)
        size = 1 if step.id in self._builds else _LIST_CHUNK if builds else min(_FIRST_CHUNK, len(values) // 2 or 1)
        combined: Any = None
        while i < len(values):
            chunk = values[i:i + size]
            outcome = self._run_chunk(node, scope, chunk, start if logical or builds else accumulator)
            if outcome is None:  # over the budget: a smaller chunk, down to one element split further
                if size > 1:
                    size //= 2
                    continue
                outcome = self._element(node, scope, chunk[0], start if logical or builds else accumulator)
            i += len(chunk)
            if logical:
                combined = outcome if combined is None else _decide(step.name, combined, outcome)
                if combined is (step.name == "_||_"):
                    break
                continue
            if isinstance(outcome, CelError):  # map, filter, exists_one: strict in their accumulator
                return outcome
            accumulator = accumulator + outcome if builds and isinstance(outcome, list) else outcome
            if self._eval(condition, {**scope, node.accu_var: accumulator}) is False:
                break
        final = (start if combined is None else combined) if logical else accumulator
        return self._eval(result, {**scope, node.accu_var: final})

    def _run_chunk(self, node: Node, scope: dict[str, Any], chunk: list[Any], accumulator: Any) -> Any:
        """The accumulator after `chunk`, a CelError, or None when the chunk ran out of iterations."""
        program = self._chunks.get(node.id)
        if program is None:
            program = self._chunks[node.id] = self._env.deserialize(chunk_program(self._ast, node))
        outcome = _outcome(program, {**_values(scope), CHUNK_VAR: chunk, ACCU_VAR: accumulator})
        return None if _out_of_iterations(outcome) else outcome

    def _element(self, node: Node, scope: dict[str, Any], value: Any, accumulator: Any) -> Any:
        """One step of the loop, its body split further: for an element whose body alone is over the budget."""
        _, _, condition, step, _ = node.loop
        inner = {**scope, node.name: value, node.accu_var: accumulator}
        if self._eval(condition, inner) is False:
            return accumulator
        return self._eval(step, inner)

    def _native(self, node: Node, scope: dict[str, Any]) -> Any:
        """A subtree the C++ runtime runs alone; an error bound to a name it reads is its result."""
        if any(isinstance(v, CelError) for v in scope.values()) and (error := _error_read(node, scope)):
            return error
        program = self._programs.get(node.id)
        if program is None:
            program = self._programs[node.id] = self._env.deserialize(subprogram(self._ast, node))
        return _outcome(program, _values(scope))


def _outcome(program: Any, data: dict[str, Any]) -> Any:
    """A C++ program's value, or a CelError (CEL returns errors as values; the runtime raises a few)."""
    try:
        result = program.eval(data=data)
    except Exception as exc:
        return CelError(str(exc))
    value = result.plain_value()
    return CelError(str(value)) if result.type().name() == "ERROR" else value


def _out_of_iterations(value: Any) -> bool:
    return isinstance(value, CelError) and ITERATION_BUDGET_EXCEEDED in value.message


def _values(scope: dict[str, Any]) -> dict[str, Any]:
    """The bindings the C++ runtime can take: errors are not values it accepts."""
    return {k: v for k, v in scope.items() if not isinstance(v, CelError)}


def builds_lists(ast: CheckedAst) -> bool:
    """Whether an expression holds a map() or filter(), which only a Driver runs in linear time."""
    return ast.root.id in _list_builders(ast.root)


def _builds_list(node: Node) -> bool:
    """map() and filter(): comprehensions whose accumulator starts as an empty list."""
    return node.kind == "comprehension" and node.loop[1].kind == "list" and not node.loop[1].args


def _list_builders(root: Node) -> set[int]:
    """The ids of the nodes that hold a map() or filter(), which the C++ runtime must never run whole."""
    found: set[int] = set()

    def visit(node: Node) -> bool:
        children = [n for n in (node.target, *node.args, *node.keys, *node.loop) if n is not None]
        holds = any([visit(child) for child in children]) or _builds_list(node)
        if holds:
            found.add(node.id)
        return holds

    visit(root)
    return found


def _decide(function: str, left: Any, right: Any) -> Any:
    """CEL's commutative && and ||: the deciding value wins over an error on either side."""
    decisive = function == "_||_"
    if left is decisive or right is decisive:
        return decisive
    for value in (left, right):
        if not isinstance(value, bool):
            return value if isinstance(value, CelError) else _no_overload(value, function)
    return not decisive


def _error_read(node: Node, scope: dict[str, Any]) -> CelError | None:
    """The error bound to a name the subtree reads: CEL functions are strict, so it is the subtree's value."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.kind == "ident" and isinstance(found := scope.get(current.name), CelError):
            return found
        stack += [n for n in (current.target, *current.args, *current.keys, *current.loop) if n is not None]
    return None


def _no_overload(value: Any, function: str) -> CelError:
    return value if isinstance(value, CelError) else CelError(f"No matching overloads found : {function}")
