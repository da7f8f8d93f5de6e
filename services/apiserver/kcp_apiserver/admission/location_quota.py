"""Per-team quotas on a Location (issue 25's capacity bounds), enforced when a Deployment is written.

A compute workspace C's Location may carry `spec.quotas: [{workspace: W, hard: {pods, cpu, memory}}]`. A team's
workspace W places its namespaces on C's SyncTargets (the deployment splitter labels each placed Namespace
`placed.workload.kcp.io/<sync_target_key(C, target)>: Placed`). A write of a root Deployment in such a namespace that
raises what the team runs on a Location past its quota is refused with 403 and kube's ResourceQuota wording.

Which C: the `spec.locationWorkspace` of W's Placements (W itself when empty). The label key is a hash of (C,
target), so it cannot be read backwards; the Placements name every compute workspace W may be placed in, and the
splitter labels namespaces only from them. Usage is recomputed on each judged write (nothing is kept across
requests; the Locations are read from etcd, the rest from the server's watch caches), so raising a quota admits
the very next retry. What is counted: the Deployments (not syncers' mirrors) of W's namespaces `Placed` on a SyncTarget the Location selects; a namespace that
is `Draining` from a target is leaving it and neither counts nor is checked there. pods = replicas, cpu and memory
= replicas x the template's containers' requests. Only writes that raise usage are judged (as kube's quota), and
the splitter's shares (metadata only), syncers' mirrors and status writes never are. Two racing writes may both pass: kube
serializes them through the quota's status, this plugin does not.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcpcommon.keys import PLACED, cluster_of, is_upsynced, sync_target_key
from kcpcommon.keys import placed_keys as labels_placed_keys
from kcpcommon.labelselector import selector_matches
from kcpcommon.quantity import format_quantity, try_parse_quantity

EVERY_TEAM = "*"  # a quota's workspace that bounds every workspace on the Location together (the Location's bound)
# the names a quota's `hard` may use, and what each counts (kube's `requests.cpu` is the same as `cpu`)
RESOURCE_NAMES = {"pods": "pods", "cpu": "cpu", "requests.cpu": "cpu", "memory": "memory",
                  "requests.memory": "memory"}

Usage = dict[str, Fraction]


def is_deployment(res: Resource) -> bool:
    """kube's apps Deployments, whatever serves them (kcp's imported type under any export's identity)."""
    return res.group == "apps" and res.plural == "deployments"


def usage_of(obj: Mapping[str, Any] | None) -> Usage:
    """What a Deployment runs: pods = replicas (1 when unset, kube's default); cpu and memory = replicas x the
    summed requests of its template's containers (init containers are not counted)."""
    if obj is None:
        return {}
    spec = obj.get("spec") or {}
    replicas = spec.get("replicas")
    pods = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
    cpu, memory = Fraction(0), Fraction(0)
    for container in ((spec.get("template") or {}).get("spec") or {}).get("containers") or []:
        requests = ((container or {}).get("resources") or {}).get("requests") or {}
        cpu += try_parse_quantity(requests.get("cpu")) or 0
        memory += try_parse_quantity(requests.get("memory")) or 0
    return {"pods": Fraction(pods), "cpu": pods * cpu, "memory": pods * memory}


def counted(obj: Mapping[str, Any]) -> bool:
    """A Deployment the team wrote, not a syncer's mirror of a downstream object."""
    return not is_upsynced((obj.get("metadata") or {}).get("labels") or {})


def placed_keys(namespace: Mapping[str, Any]) -> frozenset[str]:
    """The SyncTarget keys a Namespace is Placed on (not those it is Draining from)."""
    return frozenset(k for k, v in labels_placed_keys((namespace.get("metadata") or {}).get("labels")).items()
                     if v == PLACED)


def hard_of(hard: Mapping[str, Any] | None) -> dict[str, tuple[str, Fraction]]:
    """A quota's limits by what they count: counted name -> (the name the admin wrote, the limit)."""
    out: dict[str, tuple[str, Fraction]] = {}
    for name, value in (hard or {}).items():
        counts = RESOURCE_NAMES.get(str(name))
        limit = try_parse_quantity(value)
        if counts is not None and limit is not None:
            out[counts] = (str(name), limit)
    return out


@dataclass(frozen=True)
class Quota:
    """One team's quota on one Location, and the keys of the SyncTargets that Location selects."""

    location: str
    workspace: str  # the compute workspace holding the Location
    team: str  # the workspace the quota bounds
    hard: Mapping[str, Any]
    targets: frozenset[str] = field(default_factory=frozenset)


def pretty(usage: Mapping[str, Fraction], names: Iterable[str]) -> str:
    """kube's prettyPrint of a ResourceList: `name=value`, by name, comma separated."""
    return ",".join(f"{name}={format_quantity(usage[name], name)}" for name in sorted(names))


def exceeded(quota: Quota, used: Usage, requested: Usage) -> list[tuple[str, Fraction, Fraction, Fraction]]:
    """(name, requested, used, limit) of each limit the request takes usage past; only resources it raises."""
    out = []
    for counts, (name, limit) in sorted(hard_of(quota.hard).items(), key=lambda item: item[1][0]):
        delta = requested.get(counts, Fraction(0))
        have = used.get(counts, Fraction(0))
        if delta > 0 and have + delta > limit:
            out.append((name, delta, have, limit))
    return out


def refusal(res: Resource, name: str, quota: Quota, over: list[tuple[str, Fraction, Fraction, Fraction]]) -> st.APIError:
    """403 in kube's ResourceQuota words, the quota named by its Location, compute workspace and team."""
    names = [n for n, *_ in over]
    requested = {n: r for n, r, _, _ in over}
    used = {n: u for n, _, u, _ in over}
    limited = {n: h for n, _, _, h in over}
    whom = "all workspaces" if quota.team == EVERY_TEAM else f'workspace "{quota.team}"'
    message = (f'{res.group_resource} "{name}" is forbidden: exceeded quota: location "{quota.location}" of '
               f'workspace "{quota.workspace}" for {whom}, requested: {pretty(requested, names)}, '
               f"used: {pretty(used, names)}, limited: {pretty(limited, names)}")
    details: dict[str, Any] = {"kind": res.plural, "name": name}
    if res.group:
        details["group"] = res.group
    return st.APIError(403, "Forbidden", message, details)


def add(total: Usage, more: Mapping[str, Fraction], sign: int = 1) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + sign * value


class QuotaReads(Protocol):
    """What the plugin reads per judged write (an implementation over the registry: `RegistryReads`)."""

    async def namespace(self, cluster: str, name: str) -> Obj | None: ...

    async def quotas(self, team: str, keys: frozenset[str]) -> list[Quota]: ...

    async def namespaces(self, cluster: str) -> list[Obj]: ...

    async def deployments(self, res: Resource, cluster: str) -> list[Obj]: ...


class LocationQuota:
    """The validating plugin. `last_seconds`: how long the last judged write's reads took (a diagnostic)."""

    def __init__(self, reads: QuotaReads) -> None:
        self.reads = reads
        self.last_seconds = 0.0

    async def validate(self, attrs: Attributes) -> None:
        if (not is_deployment(attrs.resource) or attrs.operation not in (CREATE, UPDATE) or attrs.obj is None
                or attrs.subresource not in ("", "scale") or not counted(attrs.obj)):
            return
        old = usage_of(attrs.old) if attrs.old is not None and counted(attrs.old) else {}
        requested: Usage = dict(usage_of(attrs.obj))
        add(requested, old, -1)
        if not any(v > 0 for v in requested.values()):
            return  # lowers or keeps usage: always allowed
        started = time.perf_counter()
        try:
            await self._judge(attrs, requested, old)
        finally:
            self.last_seconds = time.perf_counter() - started

    async def _judge(self, attrs: Attributes, requested: Usage, old: Usage) -> None:
        team = attrs.cluster
        namespace = await self.reads.namespace(team, attrs.namespace)
        keys = placed_keys(namespace) if namespace is not None else frozenset()
        if not keys:
            return
        quotas = [q for q in await self.reads.quotas(team, keys) if q.targets & keys and hard_of(q.hard)]
        if not quotas:
            return
        scopes = sorted({EVERY_TEAM if q.team == EVERY_TEAM else team for q in quotas})
        reads = await asyncio.gather(*(asyncio.gather(self.reads.namespaces(scope),
                                                      self.reads.deployments(attrs.resource, scope))
                                       for scope in scopes))
        seen = dict(zip(scopes, reads, strict=True))
        for quota in quotas:
            namespaces, deployments = seen[EVERY_TEAM if quota.team == EVERY_TEAM else team]
            on_location = {(cluster_of(ns) or team, str(ns["metadata"]["name"])) for ns in namespaces
                           if placed_keys(ns) & quota.targets}
            used: Usage = {}
            for obj in deployments:
                meta = obj.get("metadata") or {}
                where = (cluster_of(obj) or team, meta.get("namespace"))
                if where not in on_location or not counted(obj):
                    continue
                if where == (team, attrs.namespace) and meta.get("name") == attrs.name:
                    continue  # the object written: its stored version is `old`
                add(used, usage_of(obj))
            add(used, old)
            over = exceeded(quota, used, requested)
            if over:
                raise refusal(attrs.resource, attrs.name, quota, over)


class RegistryReads:
    """QuotaReads from the registry, types from the catalog (Placements, Locations and SyncTargets are served per
    workspace: a CRD, or bound under an export). Locations, which hold the quotas, are read from etcd, so a raised
    quota counts at once; the rest from the server's watch caches when given (`caches`), which trail etcd by the
    time an event takes to arrive: no round trip per read."""

    def __init__(self, registry: Callable[[], Registry], catalog: Catalog, caches: WatchCaches | None = None) -> None:
        self.registry = registry
        self.catalog = catalog
        self.caches = caches

    async def _read(self, res: Resource, cluster: str, *, name: str = "", fresh: bool = False) -> list[Obj]:
        scope = None if cluster == EVERY_TEAM else cluster  # every workspace (a Location's bound for all teams)
        if self.caches is None or fresh:
            if name:
                try:
                    return [await self.registry().get(res, cluster, "", name)]
                except st.APIError as exc:
                    if exc.code == 404:
                        return []
                    raise
            return (await self.registry().list(res, scope, "")).items
        cache = await self.caches.get(res)
        return self.registry().list_cached(res, cache, scope, "", name=name).items

    async def _list(self, cluster: str, group: str, plural: str, *, fresh: bool = False) -> list[Obj]:
        res = self.catalog.lookup(cluster, group, "v1alpha1", plural)
        return [] if res is None else await self._read(res, cluster, fresh=fresh)

    async def namespace(self, cluster: str, name: str) -> Obj | None:
        found = await self._read(NAMESPACE, cluster, name=name)
        return found[0] if found else None

    async def quotas(self, team: str, keys: frozenset[str]) -> list[Quota]:
        workspaces = {str((p.get("spec") or {}).get("locationWorkspace") or team)
                      for p in await self._list(team, "scheduling.kcp.io", "placements")}
        found: list[Quota] = []
        reads = [asyncio.gather(self._list(w, "workload.kcp.io", "synctargets"),
                                self._list(w, "scheduling.kcp.io", "locations", fresh=True))
                 for w in sorted(workspaces)]
        for workspace, (synctargets, locations) in zip(sorted(workspaces), await asyncio.gather(*reads), strict=True):
            targets = {sync_target_key(workspace, str(t["metadata"]["name"])): (t["metadata"].get("labels") or {})
                       for t in synctargets}
            if not keys & targets.keys():
                continue
            for location in locations:
                spec = location.get("spec") or {}
                for entry in spec.get("quotas") or []:
                    bounds = (entry or {}).get("workspace")
                    if bounds not in (team, EVERY_TEAM):
                        continue
                    selected = frozenset(key for key, labels in targets.items()
                                         if _selects(spec.get("instanceSelector"), labels))
                    found.append(Quota(str(location["metadata"]["name"]), workspace, str(bounds),
                                       entry.get("hard") or {}, selected))
        return found

    async def namespaces(self, cluster: str) -> list[Obj]:
        return await self._read(NAMESPACE, cluster)

    async def deployments(self, res: Resource, cluster: str) -> list[Obj]:
        return await self._read(res, cluster)


def _selects(selector: Any, labels: Mapping[str, str]) -> bool:
    try:
        return selector_matches(selector, labels)
    except ValueError:
        return False  # an unknown operator selects nothing, as the cluster controller reads it
