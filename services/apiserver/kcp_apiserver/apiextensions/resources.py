"""Resource descriptors built from a CustomResourceDefinition, one per served version.

Compiled schemas and printer columns are shared between CRDs with the same
content, so ten thousand logical clusters defining the same CRD hold one
compiled schema between them.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from kcp_apiserver.apiextensions.celrules import compile_rules
from kcp_apiserver.apiextensions.customtypeschema import CustomTypeSchema
from kcp_apiserver.apiextensions.imported import imported_kube_strategy, other_version_resources
from kcp_apiserver.registry.builtin.workloads import kube_columns
from kcp_apiserver.registry.resource import Column, Obj, Resource
from kcp_apiserver.registry.strategy import FunctionStrategy
from kcp_apiserver.registry.tables import AGE, NAME, human_duration, parse_time
from kcpcommon import patchmeta
from kcpcommon.kubetypes import is_imported_kube_type

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


@dataclass(frozen=True)
class ScaleSpec:
    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str = ""


@dataclass(frozen=True)
class CompiledSchema:
    """What serving one version's schema needs, built once per distinct schema content."""

    digest: str  # tells two CRDs' schemas apart where the schema itself is not compared
    type_schema: CustomTypeSchema  # walk, prune, default, validate (schema and CEL rules)
    annotated: Obj | None = None  # an imported kube type's schema with its patch strategies (read-only, shared)


@functools.lru_cache(maxsize=4096)
def _compile(schema_json: bytes, patch_json: bytes) -> CompiledSchema:
    from kcp_apiserver.apiextensions.compiledschema import compile_schema

    schema = orjson.loads(schema_json)
    meta = orjson.loads(patch_json)
    walked = patchmeta.annotated(schema, meta) if meta else None
    type_schema = CustomTypeSchema(schema, compile_schema(schema), compile_rules(schema), walked=walked)
    return CompiledSchema(hashlib.sha256(schema_json + patch_json).hexdigest()[:16], type_schema, walked)


def compiled_schema(schema: Obj, patch_meta: patchmeta.PatchMeta | None = None) -> CompiledSchema:
    """Shared by every CRD (in any logical cluster) whose schema (and patch strategies) have the same content."""
    return _compile(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS),
                    orjson.dumps(patch_meta or {}, option=orjson.OPT_SORT_KEYS))


def _format_cell(value: Any, type_: str) -> Any:
    if value is None:
        return None
    if type_ == "date":
        stamp = parse_time(value) if isinstance(value, str) else None
        return human_duration((datetime.now(UTC) - stamp).total_seconds()) if stamp else str(value)
    if type_ == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if type_ == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


@functools.lru_cache(maxsize=4096)
def printer_column(name: str, type_: str, json_path: str, description: str, priority: int, fmt: str) -> Column:
    from kcp_apiserver.apimachinery.jsonpath import compile_jsonpath

    path = compile_jsonpath(json_path)

    def cell(obj: Obj) -> Any:
        found = path.find(obj)
        if not found:
            return None
        return _format_cell(found[0], type_)

    # kube shows dates as ages; the Table column stays typed as the CRD declares
    return Column(name, type_, cell, description, priority, fmt)


def _columns(version: Obj, spec: Obj) -> tuple[Column, ...]:
    columns = version.get("additionalPrinterColumns")
    if columns is None:
        columns = spec.get("additionalPrinterColumns")
    if not columns:
        return kube_columns(spec["group"], spec["names"]["kind"]) or (NAME, AGE)
    out = [NAME]
    for col in columns:
        out.append(printer_column(col["name"], col.get("type", "string"), col["jsonPath"],
                                  col.get("description", ""), int(col.get("priority", 0)), col.get("format", "")))
    return tuple(out)


def condition(crd: Obj, type_: str) -> Obj | None:
    status = crd.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def is_established(crd: Obj) -> bool:
    cond = condition(crd, "Established")
    return cond is not None and cond.get("status") == "True"


def storage_version(crd: Obj) -> str:
    for version in crd["spec"].get("versions") or []:
        if version.get("storage"):
            return str(version["name"])
    return str(crd["spec"]["versions"][0]["name"])


def version_schema(version: Obj) -> Obj:
    """The schema a served version validates with (without one, every field is kept)."""
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    return schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}  # type: ignore[no-any-return]


def kube_patch_meta(crd: Obj) -> patchmeta.PatchMeta | None:
    """The patch strategies of an imported kube type (its CRD's annotation); None for any other CRD.

    Only CRDs the cluster controller imported as kube's own types are read: a tenant's CRD stays a custom
    resource whatever it is annotated with."""
    if not is_imported_kube_type(crd):
        return None
    return patchmeta.decode(((crd.get("metadata") or {}).get("annotations") or {}).get(patchmeta.PATCH_ANNOTATION))


def resources_for(crd: Obj) -> list[Resource]:
    """One Resource per served version of an established CRD (accepted names are what is served), and one
    per version kube also serves an imported kube type at.

    An imported kube type publishes its schema with its patch strategies back on the fields, as kube's
    OpenAPI has them (kubectl apply reads them there to compute its patch)."""
    spec = crd["spec"]
    patch_meta = kube_patch_meta(crd)
    names = (crd.get("status") or {}).get("acceptedNames") or spec["names"]
    group = spec["group"]
    stored = storage_version(crd)
    out = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        schema = version_schema(version)
        compiled = compiled_schema(schema, patch_meta)
        subresources = version.get("subresources") or spec.get("subresources") or {}
        scale = subresources.get("scale")
        warning = None
        if version.get("deprecated"):
            warning = version.get("deprecationWarning") or f"{group}/{version['name']} {names['kind']} is deprecated"
        out.append(Resource(
            group=group, version=version["name"], kind=names["kind"], plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(), namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            has_status="status" in subresources, tracks_generation=True,
            strategy=(imported_kube_strategy(crd, version["name"], compiled.type_schema)
                      or FunctionStrategy(validate=compiled.type_schema.validate)),
            columns=_columns(version, spec),
            schema=compiled.annotated if compiled.annotated is not None else schema,
            schema_digest=compiled.digest, type_schema=compiled.type_schema, kube_type=patch_meta is not None,
            storage_version=stored, deprecation_warning=warning,
            scale=ScaleSpec(scale["specReplicasPath"], scale["statusReplicasPath"],
                            scale.get("labelSelectorPath", "")) if scale else None,
            list_kind_name=names.get("listKind") or f"{names['kind']}List",
        ))
    return out + other_version_resources(crd, out)  # after the CRD's own: discovery prefers the imported version
