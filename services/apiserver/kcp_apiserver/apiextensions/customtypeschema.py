"""A custom resource's TypeSchema: its CRD version's structural schema behind the one schema interface."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kcp_apiserver.apiextensions.celrules import evaluate
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.builtintypeschema import OpenAPINodes
from kcp_apiserver.registry.typeschema import Obj, RootDelegate, SchemaNode

if TYPE_CHECKING:
    from kcp_apiserver.apiextensions.compiledschema import CompiledSchema

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class CustomTypeSchema(RootDelegate):
    """Walks the structural schema; prunes, defaults and validates with its compiled form and CEL rules.

    As in the OpenAPI kube publishes for a custom resource, `metadata` at the root is ObjectMeta's
    schema (labels granular, finalizers a set, ownerReferences keyed by uid), whatever the CRD says.
    Built once per distinct schema and shared by every CRD that has it, in any logical cluster.
    """

    def __init__(self, schema: Obj, compiled: CompiledSchema, rules: Any, *, walked: Obj | None = None) -> None:
        """`walked`: the schema field paths walk when it is not `schema` itself (an imported kube type's, with the
        patch strategies its CRD carries in an annotation)."""
        self.root = OpenAPINodes({}, structural=True).node(walked if walked is not None else schema)
        self._compiled = compiled
        self._rules = rules  # celrules tree, or None without x-kubernetes-validations

    @property
    def has_defaults(self) -> bool:
        return self._compiled.has_defaults

    def field(self, name: str) -> SchemaNode | None:
        if name == "metadata":
            return builtinschemas.type_schema(OBJECT_META).root
        return super().field(name)

    def decode_errors(self, obj: Obj) -> list[str]:
        """None: custom resources decode into plain maps; validation reports values of the wrong type."""
        return []

    def prune(self, obj: Obj) -> list[str]:
        return self._compiled.prune(obj)

    def default(self, obj: Obj) -> None:
        self._compiled.apply_defaults(obj)

    def validate(self, obj: Obj, old: Obj | None) -> list[Cause]:
        """Schema validation, then (on an object the schema accepts) the CEL rules, with the old object on update."""
        causes = self._compiled.validate(obj)
        if self._rules is not None and not causes:
            causes = evaluate(self._rules, obj, old)
        return causes
