"""CustomResourceDefinition (apiextensions.k8s.io/v1) validation, as kube-apiserver does it.

Clients and conformance-style tests compare cause fields and messages, so the rules, field paths and
wording follow k8s.io/apiextensions-apiserver (validation.ValidateCustomResourceDefinition[Update]).
This module holds the entry point and the CRD-level rules (group, scope, names, versions, updates,
status, API approval); a version's schema is judged by `crdschemavalidation` (with `structural` and
`defaultsvalidation`), its subresources and columns by `versionfields`, conversion by `conversion`, all
on kube's internal view of the CRD (`internal`) once `shape` has vouched for the JSON types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kcp_apiserver.apiextensions.conversion import CONVERSION_REVIEW_VERSIONS, NONE_CONVERTER, validate_conversion
from kcp_apiserver.apiextensions.crdschemavalidation import SchemaOptions, schema_options, validate_validation
from kcp_apiserver.apiextensions.defaults import stored_versions_after
from kcp_apiserver.apiextensions.fields import Obj, enum_value, get, get_str, schema_has, validate_dns1035_label
from kcp_apiserver.apiextensions.internal import InternalSpec, InternalVersion, internal_spec
from kcp_apiserver.apiextensions.rulecost import estimated_cost_errors
from kcp_apiserver.apiextensions.shape import shape_errors
from kcp_apiserver.apiextensions.structural import structural_init_error
from kcp_apiserver.apiextensions.versionfields import (
    validate_column,
    validate_selectable,
    validate_subresources,
)
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required, validate_dns_subdomain

CLUSTER_SCOPED = "Cluster"
NAMESPACE_SCOPED = "Namespaced"
API_APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
# kcp serves kube's own workload APIs as CRDs imported from physical clusters (apps/v1 Deployments...),
# so these built-in group names are allowed although they have no dot.
KUBE_GROUPS_WITHOUT_DOTS = frozenset({"apps", "batch", "autoscaling", "policy", "extensions"})
# ... and the core group's (Services, Pods): group "" is served under /api/v1 and named `<plural>.core`, as kcp does
CORE_GROUP_NAME = "core"


def crd_name(plural: str, group: str) -> str:
    """The name a CRD of `plural` in `group` must have; the core group ("") is spelled `core`."""
    return f"{plural}.{group or CORE_GROUP_NAME}"


# -- the options for an update -----------------------------------------------------------------

@dataclass(frozen=True)
class _Opts:
    """kube's validationOptions: an update never tightens rules that the stored CRD already breaks."""

    require_open_api_schema: bool = True
    require_recognized_conversion_review_version: bool = True
    require_immutable_names: bool = False
    schema: SchemaOptions = field(default_factory=SchemaOptions)


def _old_schemas(old_spec: Any) -> list[Obj]:
    return [s for v in (get(old_spec, "versions") or [])
            if isinstance(s := get(get(v, "schema"), "openAPIV3Schema"), dict)]


def _options(old: Obj | None) -> _Opts:
    if old is None:
        return _Opts()
    spec = old.get("spec")
    versions = [v for v in (get(spec, "versions") or []) if isinstance(v, dict)]
    conversion = get(spec, "conversion")
    review = get(get(conversion, "webhook"), "conversionReviewVersions") or []
    return _Opts(
        require_open_api_schema=all(isinstance(get(get(v, "schema"), "openAPIV3Schema"), dict) for v in versions),
        require_recognized_conversion_review_version=(
            conversion is None or not review or any(v in CONVERSION_REVIEW_VERSIONS for v in review)),
        require_immutable_names=_condition_true(old, "Established"),
        schema=schema_options(_old_schemas(spec)),
    )


def _condition_true(crd: Obj, kind: str) -> bool:
    for cond in get(get(crd, "status"), "conditions") or []:
        if get(cond, "type") == kind:
            return get(cond, "status") == "True"
    return False


# -- the entry point ----------------------------------------------------------------------------

def validate_crd(crd: Obj, old: Obj | None = None) -> list[Cause]:
    """Every cause kube would give for creating (old=None) or updating this CRD, kube's order kept.

    ObjectMeta itself (name format, labels, ...) is checked by the registry; this adds the CRD rules.
    """
    shape = shape_errors(crd)
    if shape:
        return shape
    opts = _options(old)
    spec = internal_spec(crd.get("spec"))
    causes = _validate_name(crd, spec)
    causes += _validate_spec(spec, opts, core=_names_core_group(crd, spec))
    if old is not None:
        causes += _validate_immutable(spec, internal_spec(old.get("spec")), opts)
    causes += validate_names(get(crd.get("status"), "acceptedNames") or {}, "status.acceptedNames")
    causes += _validate_stored_versions(stored_versions_after(crd, old), spec.versions)
    causes += _validate_api_approval(crd, old)
    causes += _validate_preserve_unknown_fields(crd, old)
    return causes


def _validate_name(crd: Obj, spec: InternalSpec) -> list[Cause]:
    """The name must be `<plural>.<group>`: kube's nameValidationFn, applied to generateName too."""
    meta = crd.get("metadata") or {}
    wanted = crd_name(get_str(spec.names, "plural"), spec.group)
    causes = []
    for key in ("generateName", "name"):
        value = get(meta, key)
        if isinstance(value, str) and value and value != wanted:
            causes.append(invalid(f"metadata.{key}", value, 'must be spec.names.plural+"."+spec.group'))
    return causes


def _names_core_group(crd: Obj, spec: InternalSpec) -> bool:
    """An empty group means the core group only in a CRD named `<plural>.core`; otherwise it is missing."""
    name = get(crd.get("metadata"), "name") or get(crd.get("metadata"), "generateName")
    return not spec.group and name == crd_name(get_str(spec.names, "plural"), "")


def _validate_spec(spec: InternalSpec, opts: _Opts, *, core: bool = False) -> list[Cause]:
    causes: list[Cause] = []
    if not spec.group:
        if not core:
            causes.append(required("spec.group"))
    elif errs := validate_dns_subdomain(spec.group):
        causes.append(invalid("spec.group", spec.group, ",".join(errs)))
    elif len(spec.group.split(".")) < 2 and spec.group not in KUBE_GROUPS_WITHOUT_DOTS:
        causes.append(invalid("spec.group", spec.group, "should be a domain with at least one dot"))
    causes += enum_value("spec.scope", spec.scope, (CLUSTER_SCOPED, NAMESPACE_SCOPED))

    top_schema = get(spec.validation, "openAPIV3Schema")
    if opts.require_open_api_schema:
        if top_schema is None:
            for i, v in enumerate(spec.versions):
                if get(v.schema, "openAPIV3Schema") is None:
                    causes.append(required(f"spec.versions[{i}].schema.openAPIV3Schema"))
    elif not spec.preserve_unknown_fields and top_schema is None:
        for i, v in enumerate(spec.versions):
            if v.served and get(v.schema, "openAPIV3Schema") is None:
                causes.append(required(f"spec.versions[{i}].schema.openAPIV3Schema",
                                       "because otherwise all fields are pruned"))
    if spec.preserve_unknown_fields and _spec_has(spec, lambda n: get(n, "default") is not None):
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
        if not get_str(spec.names, key):
            causes.append(required(f"spec.names.{key}"))
    causes += validate_names(spec.names, "spec.names")
    any_status = _status_enabled(spec.subresources) or any(_status_enabled(v.subresources) for v in spec.versions)
    causes += _validate_validation(spec.validation, any_status, opts.schema, "spec.validation")
    causes += validate_subresources(spec.subresources, "spec.subresources")
    for i, col in enumerate(spec.columns):
        causes += validate_column(col, f"spec.additionalPrinterColumns[{i}]")
    if spec.selectable:
        if top_schema is None:
            causes.append(invalid("spec.selectableFields", "", "may only be set when validations.schema is included"))
        elif structural_init_error(top_schema) is None:
            causes += validate_selectable(spec.selectable, top_schema, "spec.selectableFields")

    strategy = get(spec.conversion, "strategy")
    if spec.conversion is not None and strategy != NONE_CONVERTER and spec.preserve_unknown_fields:
        causes.append(invalid("spec.conversion.strategy", strategy, "must be None if spec.preserveUnknownFields "
                                                                    "is true"))
    causes += validate_conversion(spec.conversion, "spec.conversion",
                                  require_recognized_review_version=opts.require_recognized_conversion_review_version)
    return causes


def _validate_validation(validation: Obj | None, status_enabled: bool, opts: SchemaOptions, path: str) -> list[Cause]:
    """A schema's own rules, then (on a schema they accept, as kube compiles rules only then) the estimated
    cost of its CEL rules."""
    causes = validate_validation(validation, status_enabled, opts, path)
    return causes or estimated_cost_errors(get(validation, "openAPIV3Schema"), f"{path}.openAPIV3Schema")


def _version_json(v: InternalVersion) -> Obj:
    return {"name": v.name, "served": v.served, "storage": v.storage}


def _status_enabled(subresources: Obj | None) -> bool:
    return get(subresources, "status") is not None


def validate_names(names: Obj, path: str) -> list[Cause]:
    """ValidateCustomResourceDefinitionNames: format only; emptiness is the spec's concern."""
    causes: list[Cause] = []
    for key in ("plural", "singular"):
        value = get_str(names, key)
        if value and (errs := validate_dns1035_label(value)):
            causes.append(invalid(f"{path}.{key}", value, ",".join(errs)))
    for key in ("kind", "listKind"):
        value = get_str(names, key)
        if value and (errs := validate_dns1035_label(value.lower())):
            causes.append(invalid(f"{path}.{key}", value,
                                  "may have mixed case, but should otherwise match: " + ",".join(errs)))
    for i, short in enumerate(get(names, "shortNames") or []):
        if errs := validate_dns1035_label(short):
            causes.append(invalid(f"{path}.shortNames[{i}]", short, ",".join(errs)))
    kind = get_str(names, "kind")
    if kind and kind == get_str(names, "listKind"):
        causes.append(invalid(f"{path}.listKind", kind, "kind and listKind may not be the same"))
    for i, category in enumerate(get(names, "categories") or []):
        if errs := validate_dns1035_label(category):
            causes.append(invalid(f"{path}.categories[{i}]", category, ",".join(errs)))
    return causes


def _validate_version(version: InternalVersion, path: str, status_enabled: bool, spec: InternalSpec,
                      opts: _Opts) -> list[Cause]:
    causes = [invalid(f"{path}.deprecationWarning", version.deprecation_warning, msg)
              for msg in _deprecation_warning_errors(version.deprecated, version.deprecation_warning)]
    causes += _validate_validation(version.schema, status_enabled, opts.schema, f"{path}.schema")
    causes += validate_subresources(version.subresources, f"{path}.subresources")
    for i, col in enumerate(version.columns):
        causes += validate_column(col, f"{path}.additionalPrinterColumns[{i}]")
    if version.selectable:
        # kube looks only at the version's own schema, which its v1 conversion may have hoisted away;
        # the hoisted schema is the same for every version, so it is the one that applies.
        schema = get(version.schema, "openAPIV3Schema") or get(spec.validation, "openAPIV3Schema")
        if schema is None:
            causes.append(invalid(f"{path}.selectableFields", "",
                                  "may only be set when `version.schema.openAPIV3Schema` is not included"))
        elif (err := structural_init_error(schema)) is not None:
            causes.append(invalid(f"{path}.schema.openAPIV3Schema", "", err))
        else:
            causes += validate_selectable(version.selectable, schema, f"{path}.selectableFields")
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


# -- update, status and annotation rules --------------------------------------------------------

def _validate_immutable(spec: InternalSpec, old: InternalSpec, opts: _Opts) -> list[Cause]:
    """Scope and kind shape storage once served; group and plural are part of the (immutable) name."""
    pairs = [("spec.group", spec.group, old.group), ("spec.names.plural", get_str(spec.names, "plural"),
                                                      get_str(old.names, "plural"))]
    if opts.require_immutable_names:
        pairs = [("spec.scope", spec.scope, old.scope),
                 ("spec.names.kind", get_str(spec.names, "kind"), get_str(old.names, "kind")), *pairs]
    return [invalid(path, new, "field is immutable") for path, new, was in pairs if new != was]


def _validate_stored_versions(stored: list[str], versions: list[InternalVersion]) -> list[Cause]:
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
    annotations = get(crd.get("metadata"), "annotations") or {}
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
    if not _is_protected_group(get_str(crd.get("spec"), "group")):
        return []
    state, reason = _approval_state(crd)
    if old is not None and _approval_state(old)[0] == state:
        return []
    path = f"metadata.annotations[{API_APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [required(path, reason)]
    if state == "invalid":
        return [invalid(path, (get(crd.get("metadata"), "annotations") or {}).get(API_APPROVAL_ANNOTATION, ""),
                        reason)]
    return []


def _validate_preserve_unknown_fields(crd: Obj, old: Obj | None) -> list[Cause]:
    if old is not None and get(old.get("spec"), "preserveUnknownFields") is True:
        return []
    if get(crd.get("spec"), "preserveUnknownFields") is True:
        return [invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                        "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")]
    return []


def _spec_has(spec: InternalSpec, pred: Callable[[Obj], bool]) -> bool:
    schemas = [get(spec.validation, "openAPIV3Schema")] + [get(v.schema, "openAPIV3Schema") for v in spec.versions]
    return any(schema_has(s, pred) for s in schemas)
