"""Comprehensions driven from Python, for the rules cel-expr-python's iteration budget stops.

cel-expr-python 0.1.3 compiles in a budget of 10,000 comprehension iterations per evaluation, with no
option to raise it (`NewEnv` and its YAML config have no limits; the `Iteration budget exceeded` error
comes from the C++ runtime options the binding fixes), so `self.l.all(a, self.l.all(b, ...))` over 100
items fails although kube runs it (60,603 of kube's cost units, where kube allows 1,000,000 a call).
Other runtimes were measured and set aside: cel-python (pure Python) took 2.5 s for that rule, the Rust
binding (common-expression-language) has no budget at all and different error texts; neither counts
kube's cost. So the cost is bounded beforehand by kube's model (`celcost`) and, when the C++ runtime
runs out of iterations, the rule is run again here: comprehensions, `&&`, `||`, `!` and `?:` are walked
in Python with CEL's semantics (errors absorbed by a deciding false/true), and every other subtree runs
in the C++ runtime as its own program (`celast.subprogram`), with the iteration variables as data, so
each gets a budget of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apiextensions.celast import CheckedAst, Node, subprogram

ITERATION_BUDGET_EXCEEDED = "Iteration budget exceeded"


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

    def run(self, data: dict[str, Any]) -> Any:
        """The expression's value, or a CelError; called once the whole expression ran out of iterations."""
        return self._eval(self._ast.root, data, native_first=False)

    def _eval(self, node: Node, scope: dict[str, Any], native_first: bool = True) -> Any:
        """A subtree's value: in the C++ runtime when its budget suffices, else split further here."""
        if node.kind == "ident" and node.name in scope:
            return scope[node.name]
        if native_first:
            value = self._native(node, scope)
            if not (isinstance(value, CelError) and ITERATION_BUDGET_EXCEEDED in value.message):
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
        return value if native_first else self._native(node, scope)

    def _logical(self, node: Node, scope: dict[str, Any]) -> Any:
        """CEL's commutative && and ||: the deciding value wins over an error on either side."""
        decisive = node.name == "_||_"
        left = self._eval(node.args[0], scope)
        if left is decisive:
            return decisive
        right = self._eval(node.args[1], scope)
        if right is decisive:
            return decisive
        for value in (left, right):
            if not isinstance(value, bool):
                return value if isinstance(value, CelError) else _no_overload(value, node.name)
        return not decisive

    def _comprehension(self, node: Node, scope: dict[str, Any]) -> Any:
        iter_range, init, condition, step, result = node.loop
        values = self._eval(iter_range, scope)
        if isinstance(values, CelError):
            return values
        if isinstance(values, dict):
            values = list(values)
        elif not isinstance(values, list):
            return CelError(f"expression of type '{type(values).__name__}' cannot be range of a comprehension")
        accumulator = self._eval(init, scope)
        for value in values:
            inner = {**scope, node.name: value, node.accu_var: accumulator}
            if self._eval(condition, inner) is False:
                break
            accumulator = self._eval(step, inner)
        return self._eval(result, {**scope, node.accu_var: accumulator})

    def _native(self, node: Node, scope: dict[str, Any]) -> Any:
        """A subtree the C++ runtime runs alone; an error bound to a name it reads is its result."""
        if any(isinstance(v, CelError) for v in scope.values()) and (error := _error_read(node, scope)):
            return error
        program = self._programs.get(node.id)
        if program is None:
            program = self._programs[node.id] = self._env.deserialize(subprogram(self._ast, node))
        try:
            result = program.eval(data={k: v for k, v in scope.items() if not isinstance(v, CelError)})
        except Exception as exc:  # the C++ runtime raises for what it cannot carry as a value
            return CelError(str(exc))
        value = result.plain_value()
        return CelError(str(value)) if result.type().name() == "ERROR" else value


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
