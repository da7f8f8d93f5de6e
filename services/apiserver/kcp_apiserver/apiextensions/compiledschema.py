"""A CRD version's structural schema compiled once: validation, pruning and defaulting of its objects.

Behaviour and wording follow kube-apiserver's apiextensions-apiserver as of v1.32: `validate` is
`valuevalidation` (with `embeddedresource` and the list-type pass), `prune` is `structuralpruning`,
`apply_defaults` is `structuraldefaulting`. The root's apiVersion, kind and metadata are left to the
server's own ObjectMeta handling.
"""

from __future__ import annotations

from kcp_apiserver.apiextensions.structuraldefaulting import apply_structural_defaults
from kcp_apiserver.apiextensions.structuralpruning import prune_structural
from kcp_apiserver.apiextensions.valueerrors import Obj, ValidationErrors
from kcp_apiserver.apiextensions.valuevalidation import compile_node
from kcp_apiserver.apimachinery.status import Cause


class CompiledSchema:
    """A CRD version's openAPIV3Schema, compiled once: callers cache one per schema."""

    __slots__ = ("_root", "schema")

    def __init__(self, schema: Obj) -> None:
        self.schema = schema
        self._root = compile_node(schema, True, root=True)

    @property
    def has_defaults(self) -> bool:
        """Whether any structural node has a default (reads then need defaulting too)."""
        return self._root.defaults_below

    def validate(self, obj: Obj) -> list[Cause]:
        """Every schema violation of obj, as kube's ValidateCustomResource and the strategy's passes word them."""
        ctx = ValidationErrors()
        if type(obj) not in self._root.fast:
            self._root.validate(obj, None, ctx)
        errs = ctx.errs
        if len(errs) > 1:  # kube-openapi's Result drops repeated messages
            seen: set[tuple[str, str]] = set()
            unique: list[Cause] = []
            for c in errs:
                key = (c.field, c.message)
                if key not in seen:
                    seen.add(key)
                    unique.append(c)
            errs = unique
        return errs + ctx.meta + ctx.lists

    def prune(self, obj: Obj) -> list[str]:
        """Drop fields the schema does not know, in place; return their paths, sorted, as kube reports them.

        Non-nullable nulls without a default are dropped too (not reported), as kube's decoder does.
        """
        out: list[str] = []
        if type(obj) is dict:
            prune_structural(obj, self._root, "", out, root=True)
        out.sort()
        return out

    def apply_defaults(self, obj: Obj) -> None:
        """Apply the schema's defaults in place (after pruning, as kube does)."""
        if self._root.defaults_below and type(obj) is dict:
            apply_structural_defaults(obj, self._root)


def compile_schema(openapi_v3_schema: Obj) -> CompiledSchema:
    """Compile a CRD version's openAPIV3Schema (a structural schema) into validator, pruner and defaulter."""
    return CompiledSchema(openapi_v3_schema if isinstance(openapi_v3_schema, dict) else {})
