"""An APIBinding's way to Bound, as kcp's binding controller takes it: the export must exist at its path
and have an identity, each of its latest schemas must exist and be servable, and no group/resource of
them may already be served in the consumer (by another binding, or by a CRD). Then `status.boundResources`
names what is bound, with the export's identity, and every replica serves it (see serving). Each miss is
a Ready=False condition whose reason and message say what is missing; the binding stays `Binding`. A Bound
binding follows the export's latest schemas, except where one would break it (evolution.py): there it keeps
the schema it has, and `BindingUpToDate=False` says why."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kcp_apiserver.apiextensions.servable import Unservable
from kcp_apiserver.apis.claims import CLAIMS_CONDITION, Claims, decide_claims
from kcp_apiserver.apis.evolution import incompatibilities
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
UP_TO_DATE_CONDITION = "BindingUpToDate"
UP_TO_DATE = "SchemasUpToDate"
INCOMPATIBLE_SCHEMA = "IncompatibleSchema"


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
    held: list[str] = field(default_factory=list)  # why some stay on the schema they had (evolution.py)
    claims: Claims = field(default_factory=Claims)  # the export's permission claims, as the binding answers them


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
    status = binding.get("status") or {}
    current = {(b.get("group"), b.get("resource")): b for b in status.get("boundResources") or []
               if isinstance(b, dict)} if status.get("phase") == BOUND else {}
    bound: list[Obj] = []
    held: list[str] = []
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
        entry: Obj = {"group": res.group, "resource": res.plural, "storageVersions": [res.storage_version],
                 "schema": {"name": schema_name, "UID": schema["metadata"].get("uid", ""), "identityHash": identity}}
        was = current.pop((res.group, res.plural), None)
        old_name = str(((was or {}).get("schema") or {}).get("name") or "")
        old_schema = lookups.schema(provider, old_name) if was is not None and old_name != schema_name else None
        problems = incompatibilities(old_schema, schema) if old_schema is not None else []
        if was is not None and problems:  # the consumer keeps what it has; the export's status names it
            held.append(f'{res.group_resource} stays on APIResourceSchema "{old_name}": "{schema_name}" would '
                        f'break it ({"; ".join(problems)})')
            entry = was
        bound.append(entry)
    for (group, resource), was in current.items():  # no longer offered: kept, never dropped with its objects
        held.append(f"{resource}.{group} stays bound: the export no longer offers it" if group else
                    f"{resource} stays bound: the export no longer offers it")
        bound.append(was)
    return Bind(provider, bound, held, decide_claims(export, binding))


def wanted_status(current: Any, outcome: NotReady | Bind) -> Obj:
    """The binding's status for an outcome; a condition's transition time moves only with its status."""
    status: Obj = dict(current) if isinstance(current, dict) else {}
    if isinstance(outcome, Bind):
        status.update(phase=BOUND, apiExportClusterName=outcome.provider, boundResources=outcome.bound_resources)
        status["conditions"] = with_condition(status.get("conditions"), "Ready", "True", BOUND_REASON,
                                              "the export's types are served in this workspace")
        up_to_date = ("False", INCOMPATIBLE_SCHEMA, "; ".join(outcome.held)) if outcome.held else \
            ("True", UP_TO_DATE, "every bound type follows the export's latest schema")
        status["conditions"] = with_condition(status["conditions"], UP_TO_DATE_CONDITION, *up_to_date)
        claims = outcome.claims.condition()
        for name, value in (("exportPermissionClaims", outcome.claims.claimed),
                            ("appliedPermissionClaims", outcome.claims.applied)):
            if value:
                status[name] = value
            else:
                status.pop(name, None)
        if claims is not None:
            status["conditions"] = with_condition(status["conditions"], CLAIMS_CONDITION, *claims)
        else:
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != CLAIMS_CONDITION]
        return status
    if status.get("phase") != BOUND:
        status["phase"] = BINDING
        status.pop("boundResources", None)
    status["conditions"] = with_condition(status.get("conditions"), "Ready", "False", outcome.reason, outcome.message)
    return status


def with_condition(conditions: Any, kind: str, status: str, reason: str, message: str) -> list[Obj]:
    """`conditions` with condition `kind` set (in its place, or last); its transition time moves only with its
    status."""
    kept = [c for c in conditions or [] if isinstance(c, dict)]
    at = next((i for i, c in enumerate(kept) if c.get("type") == kind), len(kept))
    previous = kept[at] if at < len(kept) else None
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == status else None
    wanted = {"type": kind, "status": status, "lastTransitionTime": since or now_rfc3339(), "reason": reason,
              "message": message}
    return [*kept[:at], wanted, *kept[at + 1:]]


def held_message(binding: Obj) -> str | None:
    """Why a bound binding stays on an older schema, or None when it follows the export."""
    for condition in (binding.get("status") or {}).get("conditions") or []:
        if condition.get("type") == UP_TO_DATE_CONDITION and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return None
