"""CustomResourceDefinition (apiextensions.k8s.io/v1) defaulting and validation, as kube-apiserver does it.

Clients and conformance-style tests compare cause fields and messages, so the rules, field paths and
wording follow k8s.io/apiextensions-apiserver (validation.ValidateCustomResourceDefinition[Update],
schema.ValidateStructural, defaulting.ValidateDefaults).

kube validates its *internal* CRD type, not v1. The v1 -> internal conversion moves per-version
schemas, subresources and printer columns that are identical in every version to the top level, so
a single-version CRD (or one whose versions share a schema) reports schema problems at
`spec.validation.openAPIV3Schema...`, and otherwise at `spec.versions[i].schema.openAPIV3Schema...`.
The conversion webhook is reported at its internal path (`spec.conversion.webhookClientConfig`).
This module reproduces that view so the paths match what kubectl users see from kube.

x-kubernetes-validations (CEL) rules must compile (celrules); they run on every write of an object.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from kcp_apiserver.apiextensions.celrules import rule_errors
from kcp_apiserver.apimachinery.jsonvalues import json_equal, json_type
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import (
    forbidden,
    invalid,
    max_len_error,
    regex_error,
    render_value,
    required,
    type_invalid,
    validate_dns_subdomain,
)

Obj = dict[str, Any]

CLUSTER_SCOPED = "Cluster"
NAMESPACE_SCOPED = "Namespaced"
NONE_CONVERTER = "None"
WEBHOOK_CONVERTER = "Webhook"
API_APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
# kcp serves kube's own workload APIs as CRDs imported from physical clusters (apps/v1 Deployments...),
# so these built-in group names are allowed although they have no dot.
KUBE_GROUPS_WITHOUT_DOTS = frozenset({"apps", "batch", "autoscaling", "policy", "extensions"})
MAX_SELECTABLE_FIELDS = 8
MAX_SCHEMA_DEPTH = 200  # not kube's: keeps a hostile schema from exhausting Python's recursion limit

PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")
VALIDATION_RULE_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
META_FIELDS = ("metadata", "kind", "apiVersion")

DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                      "alphabetic character, and end with an alphanumeric character")
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)


# -- kube's field.Error kinds that validation.py has no builder for ----------------------------

def not_supported(path: str, value: Any, supported: list[str] | tuple[str, ...]) -> Cause:
    quoted = ", ".join(f'"{s}"' for s in supported)
    return Cause("FieldValueNotSupported", f"Unsupported value: {render_value(value)}: supported values: {quoted}",
                 path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {render_value(value)}", path)


def too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", path)


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be longer than {limit}", path)


def validate_dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: versions, plurals, singulars, short names and categories."""
    errs = []
    if len(value.encode("utf-8", "surrogatepass")) > 63:
        errs.append(max_len_error(63))
    if _DNS1035_LABEL_RE.fullmatch(value) is None:
        errs.append(regex_error(_DNS1035_LABEL_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def _child(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def _key(path: str, key: Any) -> str:
    return f"{path}[{key}]"


def _get(obj: Any, key: str) -> Any:
    """A field as Go decodes it: absent and JSON null are the same zero value."""
    return obj.get(key) if isinstance(obj, dict) else None


def _s(obj: Any, key: str) -> str:
    value = _get(obj, key)
    return value if isinstance(value, str) else ""


# -- defaulting ---------------------------------------------------------------------------------

def default_crd(crd: Obj) -> None:
    """kube's v1 defaults (SetDefaults_CustomResourceDefinition), applied in place.

    Also fills the fields Go always serializes (a version's served/storage), so what is stored and
    returned looks like kube's answer.
    """
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if not names.get("singular") and isinstance(kind, str):
            names["singular"] = kind.lower()
        if not names.get("listKind") and isinstance(kind, str) and kind:
            names["listKind"] = kind + "List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": NONE_CONVERTER}
    service = _get(_get(_get(spec.get("conversion"), "webhook"), "clientConfig"), "service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443
    versions = spec.get("versions")
    if isinstance(versions, list):
        for version in versions:
            if isinstance(version, dict):
                version.setdefault("served", False)
                version.setdefault("storage", False)
                if version["served"] is None:
                    version["served"] = False
                if version["storage"] is None:
                    version["storage"] = False
    storage = next((v["name"] for v in versions or [] if isinstance(v, dict) and v.get("storage") is True
                    and isinstance(v.get("name"), str)), None) if isinstance(versions, list) else None
    if storage is not None:
        if crd.get("status") is None:
            crd["status"] = {}
        status = crd["status"]
        if isinstance(status, dict) and not status.get("storedVersions"):
            status["storedVersions"] = [storage]


def stored_versions_after(crd: Obj, old: Obj | None) -> list[str]:
    """status.storedVersions after this write, as kube's CRD strategy keeps them.

    A create starts from nothing; an update keeps what was stored before. Every version marked
    storage is added, because objects may be written in it from now on. Versions are removed only
    by a status update (after a storage migration), never by a spec write.
    """
    base = _get(old, "status") if old is not None else None
    stored = [v for v in (_get(base, "storedVersions") or []) if isinstance(v, str)]
    for version in _get(crd.get("spec"), "versions") or []:
        name = _get(version, "name")
        if _get(version, "storage") is True and isinstance(name, str) and name not in stored:
            stored.append(name)
    return stored


# -- shape: what kube's decoder would reject before validation ----------------------------------

_EXPECT: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
    "integer": (lambda v: (isinstance(v, int) and not isinstance(v, bool))
                or (isinstance(v, float) and v.is_integer()), "an integer"),
    "number": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    "object": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "strings": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "objects": (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects"),
}


def _expect(obj: Any, key: str, kind: str, path: str, errs: list[Cause]) -> bool:
    """True when obj[key] is absent or of the JSON kind kube's Go type needs."""
    value = _get(obj, key)
    if value is None:
        return True
    ok, what = _EXPECT[kind]
    if ok(value):
        return True
    errs.append(type_invalid(_child(path, key), value, what))
    return False


def _fields(obj: Any, path: str, kinds: dict[str, str], errs: list[Cause]) -> None:
    for key, kind in kinds.items():
        _expect(obj, key, kind, path, errs)


_NAMES_SHAPE = {"plural": "string", "singular": "string", "kind": "string", "listKind": "string",
                "shortNames": "strings", "categories": "strings"}
_SCHEMA_SCALARS = {
    "id": "string", "$schema": "string", "$ref": "string", "description": "string", "type": "string",
    "format": "string", "title": "string", "pattern": "string", "x-kubernetes-list-type": "string",
    "x-kubernetes-map-type": "string", "maximum": "number", "minimum": "number", "multipleOf": "number",
    "exclusiveMaximum": "boolean", "exclusiveMinimum": "boolean", "uniqueItems": "boolean", "nullable": "boolean",
    "x-kubernetes-preserve-unknown-fields": "boolean", "x-kubernetes-embedded-resource": "boolean",
    "x-kubernetes-int-or-string": "boolean", "maxLength": "integer", "minLength": "integer",
    "maxItems": "integer", "minItems": "integer", "maxProperties": "integer", "minProperties": "integer",
    "enum": "list", "required": "strings", "x-kubernetes-list-map-keys": "strings", "externalDocs": "object",
}
_RULE_SHAPE = {"rule": "string", "message": "string", "messageExpression": "string", "reason": "string",
               "fieldPath": "string", "optionalOldSelf": "boolean"}


def _schema_shape(s: Any, path: str, errs: list[Cause], depth: int = 0) -> None:
    """JSONSchemaProps field types; recursion is bounded so a hostile schema cannot crash the server."""
    if not isinstance(s, dict):
        errs.append(type_invalid(path, s, "an object"))
        return
    if depth > MAX_SCHEMA_DEPTH:
        errs.append(invalid(path, "", f"must not be nested more than {MAX_SCHEMA_DEPTH} levels deep"))
        return
    _fields(s, path, _SCHEMA_SCALARS, errs)
    for key in ("not",):
        if _get(s, key) is not None:
            _schema_shape(s[key], _child(path, key), errs, depth + 1)
    for key in ("allOf", "anyOf", "oneOf"):
        if _expect(s, key, "list", path, errs):
            for i, sub in enumerate(_get(s, key) or []):
                _schema_shape(sub, _key(_child(path, key), i), errs, depth + 1)
    for key in ("properties", "patternProperties", "definitions"):
        if _expect(s, key, "object", path, errs):
            for name, sub in (_get(s, key) or {}).items():
                _schema_shape(sub, _key(_child(path, key), name), errs, depth + 1)
    for key in ("additionalProperties", "additionalItems"):
        value = _get(s, key)
        if isinstance(value, dict):
            _schema_shape(value, _child(path, key), errs, depth + 1)
        elif value is not None and not isinstance(value, bool):
            errs.append(type_invalid(_child(path, key), value, "an object or a boolean"))
    items = _get(s, "items")
    if isinstance(items, dict):
        _schema_shape(items, _child(path, "items"), errs, depth + 1)
    elif isinstance(items, list):
        for i, sub in enumerate(items):
            _schema_shape(sub, _key(_child(path, "items"), i), errs, depth + 1)
    elif items is not None:
        errs.append(type_invalid(_child(path, "items"), items, "an object or a list of objects"))
    if _expect(s, "dependencies", "object", path, errs):
        for name, dep in (_get(s, "dependencies") or {}).items():
            if isinstance(dep, dict):
                _schema_shape(dep, _key(_child(path, "dependencies"), name), errs, depth + 1)
            elif not (isinstance(dep, list) and all(isinstance(x, str) for x in dep)):
                errs.append(type_invalid(_key(_child(path, "dependencies"), name), dep,
                                         "an object or a list of strings"))
    if _expect(s, "x-kubernetes-validations", "objects", path, errs):
        for i, rule in enumerate(_get(s, "x-kubernetes-validations") or []):
            _fields(rule, _key(_child(path, "x-kubernetes-validations"), i), _RULE_SHAPE, errs)


def _shape_errors(crd: Obj) -> list[Cause]:
    """Wrong JSON types, which kube rejects while decoding; checked first so the rules can trust types."""
    errs: list[Cause] = []
    spec = crd.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return [type_invalid("spec", spec, "an object")]
    _fields(spec, "spec", {"group": "string", "scope": "string", "preserveUnknownFields": "boolean",
                           "names": "object", "versions": "objects", "conversion": "object"}, errs)
    _fields(_get(spec, "names"), "spec.names", _NAMES_SHAPE, errs)
    versions = _get(spec, "versions")
    for i, version in enumerate(versions if isinstance(versions, list) else []):
        vpath = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            continue
        _fields(version, vpath, {"name": "string", "served": "boolean", "storage": "boolean",
                                 "deprecated": "boolean", "deprecationWarning": "string", "schema": "object",
                                 "subresources": "object", "additionalPrinterColumns": "objects",
                                 "selectableFields": "objects"}, errs)
        schema = _get(_get(version, "schema"), "openAPIV3Schema")
        if schema is not None:
            _schema_shape(schema, f"{vpath}.schema.openAPIV3Schema", errs)
        sub = _get(version, "subresources")
        _fields(sub, f"{vpath}.subresources", {"status": "object", "scale": "object"}, errs)
        _fields(_get(sub, "scale"), f"{vpath}.subresources.scale",
                {"specReplicasPath": "string", "statusReplicasPath": "string", "labelSelectorPath": "string"}, errs)
        for j, col in enumerate(_get(version, "additionalPrinterColumns") or []):
            _fields(col, f"{vpath}.additionalPrinterColumns[{j}]",
                    {"name": "string", "type": "string", "format": "string", "description": "string",
                     "jsonPath": "string", "priority": "integer"}, errs)
        for j, sel in enumerate(_get(version, "selectableFields") or []):
            _fields(sel, f"{vpath}.selectableFields[{j}]", {"jsonPath": "string"}, errs)
    conversion = _get(spec, "conversion")
    _fields(conversion, "spec.conversion", {"strategy": "string", "webhook": "object"}, errs)
    webhook = _get(conversion, "webhook")
    _fields(webhook, "spec.conversion.webhook", {"conversionReviewVersions": "strings", "clientConfig": "object"},
            errs)
    client = _get(webhook, "clientConfig")
    _fields(client, "spec.conversion.webhook.clientConfig", {"url": "string", "caBundle": "string",
                                                              "service": "object"}, errs)
    _fields(_get(client, "service"), "spec.conversion.webhook.clientConfig.service",
            {"namespace": "string", "name": "string", "path": "string", "port": "integer"}, errs)
    status = crd.get("status")
    if status is not None and not isinstance(status, dict):
        errs.append(type_invalid("status", status, "an object"))
    else:
        _fields(status, "status", {"storedVersions": "strings", "acceptedNames": "object"}, errs)
        _fields(_get(status, "acceptedNames"), "status.acceptedNames", _NAMES_SHAPE, errs)
    return errs


# -- the internal view kube validates -----------------------------------------------------------

@dataclass
class _Version:
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
class _Spec:
    group: str
    scope: str
    names: Obj
    versions: list[_Version]
    version: str
    validation: Obj | None
    subresources: Obj | None
    columns: list[Obj]
    selectable: list[Obj]
    conversion: Obj | None      # internal form: strategy, webhookClientConfig, conversionReviewVersions
    preserve_unknown_fields: bool | None


def _internal(spec: Any) -> _Spec:
    """Convert_v1_CustomResourceDefinitionSpec_To_apiextensions: hoist fields identical in every version."""
    raw = [v for v in (_get(spec, "versions") or []) if isinstance(v, dict)]
    versions = [_Version(_s(v, "name"), v.get("served") is True, v.get("storage") is True,
                         v.get("deprecated") is True, _get(v, "deprecationWarning"), _get(v, "schema"),
                         _get(v, "subresources"), list(_get(v, "additionalPrinterColumns") or []),
                         list(_get(v, "selectableFields") or [])) for v in raw]
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
    conversion = _get(spec, "conversion")
    internal_conversion = None
    if isinstance(conversion, dict):
        webhook = _get(conversion, "webhook")
        internal_conversion = {"strategy": _s(conversion, "strategy"),
                               "webhookClientConfig": _get(webhook, "clientConfig"),
                               "conversionReviewVersions": _get(webhook, "conversionReviewVersions")}
    names = _get(spec, "names")
    return _Spec(_s(spec, "group"), _s(spec, "scope"), names if isinstance(names, dict) else {}, versions,
                 versions[0].name if versions else "", validation, subresources, columns, selectable,
                 internal_conversion, _get(spec, "preserveUnknownFields"))


@dataclass(frozen=True)
class _Opts:
    """kube's validationOptions: an update never tightens rules that the stored CRD already breaks."""

    require_open_api_schema: bool = True
    require_valid_property_type: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set: bool = True
    require_recognized_conversion_review_version: bool = True
    require_immutable_names: bool = False


def _old_schemas(old_spec: Any) -> list[Obj]:
    return [s for v in (_get(old_spec, "versions") or [])
            if isinstance(s := _get(_get(v, "schema"), "openAPIV3Schema"), dict)]


def _options(old: Obj | None) -> _Opts:
    if old is None:
        return _Opts()
    spec = old.get("spec")
    schemas = _old_schemas(spec)
    versions = [v for v in (_get(spec, "versions") or []) if isinstance(v, dict)]
    conversion = _get(spec, "conversion")
    review = _get(_get(conversion, "webhook"), "conversionReviewVersions") or []

    def any_node(pred: Callable[[Obj], bool]) -> bool:
        return any(_schema_has(s, pred) for s in schemas)

    return _Opts(
        require_open_api_schema=all(isinstance(_get(_get(v, "schema"), "openAPIV3Schema"), dict) for v in versions),
        require_valid_property_type=not any_node(lambda n: bool(_s(n, "type")) and _s(n, "type") not in OPENAPI_TYPES),
        require_pruned_defaults=not any(_has_unpruned_defaults(s) for s in schemas),
        require_atomic_set_type=not any_node(_non_atomic_set),
        require_map_list_keys_map_set=not any_node(lambda n: bool(_map_list_keys_map_set(n, ""))),
        require_recognized_conversion_review_version=(
            conversion is None or not review or any(v in CONVERSION_REVIEW_VERSIONS for v in review)),
        require_immutable_names=_condition_true(old, "Established"),
    )


def _condition_true(crd: Obj, kind: str) -> bool:
    for cond in _get(_get(crd, "status"), "conditions") or []:
        if _get(cond, "type") == kind:
            return _get(cond, "status") == "True"
    return False


# -- the entry point ----------------------------------------------------------------------------

def validate_crd(crd: Obj, old: Obj | None = None) -> list[Cause]:
    """Every cause kube would give for creating (old=None) or updating this CRD, kube's order kept.

    ObjectMeta itself (name format, labels, ...) is checked by the registry; this adds the CRD rules.
    """
    shape = _shape_errors(crd)
    if shape:
        return shape
    opts = _options(old)
    spec = _internal(crd.get("spec"))
    causes = _validate_name(crd, spec)
    causes += _validate_spec(spec, opts)
    if old is not None:
        causes += _validate_immutable(spec, _internal(old.get("spec")), opts)
    causes += validate_names(_get(crd.get("status"), "acceptedNames") or {}, "status.acceptedNames")
    causes += _validate_stored_versions(stored_versions_after(crd, old), spec.versions)
    causes += _validate_api_approval(crd, old)
    causes += _validate_preserve_unknown_fields(crd, old)
    return causes


def _validate_name(crd: Obj, spec: _Spec) -> list[Cause]:
    """The name must be `<plural>.<group>`: kube's nameValidationFn, applied to generateName too."""
    meta = crd.get("metadata") or {}
    wanted = f"{_s(spec.names, 'plural')}.{spec.group}"
    causes = []
    for key in ("generateName", "name"):
        value = _get(meta, key)
        if isinstance(value, str) and value and value != wanted:
            causes.append(invalid(f"metadata.{key}", value, 'must be spec.names.plural+"."+spec.group'))
    return causes


def _validate_spec(spec: _Spec, opts: _Opts) -> list[Cause]:
    causes: list[Cause] = []
    if not spec.group:
        causes.append(required("spec.group"))
    elif errs := validate_dns_subdomain(spec.group):
        causes.append(invalid("spec.group", spec.group, ",".join(errs)))
    elif len(spec.group.split(".")) < 2 and spec.group not in KUBE_GROUPS_WITHOUT_DOTS:
        causes.append(invalid("spec.group", spec.group, "should be a domain with at least one dot"))
    causes += _enum("spec.scope", spec.scope, (CLUSTER_SCOPED, NAMESPACE_SCOPED))

    top_schema = _get(spec.validation, "openAPIV3Schema")
    if opts.require_open_api_schema:
        if top_schema is None:
            for i, v in enumerate(spec.versions):
                if _get(v.schema, "openAPIV3Schema") is None:
                    causes.append(required(f"spec.versions[{i}].schema.openAPIV3Schema"))
    elif not spec.preserve_unknown_fields and top_schema is None:
        for i, v in enumerate(spec.versions):
            if v.served and _get(v.schema, "openAPIV3Schema") is None:
                causes.append(required(f"spec.versions[{i}].schema.openAPIV3Schema",
                                       "because otherwise all fields are pruned"))
    if spec.preserve_unknown_fields and _spec_has(spec, lambda n: _get(n, "default") is not None):
        causes.append(invalid("spec.preserveUnknownFields", True, "must be false in order to use defaults in the "
                                                                  "schema"))

    storage = 0
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(spec.versions):
        storage += version.storage
        unique = unique and version.name not in seen
        seen.add(version.name)
        if errs := validate_dns1035_label(version.name):
            causes.append(invalid(f"spec.versions[{i}].name", version.name, ",".join(errs)))
        subresources = spec.subresources if not any(v.subresources is not None for v in spec.versions) \
            else version.subresources
        causes += _validate_version(version, f"spec.versions[{i}]", _status_enabled(subresources), spec, opts)
    versions_value = [_version_json(v) for v in spec.versions]
    if not unique:
        causes.append(invalid("spec.versions", versions_value, "must contain unique version names"))
    if storage != 1:
        causes.append(invalid("spec.versions", versions_value, "must have exactly one version marked as storage "
                                                               "version"))
    if spec.version and (errs := validate_dns1035_label(spec.version)):
        causes.append(invalid("spec.version", spec.version, ",".join(errs)))

    for key in ("plural", "singular", "kind", "listKind"):
        if not _s(spec.names, key):
            causes.append(required(f"spec.names.{key}"))
    causes += validate_names(spec.names, "spec.names")
    any_status = _status_enabled(spec.subresources) or any(_status_enabled(v.subresources) for v in spec.versions)
    causes += _validate_validation(spec.validation, any_status, opts, "spec.validation")
    causes += _validate_subresources(spec.subresources, "spec.subresources")
    for i, col in enumerate(spec.columns):
        causes += _validate_column(col, f"spec.additionalPrinterColumns[{i}]")
    if spec.selectable:
        if top_schema is None:
            causes.append(invalid("spec.selectableFields", "", "may only be set when validations.schema is included"))
        elif _structural_init_error(top_schema) is None:
            causes += _validate_selectable(spec.selectable, top_schema, "spec.selectableFields")

    strategy = _get(spec.conversion, "strategy")
    if spec.conversion is not None and strategy != NONE_CONVERTER and spec.preserve_unknown_fields:
        causes.append(invalid("spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields "
                                                                    "is true"))
    causes += _validate_conversion(spec.conversion, opts, "spec.conversion")
    return causes


def _version_json(v: _Version) -> Obj:
    return {"name": v.name, "served": v.served, "storage": v.storage}


def _status_enabled(subresources: Obj | None) -> bool:
    return _get(subresources, "status") is not None


def _enum(path: str, value: str, accepted: tuple[str, ...]) -> list[Cause]:
    """validateEnumStrings: required, and one of the accepted values."""
    if not value:
        return [required(path)]
    return [] if value in accepted else [not_supported(path, value, accepted)]


def validate_names(names: Obj, path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionNames: format only; emptiness is the spec's concern."""
    causes: list[Cause] = []
    for key in ("plural", "singular"):
        value = _s(names, key)
        if value and (errs := validate_dns1035_label(value)):
            causes.append(invalid(f"{path}.{key}", value, ",".join(errs)))
    for key in ("kind", "listKind"):
        value = _s(names, key)
        if value and (errs := validate_dns1035_label(value.lower())):
            causes.append(invalid(f"{path}.{key}", value,
                                  "may have mixed case, but should otherwise match: " + ",".join(errs)))
    for i, short in enumerate(_get(names, "shortNames") or []):
        if errs := validate_dns1035_label(short):
            causes.append(invalid(f"{path}.shortNames[{i}]", short, ",".join(errs)))
    kind = _s(names, "kind")
    if kind and kind == _s(names, "listKind"):
        causes.append(invalid(f"{path}.listKind", kind, "kind and listKind may not be the same"))
    for i, category in enumerate(_get(names, "categories") or []):
        if errs := validate_dns1035_label(category):
            causes.append(invalid(f"{path}.categories[{i}]", category, ",".join(errs)))
    return causes


def _validate_version(version: _Version, path: str, status_enabled: bool, spec: _Spec, opts: _Opts) -> list[Cause]:
    causes = [invalid(f"{path}.deprecationWarning", version.deprecation_warning, msg)
              for msg in _deprecation_warning_errors(version.deprecated, version.deprecation_warning)]
    causes += _validate_validation(version.schema, status_enabled, opts, f"{path}.schema")
    causes += _validate_subresources(version.subresources, f"{path}.subresources")
    for i, col in enumerate(version.columns):
        causes += _validate_column(col, f"{path}.additionalPrinterColumns[{i}]")
    if version.selectable:
        # kube looks only at the version's own schema, which its v1 conversion may have hoisted away;
        # the hoisted schema is the same for every version, so it is the one that applies.
        schema = _get(version.schema, "openAPIV3Schema") or _get(spec.validation, "openAPIV3Schema")
        if schema is None:
            causes.append(invalid(f"{path}.selectableFields", "",
                                  "may only be set when `version.schema.openAPIV3Schema` is not included"))
        elif (err := _structural_init_error(schema)) is not None:
            causes.append(invalid(f"{path}.schema.openAPIV3Schema", "", err))
        else:
            causes += _validate_selectable(version.selectable, schema, f"{path}.selectableFields")
    return causes


def _deprecation_warning_errors(deprecated: bool, warning: str | None) -> list[str]:
    """The text kubectl prints for a deprecated version: short, printable, one line."""
    if not deprecated and warning is not None:
        return ["can only be set for deprecated versions"]
    if warning is None:
        return []
    errs = []
    if len(warning.encode("utf-8", "surrogatepass")) > 256:
        errs.append("must be <= 256 characters long")
    if not warning:
        errs.append("must not be an empty string")
    offset = 0  # Go reports the byte offset
    for ch in warning:
        if not ch.isprintable():  # Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols, ' '
            errs.append("must only contain printable UTF-8 characters; non-printable character found at index "
                        f"{offset}")
            break
        offset += len(ch.encode("utf-8", "surrogatepass"))
    return errs


# -- subresources, printer columns, selectable fields -------------------------------------------

def _simple_json_path(value: str, path: str) -> list[Cause]:
    if not value:
        return [invalid(path, value, "must not be empty")]
    if value[0] != ".":
        return [invalid(path, value, "must be a simple json path starting with .")]
    return []


def _validate_subresources(sub: Obj | None, path: str) -> list[Cause]:
    scale = _get(sub, "scale")
    if scale is None:
        return []
    causes: list[Cause] = []
    for key, prefix, where in (("specReplicasPath", ".spec.", ".spec"), ("statusReplicasPath", ".status.", ".status")):
        value, fpath = _s(scale, key), f"{path}.scale.{key}"
        if not value:
            causes.append(required(fpath))
        elif errs := _simple_json_path(value, fpath):
            causes += errs
        elif not value.startswith(prefix):
            causes.append(invalid(fpath, value, f"should be a json path under {where}"))
    selector = _s(scale, "labelSelectorPath")
    if selector:
        fpath = f"{path}.scale.labelSelectorPath"
        if errs := _simple_json_path(selector, fpath):
            causes += errs
        elif not selector.startswith((".spec.", ".status.")):
            causes.append(invalid(fpath, selector, "should be a json path under either .spec or .status"))
    return causes


def _validate_column(col: Obj, path: str) -> list[Cause]:
    """A printer column; kube reports the jsonPath at its internal name, `JSONPath`."""
    causes: list[Cause] = []
    if not _s(col, "name"):
        causes.append(required(f"{path}.name"))
    types = ",".join(PRINTER_COLUMN_TYPES)
    kind = _s(col, "type")
    if not kind:
        causes.append(required(f"{path}.type", f"must be one of {types}"))
    elif kind not in PRINTER_COLUMN_TYPES:
        causes.append(invalid(f"{path}.type", kind, f"must be one of {types}"))
    fmt = _s(col, "format")
    if fmt and fmt not in PRINTER_COLUMN_FORMATS:
        causes.append(invalid(f"{path}.format", fmt, f"must be one of {','.join(PRINTER_COLUMN_FORMATS)}"))
    json_path = _s(col, "jsonPath")
    if not json_path:
        causes.append(required(f"{path}.JSONPath"))
    else:
        causes += _simple_json_path(json_path, f"{path}.JSONPath")
    return causes


_PATH_PART = re.compile(r"\.([A-Za-z_$][A-Za-z0-9_$-]*)|\['((?:[^'\\]|\\.)*)'\]")


def _resolve_field_path(schema: Obj, json_path: str) -> tuple[list[str], Obj | None, str]:
    """A selectable field's path (`.spec.a` or `['a']`, no array indexes) and the schema it reaches."""
    parts: list[str] = []
    pos = 0
    while pos < len(json_path):
        match = _PATH_PART.match(json_path, pos)
        if match is None:
            return parts, None, f"expected [ or . at position {pos}"
        parts.append(match.group(1) if match.group(1) is not None else match.group(2))
        pos = match.end()
    if not parts:
        return parts, None, "must not be empty"
    node: Obj | None = schema
    for i, part in enumerate(parts):
        props = _get(node, "properties") or {}
        if part in props:
            node = props[part]
        elif isinstance(_get(node, "additionalProperties"), dict):
            node = node["additionalProperties"]  # type: ignore[index]
        else:
            where = "." + ".".join(parts[:i + 1])
            return parts, None, f"does not refer to a valid field: {where}"
    return parts, node, ""


def _validate_selectable(fields: list[Obj], schema: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, sel in enumerate(fields):
        ipath = f"{path}[{i}].jsonPath"
        json_path = _s(sel, "jsonPath")
        if not json_path:
            causes.append(required(ipath))
            continue
        parts, node, err = _resolve_field_path(schema, json_path)
        if err:
            causes.append(invalid(ipath, json_path, f"is an invalid path: {err}"))
            continue
        if parts[0] == "metadata":
            causes.append(invalid(ipath, json_path, "must not point to fields in metadata"))
        if _s(node, "type") not in ("string", "boolean", "integer"):
            causes.append(invalid(ipath, json_path, "must point to a field of type string, boolean or integer. "
                                                    "Enum string fields and strings with formats are allowed."))
        key = ".".join(parts)
        if key in seen:
            causes.append(duplicate(ipath, json_path))
        seen.add(key)
    if len(seen) > MAX_SELECTABLE_FIELDS:
        causes.append(too_many(path, len(seen), MAX_SELECTABLE_FIELDS))
    return causes


# -- conversion ---------------------------------------------------------------------------------

_URL_FORM = "; desired format: https://host[/path]"


def _validate_webhook_url(url: str, path: str) -> list[Cause]:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port, as Go's url.Parse does
    except ValueError as exc:
        return [required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    causes = []
    if parts.scheme != "https":
        causes.append(invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        causes.append(invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        causes.append(invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def _validate_webhook_service(service: Obj, path: str) -> list[Cause]:
    causes = []
    if not _s(service, "name"):
        causes.append(required(f"{path}.name", "service name is required"))
    if not _s(service, "namespace"):
        causes.append(required(f"{path}.namespace", "service namespace is required"))
    port = _get(service, "port")
    port = 443 if port is None else int(port)
    if not 1 <= port <= 65535:
        causes.append(invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = _get(service, "path")
    if url_path is None or url_path in ("", "/"):
        return causes
    if url_path == "//":
        return causes + [invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(invalid(f"{path}.path", url_path, "must start with a '/'"))
    check = url_path[1:].removesuffix("/")
    for i, step in enumerate(check.split("/")):
        if not step:
            causes.append(invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        causes += [invalid(f"{path}.path", url_path, f"segment[{i}]: {msg}") for msg in validate_dns_subdomain(step)]
    return causes


def _validate_conversion(conversion: Obj | None, opts: _Opts, path: str) -> list[Cause]:
    if conversion is None:
        return []
    strategy = conversion["strategy"]
    causes = _enum(f"{path}.strategy", strategy, (NONE_CONVERTER, WEBHOOK_CONVERTER))
    client = conversion["webhookClientConfig"]
    review = conversion["conversionReviewVersions"]
    if strategy == WEBHOOK_CONVERTER:
        cpath = f"{path}.webhookClientConfig"
        if client is None:
            causes.append(required(cpath, "required when strategy is set to Webhook"))
        else:
            url, service = _get(client, "url"), _get(client, "service")
            if (url is None) == (service is None):
                causes.append(required(cpath, "exactly one of url or service is required"))
            elif url is not None:
                causes += _validate_webhook_url(url, f"{cpath}.url")
            else:
                causes += _validate_webhook_service(service, f"{cpath}.service")
        rpath = f"{path}.conversionReviewVersions"
        if not review:
            causes.append(required(rpath))
        else:
            seen: set[str] = set()
            for i, version in enumerate(review):
                if version in seen:
                    causes.append(invalid(f"{rpath}[{i}]", version, "duplicate version"))
                    continue
                seen.add(version)
                causes += [invalid(f"{rpath}[{i}]", version, msg) for msg in validate_dns1035_label(version)]
            if opts.require_recognized_conversion_review_version and not seen & set(CONVERSION_REVIEW_VERSIONS):
                causes.append(invalid(rpath, review,
                                      f"must include at least one of {', '.join(CONVERSION_REVIEW_VERSIONS)}"))
    else:
        if client is not None:
            causes.append(forbidden(f"{path}.webhookClientConfig", "should not be set when strategy is not set to "
                                                                   "Webhook"))
        if review:
            causes.append(forbidden(f"{path}.conversionReviewVersions", "should not be set when strategy is not "
                                                                        "set to Webhook"))
    return causes


# -- update, status and annotation rules --------------------------------------------------------

def _validate_immutable(spec: _Spec, old: _Spec, opts: _Opts) -> list[Cause]:
    """Scope and kind shape storage once served; group and plural are part of the (immutable) name."""
    pairs = [("spec.group", spec.group, old.group), ("spec.names.plural", _s(spec.names, "plural"),
                                                      _s(old.names, "plural"))]
    if opts.require_immutable_names:
        pairs = [("spec.scope", spec.scope, old.scope),
                 ("spec.names.kind", _s(spec.names, "kind"), _s(old.names, "kind"))] + pairs
    return [invalid(path, new, "field is immutable") for path, new, was in pairs if new != was]


def _validate_stored_versions(stored: list[str], versions: list[_Version]) -> list[Cause]:
    path = "status.storedVersions"
    if not stored:
        return [invalid(path, stored, "must have at least one stored version")]
    causes = []
    remaining = {name: i for i, name in enumerate(stored)}
    for version in versions:
        if version.storage and version.name not in remaining:
            causes.append(invalid(path, stored, "must have the storage version " + version.name))
        remaining.pop(version.name, None)
    for name, i in sorted(remaining.items(), key=lambda item: item[1]):
        causes.append(invalid(f"{path}[{i}]", name,
                              f"missing from spec.versions; {name} was previously a storage version, and must "
                              f"remain in spec.versions until a storage migration ensures no data remains persisted "
                              f"in {name} and removes {name} from status.storedVersions"))
    return causes


def _is_protected_group(group: str) -> bool:
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def _approval_state(crd: Obj) -> tuple[str, str]:
    annotations = _get(crd.get("metadata"), "annotations") or {}
    value = annotations.get(API_APPROVAL_ANNOTATION, "") if isinstance(annotations, dict) else ""
    link = "see https://github.com/kubernetes/enhancements/pull/1111"
    if not value:
        return "missing", f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}", {link}'
    if value.startswith("unapproved"):
        return "bypassed", f'not approved: "{value}"'
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is not None and parts.scheme and parts.netloc:
        return "approved", f"approved in {value}"
    return "invalid", (f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}" with either a '
                       f'URL or a reason starting with "unapproved", {link}')


def _validate_api_approval(crd: Obj, old: Obj | None) -> list[Cause]:
    """Groups under k8s.io and kubernetes.io need the API-review annotation, as in kube."""
    if not _is_protected_group(_s(crd.get("spec"), "group")):
        return []
    state, reason = _approval_state(crd)
    if old is not None and _approval_state(old)[0] == state:
        return []
    path = f"metadata.annotations[{API_APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [required(path, reason)]
    if state == "invalid":
        return [invalid(path, (_get(crd.get("metadata"), "annotations") or {}).get(API_APPROVAL_ANNOTATION, ""),
                        reason)]
    return []


def _validate_preserve_unknown_fields(crd: Obj, old: Obj | None) -> list[Cause]:
    if old is not None and _get(old.get("spec"), "preserveUnknownFields") is True:
        return []
    if _get(crd.get("spec"), "preserveUnknownFields") is True:
        return [invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                        "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")]
    return []


# -- schema traversal helpers -------------------------------------------------------------------

def _sub_schemas(s: Obj) -> list[Obj]:
    """Every schema directly below s, wherever JSONSchemaProps can nest one."""
    subs: list[Any] = []
    items = _get(s, "items")
    subs += items if isinstance(items, list) else [items]
    for key in ("allOf", "anyOf", "oneOf"):
        subs += _get(s, key) or []
    subs.append(_get(s, "not"))
    for key in ("properties", "patternProperties", "definitions"):
        subs += list((_get(s, key) or {}).values())
    for key in ("additionalProperties", "additionalItems"):
        subs.append(_get(s, key))
    subs += list((_get(s, "dependencies") or {}).values())
    return [x for x in subs if isinstance(x, dict)]


def _schema_has(s: Any, pred: Callable[[Obj], bool]) -> bool:
    if not isinstance(s, dict):
        return False
    return pred(s) or any(_schema_has(sub, pred) for sub in _sub_schemas(s))


def _spec_has(spec: _Spec, pred: Callable[[Obj], bool]) -> bool:
    schemas = [_get(spec.validation, "openAPIV3Schema")] + [_get(v.schema, "openAPIV3Schema") for v in spec.versions]
    return any(_schema_has(s, pred) for s in schemas)


def _non_atomic_set(s: Obj) -> bool:
    items = _get(s, "items")
    if _get(s, "x-kubernetes-list-type") != "set" or not isinstance(items, dict):
        return False
    if _s(items, "type") == "array":
        return _get(items, "x-kubernetes-list-type") not in (None, "atomic")
    if _s(items, "type") == "object":
        return _get(items, "x-kubernetes-map-type") != "atomic"
    return False


# -- CustomResourceValidation ------------------------------------------------------------------

# JSONSchemaProps fields in the order of kube's internal Go struct, with how Go sees a zero value.
_GO_FIELDS = (
    ("ID", "id", "str"), ("Schema", "$schema", "str"), ("Ref", "$ref", "ptr"), ("Description", "description", "str"),
    ("Type", "type", "str"), ("Nullable", "nullable", "bool"), ("Format", "format", "str"),
    ("Title", "title", "str"), ("Default", "default", "ptr"), ("Maximum", "maximum", "ptr"),
    ("ExclusiveMaximum", "exclusiveMaximum", "bool"), ("Minimum", "minimum", "ptr"),
    ("ExclusiveMinimum", "exclusiveMinimum", "bool"), ("MaxLength", "maxLength", "ptr"),
    ("MinLength", "minLength", "ptr"), ("Pattern", "pattern", "str"), ("MaxItems", "maxItems", "ptr"),
    ("MinItems", "minItems", "ptr"), ("UniqueItems", "uniqueItems", "bool"), ("MultipleOf", "multipleOf", "ptr"),
    ("Enum", "enum", "ptr"), ("MaxProperties", "maxProperties", "ptr"), ("MinProperties", "minProperties", "ptr"),
    ("Required", "required", "ptr"), ("Items", "items", "ptr"), ("AllOf", "allOf", "ptr"),
    ("OneOf", "oneOf", "ptr"), ("AnyOf", "anyOf", "ptr"), ("Not", "not", "ptr"),
    ("Properties", "properties", "ptr"), ("AdditionalProperties", "additionalProperties", "ptr"),
    ("PatternProperties", "patternProperties", "ptr"), ("Dependencies", "dependencies", "ptr"),
    ("AdditionalItems", "additionalItems", "ptr"), ("Definitions", "definitions", "ptr"),
    ("ExternalDocs", "externalDocs", "ptr"), ("Example", "example", "ptr"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", "ptr"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource", "bool"),
    ("XIntOrString", "x-kubernetes-int-or-string", "bool"), ("XListMapKeys", "x-kubernetes-list-map-keys", "ptr"),
    ("XListType", "x-kubernetes-list-type", "ptr"), ("XMapType", "x-kubernetes-map-type", "ptr"),
    ("XValidations", "x-kubernetes-validations", "ptr"),
)
_ALLOWED_AT_STATUS_ROOT = ("Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                           "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
                           "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example",
                           "XPreserveUnknownFields", "XValidations")


def _go_zero(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if kind == "str":
        return value == ""
    if kind == "bool":
        return value is False
    return False


def _status_root_errors(schema: Obj, path: str) -> list[Cause]:
    """With a status subresource, status is validated as properties[status]; the root may only hold
    what still applies once status is split off."""
    for go_name, key, kind in _GO_FIELDS:
        value = schema.get(key)
        if _go_zero(value, kind):
            continue
        if go_name == "Type":
            if value != "object":
                return [invalid(f"{path}.type", value, 'only "object" is allowed as the type at the root of the '
                                                       'schema if the status subresource is enabled')]
            continue
        if go_name not in _ALLOWED_AT_STATUS_ROOT:
            return [invalid(path, schema, f"only [{' '.join(_ALLOWED_AT_STATUS_ROOT)}] fields are allowed at the "
                                          "root of the schema if the status subresource is enabled")]
    return []


def _validate_validation(validation: Obj | None, status_enabled: bool, opts: _Opts, path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionValidation for one schema (a version's or the hoisted one)."""
    schema = _get(validation, "openAPIV3Schema")
    if schema is None:
        return []
    spath = f"{path}.openAPIV3Schema"
    causes: list[Cause] = []
    if status_enabled:
        causes += _status_root_errors(schema, spath)
    if schema.get("nullable") is True:
        causes.append(forbidden(f"{spath}.nullable", "nullable cannot be true at the root"))
    init_errs: list[Cause] = []
    if (err := _structural_init_error(schema)) is not None:
        init_errs.append(invalid(spath, "", err))
    elif structural := validate_structural(schema, spath):
        causes += structural
    else:
        causes += validate_defaults(schema, spath, opts.require_pruned_defaults)
    schema_errs: list[Cause] = []
    cel_errs: list[Cause] = []
    _walk(schema, spath, _SSV(require_valid_type=opts.require_valid_property_type), True, opts, schema_errs,
          cel_errs)
    causes += schema_errs + cel_errs
    if not causes:
        causes += init_errs
    return causes


# -- NewStructural: fields a structural schema cannot represent ----------------------------------

def _structural_init_error(s: Obj) -> str | None:
    """The error schema.NewStructural returns; when set, kube skips the structural checks."""
    for key, name in (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"), ("patternProperties", "patternProperties"),
                      ("dependencies", "dependencies"), ("definitions", "definitions")):
        if s.get(key):  # kube: len(...) > 0
            return f"OpenAPIV3Schema '{name}' is not supported"
    if s.get("additionalItems") is not None:
        return "OpenAPIV3Schema 'additionalItems' is not supported"
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
    items = s.get("items")
    if isinstance(items, list) and items:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    subs = [_get(s, "not"), *(_get(s, "allOf") or []), *(_get(s, "anyOf") or []), *(_get(s, "oneOf") or []),
            _get(s, "additionalProperties"), items, *(_get(s, "properties") or {}).values()]
    for sub in subs:
        if isinstance(sub, dict) and (err := _structural_init_error(sub)) is not None:
            return err
    return None


# -- ValidateStructural -------------------------------------------------------------------------

_ROOT, _ITEM, _FIELD = "root", "item", "field"
_EMPTY_TYPE = {_ROOT: "must not be empty at the root", _ITEM: "must not be empty for specified array items",
               _FIELD: "must not be empty for specified object fields"}
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def validate_structural(schema: Obj, path: str) -> list[Cause]:
    """schema.ValidateStructural: the NonStructuralSchema rules, sorted as kube sorts them."""
    causes = _structural_invariants(schema, _ROOT, path)
    causes += _vv_completeness(schema, schema, path, path)
    return sorted(causes, key=lambda c: f"{c.field}: {c.message}")


def _go_nonzero(s: Obj) -> Obj:
    """s without the keys Go would see as zero values (false, "", null)."""
    kinds = {key: kind for _, key, kind in _GO_FIELDS}
    return {k: v for k, v in s.items() if not _go_zero(v, kinds.get(k, "ptr"))}


def _is_int_or_string_any_of(any_of: Any) -> bool:
    return isinstance(any_of, list) and [_go_nonzero(x) for x in any_of if isinstance(x, dict)] == \
        _INT_OR_STRING_ANY_OF and len(any_of) == 2


def _structural_invariants(s: Obj, lvl: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = _s(s, "type")
    items = _get(s, "items")
    props = _get(s, "properties") or {}
    extra = _get(s, "additionalProperties")
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    if kind == "array" and items is None:
        causes.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        causes += _structural_invariants(items, _ITEM, f"{path}.items")
    for name, sub in props.items():
        causes += _structural_invariants(sub, _FIELD, f"{path}.properties[{name}]")
    if extra is not None:
        if lvl == _ROOT:
            causes.append(forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(extra, dict):
            causes += _structural_invariants(extra, _FIELD, f"{path}.additionalProperties")
    if int_or_string and preserve:
        causes.append(invalid(f"{path}.x-kubernetes-preserve-unknown-fields", True,
                              "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        causes.append(invalid(f"{path}.x-kubernetes-embedded-resource", True,
                              "must be false if x-kubernetes-int-or-string is true"))
    all_of = _get(s, "allOf") or []
    skip_first = bool(all_of) and isinstance(all_of[0], dict) and _is_int_or_string_any_of(_get(all_of[0], "anyOf"))
    causes += _value_validation(s, _is_int_or_string_any_of(_get(s, "anyOf")), skip_first, lvl, path)
    if embedded and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        causes.append(required(f"{path}.type", detail) if not kind else invalid(f"{path}.type", kind, detail))
    elif not kind and not int_or_string and not preserve:
        causes.append(required(f"{path}.type", _EMPTY_TYPE[lvl]))
    if embedded and extra is not None:
        causes.append(forbidden(f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource "
                                                                "is set"))
    if lvl == _ROOT and kind and kind != "object":
        causes.append(invalid(f"{path}.type", kind, "must be object at the root"))
    check_meta = lvl == _ROOT or embedded
    for name in ("kind", "apiVersion"):
        if name in props and check_meta and _s(props[name], "type") != "string":
            causes.append(invalid(f"{path}.properties[{name}].type", _s(props[name], "type"), "must be string"))
    if "metadata" in props:
        causes += _metadata_invariants(props["metadata"], check_meta, lvl, f"{path}.properties[metadata]")
    if embedded and not preserve and not props:
        causes.append(required(f"{path}.properties", "must not be empty if x-kubernetes-embedded-resource is true "
                                                     "without x-kubernetes-preserve-unknown-fields"))
    return causes


# What NewStructural keeps of a node: metadata at the root may hold nothing else than name/generateName.
_NOT_STRUCTURAL = ("externalDocs", "example")


def _metadata_invariants(m: Obj, check_meta: bool, lvl: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if check_meta and _s(m, "type") != "object":
        causes.append(invalid(f"{path}.type", _s(m, "type"), "must be object"))
    if lvl == _ROOT:
        known = {key for _, key, _ in _GO_FIELDS}  # kube's decoder drops unknown keys
        rest = {k: v for k, v in _go_nonzero(m).items() if k in known}
        names = set(rest.get("properties") or {})
        if names and names <= {"name", "generateName"}:
            rest.pop("properties")
        for key in ("type", "default", *_NOT_STRUCTURAL):
            rest.pop(key, None)
        if any(not (isinstance(v, (list, dict)) and not v) for v in rest.values()):
            causes.append(forbidden(path, "must not specify anything other than name and generateName, but metadata "
                                          "is implicitly specified"))
    return causes


def _value_validation(v: Obj, skip_any_of: bool, skip_first_all_of_any_of: bool, lvl: str,
                      path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not skip_any_of:
        for i, sub in enumerate(_get(v, "anyOf") or []):
            causes += _nested(sub, False, False, lvl, f"{path}.anyOf[{i}]")
    for i, sub in enumerate(_get(v, "allOf") or []):
        causes += _nested(sub, skip_first_all_of_any_of and i == 0, False, lvl, f"{path}.allOf[{i}]")
    for i, sub in enumerate(_get(v, "oneOf") or []):
        causes += _nested(sub, False, False, lvl, f"{path}.oneOf[{i}]")
    if isinstance(_get(v, "not"), dict):
        causes += _nested(v["not"], False, False, lvl, f"{path}.not")
    pattern = _s(v, "pattern")
    if pattern and (err := go_regexp_error(pattern)):
        causes.append(invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {err}"))
    return causes


_NESTED_FORBIDDEN = (
    ("type", "str", "must be empty to be structural"),
    ("additionalProperties", "ptr", "must be undefined to be structural"),
    ("default", "ptr", "must be undefined to be structural"),
    ("title", "str", "must be empty to be structural"),
    ("description", "str", "must be empty to be structural"),
    ("nullable", "bool", "must be false to be structural"),
    ("externalDocs", "ptr", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "bool", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "bool", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "bool", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "list", "must be empty to be structural"),
    ("x-kubernetes-list-type", "ptr", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "ptr", "must be undefined to be structural"),
    ("x-kubernetes-validations", "list", "must be empty to be structural"),
)


def _nested(v: Obj, skip_any_of: bool, skip_all_of_any_of: bool, lvl: str, path: str) -> list[Cause]:
    """Inside allOf/anyOf/oneOf/not only value validations are allowed: nothing that shapes the object."""
    causes = _value_validation(v, skip_any_of, skip_all_of_any_of, lvl, path)
    if isinstance(_get(v, "items"), dict):
        causes += _nested(v["items"], False, False, lvl, f"{path}.items")
    for name, sub in (_get(v, "properties") or {}).items():
        causes += _nested(sub, False, False, _FIELD, f"{path}.properties[{name}]")
    for key, kind, detail in _NESTED_FORBIDDEN:
        value = v.get(key)
        if kind == "list":
            present = bool(value)
        else:
            present = not _go_zero(value, kind)
        if present:
            causes.append(forbidden(f"{path}.{key}", detail))
    if "metadata" in (_get(v, "properties") or {}):
        causes.append(forbidden(f"{path}.properties[metadata]", "must not be specified in a nested context"))
    return causes


def _vv_completeness(v: Obj, s: Obj | None, spath: str, vpath: str) -> list[Cause]:
    """Fields named under allOf/anyOf/oneOf/not must exist in the structure too.

    Like kube, only the junctors of the root are followed (and what they nest); junctors deeper in
    the structure are not checked for completeness.
    """
    if s is None:
        return [required(spath, f"because it is defined in {vpath}")]
    causes: list[Cause] = []
    if isinstance(_get(v, "not"), dict):
        causes += _nested_completeness(v["not"], s, spath, f"{vpath}.not")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(_get(v, key) or []):
            causes += _nested_completeness(sub, s, spath, f"{vpath}.{key}[{i}]")
    return causes


def _nested_completeness(v: Obj | None, s: Obj | None, spath: str, vpath: str) -> list[Cause]:
    if v is None:
        return []
    if s is None:
        return [required(spath, f"because it is defined in {vpath}")]
    causes = _vv_completeness(v, s, spath, vpath)
    items = _get(s, "items")
    causes += _nested_completeness(_get(v, "items") if isinstance(_get(v, "items"), dict) else None,
                                   items if isinstance(items, dict) else None, f"{spath}.items", f"{vpath}.items")
    props = _get(s, "properties") or {}
    for name, sub in (_get(v, "properties") or {}).items():
        if name not in props:
            causes.append(required(f"{spath}.properties[{name}]",
                                   f"because it is defined in {vpath}.properties[{name}]"))
        else:
            causes += _nested_completeness(sub, props[name], f"{spath}.properties[{name}]",
                                           f"{vpath}.properties[{name}]")
    return causes


_LOOKAROUND = re.compile(r"\(\?(<?[=!]|>)")
_BACKREF = re.compile(r"\\[1-9]")
# Python's re errors that RE2 shares, worded as Go's regexp/syntax words them.
_SHARED_REGEX_ERRORS = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "invalid nested repetition operator"),
    ("unterminated character set", "missing closing ]"),
    ("bad character range", "invalid character class range"),
)


def go_regexp_error(pattern: str) -> str:
    """Why Go's RE2 (kube's regexp.Compile) would reject the pattern, or "" when it would not.

    Python's re accepts lookaround and backreferences, which RE2 refuses; RE2 accepts syntax that
    Python refuses (`\\z`, `\\p{L}`, `\\Q..\\E`, flags mid-pattern). Only errors both engines give are
    reported, so a pattern valid for kube is never refused here.
    """
    if match := _LOOKAROUND.search(pattern):
        return f"error parsing regexp: invalid or unsupported Perl syntax: `{match.group(0)}`"
    if match := _BACKREF.search(pattern):
        return f"error parsing regexp: invalid escape sequence: `{match.group(0)}`"
    try:
        re.compile(_python_regex_text(pattern))
    except re.error as exc:
        for python_msg, go_msg in _SHARED_REGEX_ERRORS:
            if str(exc).startswith(python_msg):
                return f"error parsing regexp: {go_msg}: `{pattern}`"
    return ""


def _python_regex_text(pattern: str) -> str:
    """The closest Python spelling of an RE2 pattern, for matching default values."""
    pattern = re.sub(r"\\Q(.*?)(?:\\E|$)", lambda m: re.escape(m.group(1)), pattern)
    return pattern.replace(r"\z", r"\Z")


def _python_regex(pattern: str) -> re.Pattern[str] | None:
    """A compiled approximation of an RE2 pattern, or None when Python cannot express it."""
    try:
        return re.compile(_python_regex_text(pattern))
    except re.error:
        return None


# -- ValidateCustomResourceDefinitionOpenAPISchema ----------------------------------------------

@dataclass(frozen=True)
class _SSV:
    """kube's specStandardValidatorV3: what the walk may allow where it is in the schema."""

    allow_defaults: bool = True
    disallow_reason: str = ""
    inside_meta: bool = False
    require_valid_type: bool = True

    def without_defaults(self, reason: str) -> _SSV:
        return replace(self, allow_defaults=False, disallow_reason=reason)

    def in_meta(self) -> _SSV:
        return replace(self, inside_meta=True)


def _ssv_errors(s: Obj, path: str, ssv: _SSV) -> list[Cause]:
    causes: list[Cause] = []
    kind = _s(s, "type")
    if ssv.require_valid_type and kind and kind not in OPENAPI_TYPES:
        causes.append(not_supported(f"{path}.type", kind, OPENAPI_TYPES))
    if s.get("default") is not None and not ssv.allow_defaults:
        causes.append(forbidden(f"{path}.default", "must not be set" + (f" {ssv.disallow_reason}"
                                                                         if ssv.disallow_reason else "")))
    if _s(s, "id"):
        causes.append(forbidden(f"{path}.id", "id is not supported"))
    if s.get("additionalItems") is not None:
        causes.append(forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if _get(s, "patternProperties"):
        causes.append(forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if _get(s, "definitions"):
        causes.append(forbidden(f"{path}.definitions", "definitions is not supported"))
    if s.get("dependencies") is not None:
        causes.append(forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if s.get("$ref") is not None:
        causes.append(forbidden(f"{path}.$ref", "$ref is not supported"))
    if kind == "null":
        causes.append(forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        causes.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ssv.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        causes.append(forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"))
    return causes


def _walk(s: Obj, path: str, ssv: _SSV, is_root: bool, opts: _Opts, errs: list[Cause], cel: list[Cause]) -> None:
    """Per-node OpenAPI rules, list/map extensions and x-kubernetes-validations, as kube walks them."""
    errs += _ssv_errors(s, path, ssv)
    if s.get("uniqueItems") is True:
        errs.append(forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since the runtime "
                                                     "complexity becomes quadratic"))
    extra = s.get("additionalProperties")
    props = _get(s, "properties") or {}
    if extra is not None:
        if props and (extra is False or isinstance(extra, dict)):
            errs.append(forbidden(f"{path}.additionalProperties", "additionalProperties and properties are mutual "
                                                                  "exclusive"))
        if isinstance(extra, dict):
            sub = ssv.without_defaults("inside additionalProperties applying to object metadata") \
                if ssv.inside_meta else ssv
            _walk(extra, f"{path}.additionalProperties", sub, False, opts, errs, cel)
    for name, prop in props.items():
        sub = ssv
        if (is_root or s.get("x-kubernetes-embedded-resource") is True) and name in META_FIELDS:
            sub = sub.in_meta()
            if is_root:
                sub = sub.without_defaults(f"in top-level {name}")
        _walk(prop, f"{path}.properties[{name}]", sub, False, opts, errs, cel)
    if isinstance(_get(s, "not"), dict):
        _walk(s["not"], f"{path}.not", ssv, False, opts, errs, cel)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub_schema in enumerate(_get(s, key) or []):
            _walk(sub_schema, f"{path}.{key}[{i}]", ssv, False, opts, errs, cel)
    for name, sub_schema in (_get(s, "definitions") or {}).items():
        _walk(sub_schema, f"{path}.definitions[{name}]", ssv, False, opts, errs, cel)
    items = s.get("items")
    if isinstance(items, dict):
        _walk(items, f"{path}.items", ssv, False, opts, errs, cel)
    elif isinstance(items, list):
        for i, sub_schema in enumerate(items):
            _walk(sub_schema, f"{path}.items[{i}]", ssv, False, opts, errs, cel)
    for name, dep in (_get(s, "dependencies") or {}).items():
        if isinstance(dep, dict):
            _walk(dep, f"{path}.dependencies[{name}]", ssv, False, opts, errs, cel)
    errs += _list_and_map_errors(s, path, opts)
    _validation_rules(s, path, errs, cel)


def _list_and_map_errors(s: Obj, path: str, opts: _Opts) -> list[Cause]:
    causes: list[Cause] = []
    kind = _s(s, "type")
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        causes.append(invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and kind != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        causes.append(required(f"{path}.type", detail) if not kind else invalid(f"{path}.type", kind, detail))
    if map_type is not None and map_type not in ("atomic", "granular"):
        causes.append(not_supported(f"{path}.x-kubernetes-map-type", map_type, ("atomic", "granular")))
    list_type = s.get("x-kubernetes-list-type")
    items = s.get("items")
    if list_type is not None and kind != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        causes.append(required(f"{path}.type", detail) if not kind else invalid(f"{path}.type", kind, detail))
    elif opts.require_atomic_set_type and list_type == "set" and isinstance(items, dict):
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        if _s(items, "type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            causes.append(invalid(f"{path}.items.x-kubernetes-list-type", items["x-kubernetes-list-type"], detail))
        elif _s(items, "type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            # kube reports the items' list type here (usually unset), not the map type
            causes.append(invalid(f"{path}.items.x-kubernetes-map-type", items.get("x-kubernetes-list-type"), detail))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        causes.append(not_supported(f"{path}.x-kubernetes-list-type", list_type, ("atomic", "set", "map")))
    keys = s.get("x-kubernetes-list-map-keys") or []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            causes.append(required(f"{path}.x-kubernetes-list-type", detail))
        elif list_type != "map":
            causes.append(invalid(f"{path}.x-kubernetes-list-type", list_type, detail))
    if list_type == "map":
        if not keys:
            causes.append(required(f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type "
                                                                         "is map"))
        if items is None:
            causes.append(required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map"))
        elif not isinstance(items, dict):
            causes.append(invalid(f"{path}.items", items, "must only have a single schema if x-kubernetes-list-type "
                                                          "is map"))
        elif _s(items, "type") != "object":
            causes.append(invalid(f"{path}.items.type", _s(items, "type"), "must be object if parent array's "
                                                                           "x-kubernetes-list-type is map"))
        else:
            item_props = _get(items, "properties") or {}
            seen: set[str] = set()
            for key in keys:
                if key in item_props:
                    if _s(item_props[key], "type") in ("array", "object"):
                        causes.append(invalid(f"{path}.items.properties[{key}].type", "object",
                                              "must be a scalar type if parent array's x-kubernetes-list-type is "
                                              "map"))
                else:
                    causes.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                          "entries must all be names of item properties"))
                if key in seen:
                    causes.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                          "must not contain duplicate entries"))
                seen.add(key)
    if opts.require_map_list_keys_map_set:
        causes += _map_list_keys_map_set(s, path)
    return causes


def _map_list_keys_map_set(s: Obj, path: str) -> list[Cause]:
    """Set and map lists are merged by identity, so their items and keys must always be present."""
    items = _get(s, "items")
    list_type = _get(s, "x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    causes = []
    if items.get("nullable") is True:
        causes.append(forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is "
                                                          f"{list_type}"))
    if list_type == "map":
        required_keys = set(_get(items, "required") or [])
        item_props = _get(items, "properties") or {}
        for key in _get(s, "x-kubernetes-list-map-keys") or []:
            prop = item_props.get(key)
            if not isinstance(prop, dict):
                continue
            if key not in required_keys and prop.get("default") is None:
                causes.append(required(f"{path}.items.properties[{key}].default",
                                       "this property is in x-kubernetes-list-map-keys, so it must have a default or "
                                       "be a required property"))
            if prop.get("nullable") is True:
                causes.append(forbidden(f"{path}.items.properties[{key}].nullable",
                                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    return causes


_NEWLINES = re.compile(r"[\n\r]+")


def _validation_rules(s: Obj, path: str, errs: list[Cause], cel: list[Cause]) -> None:
    """kube's static checks on x-kubernetes-validations, then each rule must compile."""
    for i, rule in enumerate(_get(s, "x-kubernetes-validations") or []):
        rpath = f"{path}.x-kubernetes-validations[{i}]"
        text, message = _s(rule, "rule"), _s(rule, "message")
        if not text.strip():
            errs.append(required(f"{rpath}.rule", "rule is not specified"))
        elif message and not message.strip():
            errs.append(invalid(f"{rpath}.message", message, "must be non-empty if specified"))
        elif _NEWLINES.search(message.strip()):
            errs.append(invalid(f"{rpath}.message", message, "must not contain line breaks"))
        elif _NEWLINES.search(text.strip()) and not message.strip():
            errs.append(required(f"{rpath}.message", "message must be specified if rule contains line breaks"))
        expression = _s(rule, "messageExpression")
        if expression and not expression.strip():
            errs.append(required(f"{rpath}.messageExpression", "messageExpression must be non-empty if specified"))
        reason = _get(rule, "reason")
        if reason is not None and reason not in VALIDATION_RULE_REASONS:
            errs.append(not_supported(f"{rpath}.reason", reason, VALIDATION_RULE_REASONS))
        field_path = _s(rule, "fieldPath")
        if field_path and not field_path.strip():
            errs.append(invalid(f"{rpath}.fieldPath", field_path, "must be non-empty if specified"))
        if _NEWLINES.search(field_path):
            errs.append(invalid(f"{rpath}.fieldPath", field_path, "must not contain line breaks"))
        for part, detail in rule_errors(rule):
            cel.append(invalid(f"{rpath}.{part}", _s(rule, part) if part != "optionalOldSelf" else True, detail))


def schema_uses_cel(schema: Any) -> bool:
    """Whether any node of a schema carries x-kubernetes-validations rules."""
    return _schema_has(schema, lambda n: bool(_get(n, "x-kubernetes-validations")))


# -- defaults: ValidateDefaults, pruning and value validation ------------------------------------

def validate_defaults(schema: Obj, path: str, require_pruned: bool = True) -> list[Cause]:
    """Every default must survive pruning and validate against its own schema node.

    Run only on structural schemas. The root counts as an embedded resource, so defaults under
    its apiVersion/kind/metadata are judged as metadata (here: by value only).
    """
    return _defaults(schema, path, False, require_pruned, root=True)


def _defaults(s: Obj, path: str, inside_meta: bool, require_pruned: bool, root: bool = False) -> list[Cause]:
    embedded = root or s.get("x-kubernetes-embedded-resource") is True
    if embedded:
        inside_meta = False
    causes: list[Cause] = []
    default = s.get("default")
    if default is not None:
        dpath = f"{path}.default"
        if not inside_meta and require_pruned:
            pruned = copy.deepcopy(default)
            prune(pruned, s, embedded)
            if pruned != default:
                causes.append(invalid(dpath, default, "must not have unknown fields"))
        causes += value_causes(dpath, default, s)
    if isinstance(_get(s, "items"), dict):
        causes += _defaults(s["items"], f"{path}.items", inside_meta, require_pruned)
    for name, sub in (_get(s, "properties") or {}).items():
        causes += _defaults(sub, f"{path}.properties[{name}]", inside_meta or (embedded and name in META_FIELDS),
                            require_pruned)
    return causes


def prune(value: Any, s: Obj | None, resource_root: bool = False) -> None:
    """Drop, in place, object fields the structural schema does not specify (kube's pruning)."""
    if s is None:
        return
    if isinstance(value, dict):
        props = _get(s, "properties") or {}
        extra = _get(s, "additionalProperties")
        preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = resource_root or s.get("x-kubernetes-embedded-resource") is True
        for key in list(value):
            if embedded and key in META_FIELDS:
                continue
            if key in props:
                prune(value[key], props[key], False)
            elif isinstance(extra, dict):
                prune(value[key], extra, False)
            elif extra is True or preserve:
                continue
            else:
                del value[key]
    elif isinstance(value, list) and isinstance(_get(s, "items"), dict):
        for item in value:
            prune(item, s["items"], False)


def _has_unpruned_defaults(schema: Obj) -> bool:
    """Whether a stored schema already has defaults with unknown fields (then updates may keep them)."""
    if not _schema_has(schema, lambda n: _get(n, "default") is not None):
        return False
    if _structural_init_error(schema) is not None or validate_structural(schema, ""):
        return False

    def walk(s: Obj) -> bool:
        default = s.get("default")
        if default is not None:
            pruned = copy.deepcopy(default)
            prune(pruned, s, s.get("x-kubernetes-embedded-resource") is True)
            if pruned != default:
                return True
        subs = [s["items"]] if isinstance(_get(s, "items"), dict) else []
        return any(walk(x) for x in subs + list((_get(s, "properties") or {}).values()))

    return walk(schema)


def _go_value(value: Any) -> str:
    """fmt's %v for a JSON value, as kube-openapi puts limits and enum values in messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if value is None:
        return "<nil>"
    if isinstance(value, (str, int, float)):
        return str(value)
    return render_value(value)


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return json_type(value) == kind


@dataclass
class _Problem:
    code: str
    name: str
    value: Any = None
    detail: Any = None
    extra: list[Any] = field(default_factory=list)


def _check(value: Any, s: Obj, name: str, out: list[_Problem]) -> None:
    """kube-openapi's schema validation of one value (type, enum, bounds, junctors, nested fields)."""
    if value is None and s.get("nullable") is True:
        return
    kind = _s(s, "type")
    if s.get("x-kubernetes-int-or-string") is True and not kind:
        if not (_type_ok(value, "integer") or isinstance(value, str)):
            out.append(_Problem("type", name, value, "integer,string", [json_type(value)]))
            return
    elif kind and not _type_ok(value, kind):
        out.append(_Problem("type", name, value, kind, [json_type(value)]))
        return
    where = f"{name} in body"
    for sub in _get(s, "allOf") or []:
        _check(value, sub, name, out)
    if (any_of := _get(s, "anyOf")) and not any(_passes(value, sub, name) for sub in any_of):
        out.append(_Problem("invalid", name, value, f"{where} must validate at least one schema (anyOf)"))
    if (one_of := _get(s, "oneOf")) and sum(_passes(value, sub, name) for sub in one_of) != 1:
        out.append(_Problem("invalid", name, value, f"{where} must validate one and only one schema (oneOf)"))
    if isinstance(_get(s, "not"), dict) and _passes(value, s["not"], name):
        out.append(_Problem("invalid", name, value, f"{where} must not validate the schema (not)"))
    enum = _get(s, "enum")
    if isinstance(enum, list) and enum and not any(json_equal(value, e) for e in enum):
        out.append(_Problem("enum", name, value, None, [_go_value(e) for e in enum]))
    if isinstance(value, str):
        length = len(value)
        if isinstance(_get(s, "maxLength"), (int, float)) and length > s["maxLength"]:
            out.append(_Problem("toolong", name, value, int(s["maxLength"])))
        if isinstance(_get(s, "minLength"), (int, float)) and length < s["minLength"]:
            out.append(_Problem("invalid", name, value, f"{where} should be at least {int(s['minLength'])} chars long"))
        pattern = _s(s, "pattern")
        compiled = _python_regex(pattern) if pattern else None
        if compiled is not None and compiled.search(value) is None:
            out.append(_Problem("invalid", name, value, f"{where} should match '{pattern}'"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(value, s, name, out)
    if isinstance(value, list):
        if isinstance(_get(s, "maxItems"), (int, float)) and len(value) > s["maxItems"]:
            out.append(_Problem("toomany", name, len(value), int(s["maxItems"])))
        if isinstance(_get(s, "minItems"), (int, float)) and len(value) < s["minItems"]:
            out.append(_Problem("invalid", name, value, f"{where} should have at least {int(s['minItems'])} items"))
        if isinstance(_get(s, "items"), dict):
            for i, item in enumerate(value):
                _check(item, s["items"], f"{name}.{i}" if name else str(i), out)
    if isinstance(value, dict):
        _check_object(value, s, name, out)


def _check_number(value: float, s: Obj, name: str, out: list[_Problem]) -> None:
    where = f"{name} in body"
    maximum, minimum, multiple = _get(s, "maximum"), _get(s, "minimum"), _get(s, "multipleOf")
    if isinstance(maximum, (int, float)):
        if s.get("exclusiveMaximum") is True and value >= maximum:
            out.append(_Problem("invalid", name, value, f"{where} should be less than {_go_value(maximum)}"))
        elif value > maximum:
            out.append(_Problem("invalid", name, value,
                                f"{where} should be less than or equal to {_go_value(maximum)}"))
    if isinstance(minimum, (int, float)):
        if s.get("exclusiveMinimum") is True and value <= minimum:
            out.append(_Problem("invalid", name, value, f"{where} should be greater than {_go_value(minimum)}"))
        elif value < minimum:
            out.append(_Problem("invalid", name, value,
                                f"{where} should be greater than or equal to {_go_value(minimum)}"))
    if isinstance(multiple, (int, float)) and multiple > 0:
        ratio = value / multiple
        if not math.isclose(ratio, round(ratio), rel_tol=0, abs_tol=1e-9):
            out.append(_Problem("invalid", name, value, f"{where} should be a multiple of {_go_value(multiple)}"))


def _check_object(value: Obj, s: Obj, name: str, out: list[_Problem]) -> None:
    where = f"{name} in body"
    if isinstance(_get(s, "maxProperties"), (int, float)) and len(value) > s["maxProperties"]:
        out.append(_Problem("toomany", name, len(value), int(s["maxProperties"])))
    if isinstance(_get(s, "minProperties"), (int, float)) and len(value) < s["minProperties"]:
        out.append(_Problem("invalid", name, value,
                            f"{where} should have at least {int(s['minProperties'])} properties"))
    for key in _get(s, "required") or []:
        if key not in value:
            out.append(_Problem("required", _child(name, key)))
    props = _get(s, "properties") or {}
    extra = _get(s, "additionalProperties")
    for key, item in value.items():
        child = _child(name, key)
        if key in props:
            _check(item, props[key], child, out)
        elif isinstance(extra, dict):
            _check(item, extra, child, out)
        elif extra is False:
            out.append(_Problem("invalid", child, item, f"{child} in body is a forbidden property"))


def _passes(value: Any, s: Obj, name: str) -> bool:
    problems: list[_Problem] = []
    _check(value, s, name, problems)
    return not problems


def value_causes(path: str, value: Any, schema: Obj) -> list[Cause]:
    """A value's problems against a schema node, as kube's ValidateCustomResource words them."""
    problems: list[_Problem] = []
    _check(value, schema, "", problems)
    causes = []
    for p in problems:
        at = _child(path, p.name) if p.name else path
        if p.code == "required":
            causes.append(required(at))
        elif p.code == "enum":
            causes.append(not_supported(at, p.value, p.extra))
        elif p.code == "toolong":
            causes.append(too_long(at, p.detail))
        elif p.code == "toomany":
            causes.append(too_many(at, p.value, p.detail))
        elif p.code == "type":
            causes.append(Cause("FieldValueTypeInvalid", f"Invalid value: {render_value(p.value)}: {p.name} in body "
                                                         f'must be of type {p.detail}: "{p.extra[0]}"', at))
        else:
            causes.append(invalid(at, p.value, p.detail))
    return causes
