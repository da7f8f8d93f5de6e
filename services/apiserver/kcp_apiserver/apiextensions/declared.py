"""kcp's own types declared as kcp declares them (CRDs of its own) and served as built-ins in every logical
cluster: declaring them as CRD specs reuses the structural-schema validation, pruning, printer columns and
OpenAPI that custom resources already get. The tenancy and apis packages declare theirs with these."""

from __future__ import annotations

from typing import Any

STRING: dict[str, Any] = {"type": "string"}
CONDITIONS: dict[str, Any] = {"type": "array", "items": {
    "type": "object", "required": ["type", "status"],
    "properties": {k: STRING for k in ("type", "status", "reason", "message", "lastTransitionTime", "severity")}}}


def declared_crd(group: str, kind: str, plural: str, schema: dict[str, Any], columns: list[dict[str, Any]],
                 short_names: list[str]) -> dict[str, Any]:
    """A cluster-scoped v1alpha1 type with a status subresource, in kcp's category, as an accepted CRD."""
    names = {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List",
             "shortNames": short_names, "categories": ["kcp"]}
    return {"metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Cluster", "names": names,
                     "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}},
                                   "additionalPrinterColumns": columns}]},
            "status": {"acceptedNames": names}}


def object_schema(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """An object with the given spec and status properties."""
    return {"type": "object", "properties": {
        "apiVersion": STRING, "kind": STRING, "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": spec}, "status": {"type": "object", "properties": status}}}
