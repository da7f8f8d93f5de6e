"""`apis.kcp.io/v1alpha1`, declared as kcp declares it and served as built-ins in every logical cluster:
APIResourceSchema (a CRD's spec, its `versions[].schema` the OpenAPI schema itself, as in kcp), APIExport
(which schemas a provider publishes, and the export's identity) and APIBinding (a consumer's request to serve
an export's types, with what it bound in its status)."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from kcp_apiserver.apiextensions.declared import CONDITIONS, STRING, declared_crd, object_schema
from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import forbidden, invalid
from kcp_apiserver.apis.schemas import schema_causes
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.strategy import FunctionStrategy

GROUP = "apis.kcp.io"
BIND_VERB = "bind"  # kcp's rule: `bind` on `apiexports` named as the export, in the provider's workspace
FINALIZER = "apis.kcp.io/apibinding-finalizer"  # the bound objects are deleted before the binding goes
BINDING, BOUND = "Binding", "Bound"

_ANY: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STRINGS: dict[str, Any] = {"type": "array", "items": STRING}
_NAMES: dict[str, Any] = {"type": "object", "required": ["kind", "plural"], "properties": {
    "kind": STRING, "listKind": STRING, "plural": STRING, "singular": STRING, "shortNames": _STRINGS,
    "categories": _STRINGS}}
_VERSION: dict[str, Any] = {"type": "object", "required": ["name", "served", "storage", "schema"], "properties": {
    "name": STRING, "served": {"type": "boolean"}, "storage": {"type": "boolean"},
    "deprecated": {"type": "boolean"}, "deprecationWarning": STRING, "schema": _ANY,
    "subresources": _ANY, "additionalPrinterColumns": {"type": "array", "items": _ANY}}}
_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}

SCHEMA_CRD = declared_crd(GROUP, "APIResourceSchema", "apiresourceschemas", object_schema(
    {"group": STRING, "names": _NAMES,
     "scope": {"type": "string", "enum": ["Cluster", "Namespaced"]},
     "versions": {"type": "array", "minItems": 1, "items": _VERSION}}, {}),
    [_AGE], [])
SCHEMA_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] = [
    "group", "names", "scope", "versions"]

# a provider's claim on a resource of its consumers (kcp's PermissionClaim): a built-in's group and resource, or
# another export's type named by that export's identity; `all` (every object) is the only selection kcp offers
_CLAIM: dict[str, Any] = {"type": "object", "required": ["resource"], "properties": {
    "group": STRING, "resource": STRING, "identityHash": STRING, "all": {"type": "boolean"}}}
_ACCEPTABLE_CLAIM: dict[str, Any] = {"type": "object", "required": ["resource", "state"], "properties": {
    **_CLAIM["properties"], "state": {"type": "string", "enum": ["Accepted", "Rejected"]}}}
CLAIM_ACCEPTED = "Accepted"

EXPORT_CRD = declared_crd(GROUP, "APIExport", "apiexports", object_schema(
    {"latestResourceSchemas": _STRINGS, "permissionClaims": {"type": "array", "items": _CLAIM},
     "identity": {"type": "object", "properties": {"secretRef": {"type": "object", "required": ["name"],
                                                                  "properties": {"namespace": STRING,
                                                                                 "name": STRING}}}}},
    {"identityHash": STRING, "conditions": CONDITIONS}),
    [{"name": "Identity", "type": "string", "jsonPath": ".status.identityHash", "priority": 1,
      "description": "The identity of the export's objects in storage"}, _AGE], [])

_BOUND_RESOURCE: dict[str, Any] = {"type": "object", "properties": {
    "group": STRING, "resource": STRING, "storageVersions": _STRINGS,
    "schema": {"type": "object", "properties": {"name": STRING, "UID": STRING, "identityHash": STRING}}}}
BINDING_CRD = declared_crd(GROUP, "APIBinding", "apibindings", object_schema(
    {"reference": {"type": "object", "required": ["export"], "properties": {"export": {
        "type": "object", "required": ["name"], "properties": {"path": STRING, "name": STRING}}}},
     "permissionClaims": {"type": "array", "items": _ACCEPTABLE_CLAIM}},
    {"phase": STRING, "apiExportClusterName": STRING, "conditions": CONDITIONS,
     "boundResources": {"type": "array", "items": _BOUND_RESOURCE},
     "exportPermissionClaims": {"type": "array", "items": _CLAIM},
     "appliedPermissionClaims": {"type": "array", "items": _CLAIM}}),
    [{"name": "Export", "type": "string", "jsonPath": ".spec.reference.export.name",
      "description": "The APIExport bound"},
     {"name": "Path", "type": "string", "jsonPath": ".spec.reference.export.path",
      "description": "Where the APIExport is"},
     {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "The current phase"},
     {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
      "description": "Whether the export's types are served"}, _AGE], [])
BINDING_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] = ["reference"]

(_SCHEMA,) = resources_for(SCHEMA_CRD)


def _validate_schema(obj: Obj, old: Obj | None) -> list[Cause]:
    """The declared shape first; then kube's CRD rules. The spec is fixed once written, as in kcp: bindings
    serve it (a new version of a type is a new schema, which the export rolls out: evolution.py)."""
    causes: list[Cause] = _SCHEMA.strategy.validate(obj)
    if old is not None and old.get("spec") != obj.get("spec"):
        causes.append(forbidden("spec", "an APIResourceSchema's spec is immutable; publish a new schema instead"))
    if causes or old is not None:
        return causes
    return schema_causes(obj)


API_RESOURCE_SCHEMA = dataclasses.replace(_SCHEMA, strategy=FunctionStrategy(validate=_validate_schema))
(API_EXPORT,) = resources_for(EXPORT_CRD)
(_BINDING,) = resources_for(BINDING_CRD)


def _validate_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    """The declared shape; the export a binding names is fixed for its life, as in kcp."""
    causes: list[Cause] = _BINDING.strategy.validate(obj)
    reference = (obj.get("spec") or {}).get("reference")
    if old is not None and reference != (old.get("spec") or {}).get("reference"):
        causes.append(invalid("spec.reference", reference, "field is immutable"))
    return causes


API_BINDING = dataclasses.replace(_BINDING, strategy=FunctionStrategy(validate=_validate_binding))
RESOURCES: tuple[Resource, ...] = (API_RESOURCE_SCHEMA, API_EXPORT, API_BINDING)


def export_reference(binding: Obj, cluster: str) -> tuple[str, str]:
    """(logical cluster, name) of the export a binding in `cluster` asks for; without a path, its own."""
    export = ((binding.get("spec") or {}).get("reference") or {}).get("export") or {}
    return str(export.get("path") or cluster), str(export.get("name") or "")


ClaimKey = tuple[str, str, str]  # (group, resource, identityHash): what a permission claim is about


def claim_key(claim: Any) -> ClaimKey:
    return (str(claim.get("group") or ""), str(claim.get("resource") or ""), str(claim.get("identityHash") or ""))


def identity_hash(cluster: str, name: str, uid: str) -> str:
    """An export's identity without `spec.identity.secretRef`: fixed for the export's life, new when it is made
    again (kcp generates a random key in a Secret; the export's own uid serves as that key here)."""
    return hashlib.sha256(f"{cluster}/{name}/{uid}".encode()).hexdigest()
