"""An APIBinding's way to Bound, as kcp's binding controller takes it: the export must exist at its path
and have an identity, each of its latest schemas must exist and be servable, and no group/resource of
them may already be served in the consumer (by another binding, or by a CRD). Then `status.boundResources`
names what is bound, with the export's identity, and every replica serves it (see serving). Each miss is
a Ready=False condition whose reason and message say what is missing; the binding stays `Binding`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kcp_apiserver.apiextensions.servable import Unservable
from kcp_apiserver.apis.schemas import bound_resources
from kcp_apiserver.apis.types import BINDING, BOUND, export_reference
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import now_rfc3339

EXPORT_NOT_FOUND = "APIExportNotFound"
EXPORT_NOT_READY = "APIExportNotReady"
SCHEMA_NOT_FOUND = "APIResourceSchemaNotFound"
INVALID_SCHEMA = "APIResourceSchemaInvalid"
NAMING_CONFLICT = "NamingConflict"
BOUND_REASON = "BindingCompleted"


class Lookups(Protocol):
    """What deciding a binding reads (the shared informers' objects, or a test's dicts)."""

    def export(self, cluster: str, name: str) -> Obj | None: ...
    def schema(self, cluster: str, name: str) -> Obj | None: ...
    def has_crd(self, cluster: str, name: str) -> bool: ...
    def claimed_by(self, cluster: str, group: str, resource: str) -> str | None: ...


@dataclass(frozen=True)
class NotReady:
    reason: str
    message: str
    waits_for: str  # the logical cluster where a change may help: the provider's, or the consumer's (conflicts)


@dataclass(frozen=True)
class Bind:
    provider: str  # the export's logical cluster
    bound_resources: list[Obj] = field(default_factory=list)


def decide(cluster: str, binding: Obj, lookups: Lookups, builtins: Iterable[Resource]) -> NotReady | Bind:
    """What a binding in `cluster` gets now."""
    name = binding["metadata"]["name"]
    provider, export_name = export_reference(binding, cluster)
    export = lookups.export(provider, export_name)
    where = provider
    if export is None:
        return NotReady(EXPORT_NOT_FOUND, f'APIExport "{export_name}" not found in workspace "{provider}"', where)
    identity = (export.get("status") or {}).get("identityHash")
    if not identity:
        return NotReady(EXPORT_NOT_READY, f'APIExport "{export_name}" of "{provider}" has no identity yet', where)
    bound: list[Obj] = []
    for schema_name in (export.get("spec") or {}).get("latestResourceSchemas") or []:
        schema = lookups.schema(provider, schema_name)
        if schema is None:
            return NotReady(SCHEMA_NOT_FOUND, f'APIResourceSchema "{schema_name}" of APIExport "{export_name}" '
                                              f'not found in workspace "{provider}"', where)
        try:
            resources = bound_resources(schema, identity, builtins)
        except Unservable as problem:
            return NotReady(INVALID_SCHEMA, f'APIResourceSchema "{schema_name}" cannot be served: {problem.message}',
                            where)
        res = resources[0]
        other = lookups.claimed_by(cluster, res.group, res.plural)
        if other is not None and other != name:
            return NotReady(NAMING_CONFLICT, f'{res.group_resource} is already bound in this workspace by '
                                             f'APIBinding "{other}"', cluster)
        if lookups.has_crd(cluster, res.group_resource):
            return NotReady(NAMING_CONFLICT, f'{res.group_resource} is already served in this workspace by '
                                             f'CustomResourceDefinition "{res.group_resource}"', cluster)
        bound.append({"group": res.group, "resource": res.plural, "storageVersions": [res.storage_version],
                      "schema": {"name": schema_name, "UID": schema["metadata"].get("uid", ""),
                                 "identityHash": identity}})
    return Bind(provider, bound)


def wanted_status(current: Any, outcome: NotReady | Bind) -> Obj:
    """The binding's status for an outcome; a condition's transition time moves only with its status."""
    status: Obj = dict(current) if isinstance(current, dict) else {}
    if isinstance(outcome, Bind):
        status.update(phase=BOUND, apiExportClusterName=outcome.provider, boundResources=outcome.bound_resources)
        ready = ("True", BOUND_REASON, "the export's types are served in this workspace")
    else:
        if status.get("phase") != BOUND:
            status["phase"] = BINDING
            status.pop("boundResources", None)
        ready = ("False", outcome.reason, outcome.message)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    previous = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == ready[0] else None
    conditions.append({"type": "Ready", "status": ready[0], "lastTransitionTime": since or now_rfc3339(),
                       "reason": ready[1], "message": ready[2]})
    status["conditions"] = conditions
    return status
