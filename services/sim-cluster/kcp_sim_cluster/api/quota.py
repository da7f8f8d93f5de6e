"""core/v1 ResourceQuotas and kube's ResourceQuota admission.

A create in a namespace with quotas is charged to each quota that tracks what it uses (`count/<plural>.<group>`,
the legacy counts such as `pods` and `services`, a pod's `requests.cpu`, `limits.memory`...; a scoped quota
only pods of its scopes). kube's words refuse it: `exceeded quota: NAME, requested: ..., used: ..., limited:
...`, `failed quota: NAME: must specify ...` for a container without a tracked compute resource, `status
unknown for quota` before the quota controller has counted. An admitted create adds its usage to the quota's
`status.used` in the same read-modify-write as the check (as kube's admission does), so two creates racing for
the last unit cannot both have it; the quota controller (controlplane/quota.py) recounts from storage. An update is charged what it grows,
as kube's Service and claim evaluators charge it: `services.loadbalancers` and `services.nodeports` when a
Service's type changes, `requests.storage` when a claim asks for more.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kcp_apiserver.embedding import (
    AGE,
    CREATE,
    NAME,
    UPDATE,
    Attributes,
    Column,
    Resource,
    Storage,
    kube_resource,
    qos_class,
    scope_prefix,
)
from kcp_sim_cluster.api.policylister import PolicyLister
from kcp_sim_cluster.api.priority import forbidden
from kcpcommon.quantity import format_quantity, try_parse_quantity

LEGACY_COUNTS = frozenset({"pods", "services", "secrets", "configmaps", "persistentvolumeclaims",
                           "replicationcontrollers", "resourcequotas"})
BARE_COMPUTE = ("cpu", "memory", "ephemeral-storage")  # counted as requests under their bare name too
CONTAINER_CONSTRAINED = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                                   "limits.memory"})  # kube's pod evaluator: each container must name these
POD_SCOPES = frozenset({"Terminating", "NotTerminating", "BestEffort", "NotBestEffort"})
# kube's evaluators that charge updates (a Service turned LoadBalancer, a claim grown); counts charge creates only
UPDATE_CHARGED = frozenset({"services", "persistentvolumeclaims"})
View = Mapping[str, Any]  # an object only read (an informer's, or storage's)


def spec_of(obj: View) -> View:
    return obj.get("spec") or {}  # type: ignore[no-any-return]


def _cells(quota: View, limits: bool) -> str:
    hard = (quota.get("status") or {}).get("hard") or {}
    used = (quota.get("status") or {}).get("used") or {}
    return ", ".join(f"{name}: {used.get(name, '0')}/{hard[name]}" for name in sorted(hard)
                     if name.startswith("limits.") == limits)


RESOURCE_QUOTA = (
    NAME, AGE,
    Column("Request", "string", lambda q: _cells(q, False), "Request represents a minimum amount of cpu/memory "
           "that a container may consume."),
    Column("Limit", "string", lambda q: _cells(q, True), "Limits control the maximum amount of cpu/memory that "
           "a container may use independent of contention on the node."),
)


@functools.cache
def resource_quotas(release: str) -> Resource:
    return kube_resource("", "v1", "ResourceQuota", "resourcequotas", namespaced=True, release=release,
                         short_names=("quota",), has_status=True, columns=RESOURCE_QUOTA)


def count_name(group: str, plural: str) -> str:
    return f"count/{plural}.{group}" if group else f"count/{plural}"


def _pod_totals(pod: View, kind: str) -> dict[str, Fraction]:
    """kube's PodRequestsAndLimits: containers summed, at least each init container, plus the overhead."""
    total: dict[str, Fraction] = {}
    for container in spec_of(pod).get("containers") or []:
        for name, value in ((container.get("resources") or {}).get(kind) or {}).items():
            total[name] = total.get(name, Fraction(0)) + (try_parse_quantity(value) or 0)
    for init in spec_of(pod).get("initContainers") or []:
        for name, value in ((init.get("resources") or {}).get(kind) or {}).items():
            total[name] = max(total.get(name, Fraction(0)), try_parse_quantity(value) or Fraction(0))
    for name, value in (spec_of(pod).get("overhead") or {}).items():
        if name in total:
            total[name] += try_parse_quantity(value) or 0
    return total


def terminal(pod: View) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def usage(group: str, plural: str, obj: View) -> dict[str, Fraction]:
    """What one object uses of a quota (kube's evaluators): its count, and a pod's compute resources."""
    used = {count_name(group, plural): Fraction(1)}
    if group:
        return used
    if plural in LEGACY_COUNTS:
        used[plural] = Fraction(1)
    if plural == "pods":
        if terminal(obj):
            return {}
        for name, value in _pod_totals(obj, "requests").items():
            used[f"requests.{name}"] = value
            if name in BARE_COMPUTE:
                used[name] = value
        for name, value in _pod_totals(obj, "limits").items():
            used[f"limits.{name}"] = value
    elif plural == "services":
        kind = spec_of(obj).get("type")
        if kind == "LoadBalancer":
            used["services.loadbalancers"] = Fraction(1)
        if kind in ("NodePort", "LoadBalancer"):
            used["services.nodeports"] = Fraction(len(spec_of(obj).get("ports") or []))
    elif plural == "persistentvolumeclaims":
        storage = ((spec_of(obj).get("resources") or {}).get("requests") or {}).get("storage")
        if storage is not None:
            used["requests.storage"] = try_parse_quantity(storage) or Fraction(0)
    return used


def update_usage(group: str, plural: str, obj: View, old: View) -> dict[str, Fraction]:
    """What an update adds to a quota's usage: what it grows, never a credit for what it shrinks."""
    if group or plural not in UPDATE_CHARGED:
        return {}
    before = usage(group, plural, old)
    return {r: v - before.get(r, Fraction(0)) for r, v in usage(group, plural, obj).items()
            if v > before.get(r, Fraction(0))}


def matches_scopes(quota: View, group: str, plural: str, obj: View) -> bool:
    """A quota with scopes tracks only the pods in all of them (kube's pod scopes)."""
    scopes = set(spec_of(quota).get("scopes") or [])
    if not scopes:
        return True
    if group or plural != "pods" or not scopes <= POD_SCOPES:
        return False
    terminating = spec_of(obj).get("activeDeadlineSeconds") is not None
    best_effort = qos_class(dict(spec_of(obj))) == "BestEffort"
    wanted = {"Terminating": terminating, "NotTerminating": not terminating, "BestEffort": best_effort,
              "NotBestEffort": not best_effort}
    return all(wanted[s] for s in scopes)


def _pretty(values: dict[str, Any]) -> str:
    return ",".join(f"{name}={values[name]}" for name in sorted(values))


def _text(value: Fraction, name: str) -> str:
    return format_quantity(value, name.rsplit(".", 1)[-1])


def missing_constraints(pod: View, hard: dict[str, Any]) -> list[str]:
    """The tracked compute resources some container does not name (kube: `must specify ...`)."""
    required = CONTAINER_CONSTRAINED & set(hard)
    missing: set[str] = set()
    for container in spec_of(pod).get("containers") or []:
        resources = container.get("resources") or {}
        named = {*(f"requests.{n}" for n in resources.get("requests") or {}),
                 *(f"limits.{n}" for n in resources.get("limits") or {}), *(resources.get("requests") or {})}
        missing |= required - named
    return sorted(missing)


def charge(quota: View, delta: dict[str, Fraction]) -> dict[str, Any] | str:
    """The quota's new status.used with `delta` added, or kube's reason it cannot be."""
    name = quota["metadata"]["name"]
    hard = spec_of(quota).get("hard") or {}
    tracked = {r: v for r, v in delta.items() if r in hard}
    if not tracked:
        return dict((quota.get("status") or {}).get("used") or {})
    used = dict((quota.get("status") or {}).get("used") or {})
    unknown = sorted(r for r in tracked if r not in used)
    if unknown:
        return f"status unknown for quota: {name}, resources: {','.join(unknown)}"
    exceeded = [r for r, v in tracked.items()
                if (try_parse_quantity(used[r]) or 0) + v > (try_parse_quantity(hard[r]) or 0)]
    if exceeded:
        return (f"exceeded quota: {name}, requested: {_pretty({r: _text(tracked[r], r) for r in exceeded})}, "
                f"used: {_pretty({r: used[r] for r in exceeded})}, "
                f"limited: {_pretty({r: hard[r] for r in exceeded})}")
    for r, v in tracked.items():
        used[r] = _text((try_parse_quantity(used[r]) or 0) + v, r)
    return used


class QuotaAdmission:
    """kube's ResourceQuota admission plugin for creates and the updates that grow usage, over the quotas a
    PolicyLister reads; charged in storage."""

    def __init__(self, storage: Storage, quotas: PolicyLister) -> None:
        self.storage = storage
        self.quotas = quotas

    async def validate(self, attrs: Attributes) -> None:
        self.quotas.saw(attrs)
        if attrs.subresource or attrs.obj is None or not attrs.namespace:
            return
        res, obj = attrs.resource, attrs.obj
        if attrs.operation == CREATE:
            delta = usage(res.group, res.plural, obj)
        elif attrs.operation == UPDATE and attrs.old is not None:
            delta = update_usage(res.group, res.plural, obj, attrs.old)
        else:
            return
        if not delta:
            return
        for quota in await self.quotas.list(attrs.cluster, attrs.namespace):
            if not matches_scopes(quota, res.group, res.plural, obj):
                continue
            if attrs.operation == CREATE and not res.group and res.plural == "pods" and not terminal(obj):
                missing = missing_constraints(obj, spec_of(quota).get("hard") or {})
                if missing:
                    raise forbidden(res, attrs.name,
                                    f"failed quota: {quota['metadata']['name']}: must specify {','.join(missing)}")
            key = scope_prefix(self.quotas.resource.prefix, attrs.cluster, attrs.namespace) + quota["metadata"]["name"]
            await self._charge(key, quota, delta, attrs)

    async def _charge(self, key: str, quota: View, delta: dict[str, Fraction], attrs: Attributes) -> None:
        if not any(r in (spec_of(quota).get("hard") or {}) for r in delta):
            return

        async def add(current: Any) -> dict[str, Any] | None:
            answer = charge(current.obj, delta)
            if isinstance(answer, str):
                raise forbidden(attrs.resource, attrs.name, answer)
            updated = dict(current.obj)
            updated["status"] = {**(current.obj.get("status") or {}), "used": answer}
            return updated

        await self.storage.guaranteed_update(key, add, dry_run=attrs.ctx.dry_run)


def resources(release: str) -> tuple[Resource, ...]:
    return (resource_quotas(release),)
