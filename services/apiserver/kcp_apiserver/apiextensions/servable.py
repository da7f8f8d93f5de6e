"""Whether this server can serve a CRD found in etcd, and if not, why.

A CRD reaches etcd through validation, but etcd may hold CRDs that an older server accepted or that
were written around the API. One such CRD must stop neither the follower that serves every logical
cluster's CRDs nor the server's startup: it is not served, and its Established condition says why
(`InvalidSpec`, `InvalidSchema` or `ReservedStorage`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kcp_apiserver.apiextensions.fields import get, validate_dns1035_label
from kcp_apiserver.apiextensions.reserved import storage_conflict
from kcp_apiserver.apiextensions.resources import compiled_schema, resources_for, version_schema
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import invalid, required, type_invalid, validate_dns_subdomain
from kcp_apiserver.registry.resource import Obj, Resource

INVALID_SPEC = "InvalidSpec"
INVALID_SCHEMA = "InvalidSchema"
RESERVED_STORAGE = "ReservedStorage"


class Unservable(Exception):
    """A CRD this server does not serve; reason and message go onto its Established condition."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def servable_resources(crd: Obj, builtins: Iterable[Resource]) -> list[Resource]:
    """The resources a CRD serves, or `Unservable` when it cannot be served without harm."""
    if causes := _spec_causes(crd):
        raise Unservable(INVALID_SPEC, "; ".join(f"{c.field}: {c.message}" for c in causes))
    for i, version in enumerate(crd["spec"]["versions"]):
        try:
            compiled_schema(version_schema(version))
        except Exception as exc:  # whatever a schema no version of the server validated does to the compiler
            raise Unservable(INVALID_SCHEMA, f"spec.versions[{i}].schema.openAPIV3Schema cannot be compiled: "
                                             f"{type(exc).__name__}: {exc}") from exc
    try:
        resources = resources_for(crd)
    except Exception as exc:
        raise Unservable(INVALID_SPEC, f"cannot be served: {type(exc).__name__}: {exc}") from exc
    for res in resources:
        if (why := storage_conflict(res.group, res.plural, builtins)) is not None:
            raise Unservable(RESERVED_STORAGE, why)
    return resources


def unservable(crd: Obj, builtins: Iterable[Resource]) -> Unservable | None:
    """Why a CRD cannot be served, or None when it can."""
    try:
        servable_resources(crd, builtins)
    except Unservable as problem:
        return problem
    return None


def _spec_causes(crd: Obj) -> list[Cause]:
    """What serving reads first: names that shape keys and URLs, and versions. The rest of what
    validation would say is not needed to serve safely."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [type_invalid("spec", spec, "an object")]
    group = spec.get("group")
    causes = [] if group == "" else _dns_causes("spec.group", group, validate_dns_subdomain)  # "": the core group
    causes += _names_causes("spec.names", spec.get("names"))
    accepted = get(crd.get("status"), "acceptedNames")
    if get(accepted, "plural"):  # what is served once accepted
        causes += _names_causes("status.acceptedNames", accepted)
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        return [*causes, required("spec.versions")]
    for i, version in enumerate(versions):
        if not isinstance(version, dict):
            causes.append(type_invalid(f"spec.versions[{i}]", version, "an object"))
            continue
        causes += _dns_causes(f"spec.versions[{i}].name", version.get("name"), validate_dns1035_label)
        schema = get(version.get("schema"), "openAPIV3Schema")
        if schema is not None and not isinstance(schema, dict):
            causes.append(type_invalid(f"spec.versions[{i}].schema.openAPIV3Schema", schema, "an object"))
    return causes


def _names_causes(path: str, names: Any) -> list[Cause]:
    if not isinstance(names, dict):
        return [type_invalid(path, names, "an object")]
    causes = _dns_causes(f"{path}.plural", names.get("plural"), validate_dns1035_label)
    kind = names.get("kind")
    if not isinstance(kind, str) or not kind:
        causes.append(required(f"{path}.kind") if not kind else type_invalid(f"{path}.kind", kind, "a string"))
    for key in ("singular", "listKind"):
        if names.get(key) is not None and not isinstance(names[key], str):
            causes.append(type_invalid(f"{path}.{key}", names[key], "a string"))
    for key in ("shortNames", "categories"):
        value = names.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            causes.append(type_invalid(f"{path}.{key}", value, "a list of strings"))
    return causes


def _dns_causes(path: str, value: Any, check: Callable[[str], list[str]]) -> list[Cause]:
    """A name that becomes part of etcd keys and URLs: present, a string, and of kube's format."""
    if not value:
        return [required(path)]
    if not isinstance(value, str):
        return [type_invalid(path, value, "a string")]
    if errs := check(value):
        return [invalid(path, value, ",".join(errs))]
    return []
