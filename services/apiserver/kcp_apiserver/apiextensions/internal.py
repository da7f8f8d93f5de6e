"""The internal CRD view kube validates (not v1).

kube's v1 -> internal conversion moves per-version schemas, subresources and printer columns that
are identical in every version to the top level, so a single-version CRD (or one whose versions share
a schema) reports schema problems at `spec.validation.openAPIV3Schema...`, and otherwise at
`spec.versions[i].schema.openAPIV3Schema...`. The conversion webhook moves to its internal path
(`spec.conversion.webhookClientConfig`). Reproducing that view makes the paths match kube's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apiextensions.fields import Obj, get, get_str


@dataclass
class InternalVersion:
    name: str
    served: bool
    storage: bool
    deprecated: bool
    deprecation_warning: str | None
    schema: Obj | None          # CustomResourceValidation, unless hoisted to the spec
    subresources: Obj | None
    columns: list[Obj]
    selectable: list[Obj]


@dataclass
class InternalSpec:
    group: str
    scope: str
    names: Obj
    versions: list[InternalVersion]
    version: str
    validation: Obj | None
    subresources: Obj | None
    columns: list[Obj]
    selectable: list[Obj]
    conversion: Obj | None      # internal form: strategy, webhookClientConfig, conversionReviewVersions
    preserve_unknown_fields: bool | None


def internal_spec(spec: Any) -> InternalSpec:
    """Convert_v1_CustomResourceDefinitionSpec_To_apiextensions: hoist fields identical in every version."""
    raw = [v for v in (get(spec, "versions") or []) if isinstance(v, dict)]
    versions = [InternalVersion(get_str(v, "name"), v.get("served") is True, v.get("storage") is True,
                         v.get("deprecated") is True, get(v, "deprecationWarning"), get(v, "schema"),
                         get(v, "subresources"), list(get(v, "additionalPrinterColumns") or []),
                         list(get(v, "selectableFields") or [])) for v in raw]
    validation = subresources = None
    columns: list[Obj] = []
    selectable: list[Obj] = []
    if versions:
        first = versions[0]
        same_schema = all(v.schema == first.schema for v in versions)
        same_sub = all(v.subresources == first.subresources for v in versions)
        same_cols = all(v.columns == first.columns for v in versions)
        same_sel = all(v.selectable == first.selectable for v in versions)
        if same_schema:
            validation = first.schema
        if same_sub:
            subresources = first.subresources
        if same_cols:
            columns = first.columns
        if same_schema and same_sel:
            selectable = first.selectable
        for v in versions:
            if same_schema:
                v.schema = None
            if same_sub:
                v.subresources = None
            if same_cols:
                v.columns = []
            if same_schema and same_sel:
                v.selectable = []
    conversion = get(spec, "conversion")
    internal_conversion = None
    if isinstance(conversion, dict):
        webhook = get(conversion, "webhook")
        internal_conversion = {"strategy": get_str(conversion, "strategy"),
                               "webhookClientConfig": get(webhook, "clientConfig"),
                               "conversionReviewVersions": get(webhook, "conversionReviewVersions")}
    names = get(spec, "names")
    return InternalSpec(get_str(spec, "group"), get_str(spec, "scope"), names if isinstance(names, dict) else {}, versions,
                 versions[0].name if versions else "", validation, subresources, columns, selectable,
                 internal_conversion, get(spec, "preserveUnknownFields"))
