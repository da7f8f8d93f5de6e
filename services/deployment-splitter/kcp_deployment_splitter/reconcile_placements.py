"""Reconcile one Placement's status: which Locations it may use, their SyncTargets, the namespaces it governs.

Who may run where: a Placement uses a Location of its compute workspace only while whoever last set its spec (the
`scheduling.kcp.io/requester` annotation kcp's admission writes) may `bind` that Location there, asked of kcp with
a SubjectAccessReview in the compute workspace (kcp's verb, granted by that workspace's admin per team). A
Location it selects but may not bind is named in `BindPermitted=False` (`BindForbidden`), with the permission
missing; the Placement is `Pending` while it may use none. RBAC changes are not watched: answers are kept
`access_ttl` seconds and the Placement is looked at again after that.

`status.syncTargets` is what the namespace scheduler reads; `status.namespaces` counts the namespaces it governs;
`NamespacesPlaced=False` (`Conflict`) names the namespaces an older Placement governs instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpcommon.keys import ObjectKey
from kcpcommon.kubetime import format_time
from kcpcommon.store import CLUSTER_INDEX, IndexReader

from .names import COMPONENT
from .namespaces import opted_out
from .placements import (
    LOCATIONS,
    PLACEMENTS,
    governing,
    location_targets,
    location_workspace,
    selected_locations,
    selects_namespace,
)
from .status import with_times

log = structlog.get_logger(COMPONENT)

REQUESTER_ANNOTATION = "scheduling.kcp.io/requester"  # written by kcp's admission, never by the client
BIND = "bind"
READY, BIND_PERMITTED, NAMESPACES_PLACED = "Ready", "BindPermitted", "NamespacesPlaced"
SHOWN = 10  # names listed in a message before "and N more"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _condition(type_: str, ok: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": "True" if ok else "False", "reason": reason, "message": message}


def requester_of(placement: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    raw = ((placement.get("metadata") or {}).get("annotations") or {}).get(REQUESTER_ANNOTATION)
    try:
        found = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(found, dict) or not found.get("username"):
        return None
    return str(found["username"]), [str(g) for g in found.get("groups") or []]


class PlacementReconciler:
    """`reconcile(ObjectKey(cluster, "", placement))`."""

    def __init__(self, kcp: ClientFactory, *, placements: IndexReader, locations: IndexReader, targets: IndexReader,
                 namespaces: IndexReader, access_ttl: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.kcp = kcp
        self.placements = placements
        self.locations = locations
        self.targets = targets
        self.namespaces = namespaces
        self.access_ttl = access_ttl
        self._clock = clock
        self._now = now
        self._answers: dict[tuple[str, str, tuple[str, ...], str], tuple[bool, float]] = {}

    async def reconcile(self, key: ObjectKey) -> Result | None:
        placement = self.placements.get(key)
        if placement is None or (placement.get("metadata") or {}).get("deletionTimestamp"):
            return None
        workspace = location_workspace(placement)
        requester = requester_of(placement)
        conditions: list[dict[str, str]] = []
        allowed: list[str] = []
        targets: list[str] = []
        try:
            selected = selected_locations(placement, self.locations.by_index(CLUSTER_INDEX, workspace))
        except ValueError as exc:
            selected = []
            conditions.append(_condition(READY, False, "InvalidSelector", f"spec.locationSelectors: {exc}"))
        denied: list[str] = []
        for location in selected:
            name = str(location["metadata"]["name"])
            if requester is not None and await self._may_bind(workspace, requester, name):
                allowed.append(name)
            else:
                denied.append(name)
        if denied:
            who = f'User "{requester[0]}"' if requester else "No requester recorded on it: nobody"
            conditions.append(_condition(
                BIND_PERMITTED, False, "BindForbidden",
                f'{who} may not bind Location{"s" if len(denied) > 1 else ""} {_names(denied)} of workspace '
                f'"{workspace}": using one needs verb "{BIND}" on {LOCATIONS[1]}.scheduling.kcp.io with its name, '
                f"granted in that workspace"))
        elif selected:
            conditions.append(_condition(BIND_PERMITTED, True, "BindAllowed", f"may bind {_names(allowed)}"))
        if allowed:
            chosen = [loc for loc in selected if loc["metadata"]["name"] in allowed]
            targets = location_targets(chosen, self.targets.by_index(CLUSTER_INDEX, workspace))
        governed, conflicts = self._namespaces(key, placement)
        if not any(c["type"] == READY for c in conditions):
            if not selected:
                conditions.insert(0, _condition(READY, False, "NoLocation",
                                                f'no Location of workspace "{workspace}" is selected'))
            elif not allowed:
                conditions.insert(0, _condition(READY, False, "BindForbidden",
                                                "it may bind none of the Locations it selects"))
            elif not targets:
                conditions.insert(0, _condition(READY, False, "NoSyncTarget",
                                                f"Locations {_names(allowed)} group no SyncTarget"))
            else:
                conditions.insert(0, _condition(READY, True, "LocationsUsable",
                                                f"uses SyncTargets {_names(targets)} of workspace {workspace}"))
        if conflicts:
            conditions.append(_condition(NAMESPACES_PLACED, False, "Conflict",
                                         f"namespaces {_names(conflicts)} are placed by an older Placement"))
        elif governed:
            conditions.append(_condition(NAMESPACES_PLACED, True, "Placed", f"places {len(governed)} namespaces"))
        old = placement.get("status") or {}
        status = {"phase": "Pending" if not targets else ("Bound" if governed else "Unbound"),
                  "locations": allowed, "syncTargets": targets, "namespaces": len(governed),
                  "conditions": with_times(conditions, old.get("conditions"), format_time(self._now()),
                                            update_times=False)}
        if status != old:
            await self._write(key, placement, status)
        return Result(requeue_after=self.access_ttl) if selected else None

    def _namespaces(self, key: ObjectKey, placement: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        """The namespaces it governs, and those it selects that an older Placement governs."""
        governed: list[str] = []
        conflicts: list[str] = []
        placements = self.placements.by_index(CLUSTER_INDEX, key.cluster)
        for namespace in self.namespaces.by_index(CLUSTER_INDEX, key.cluster):
            if opted_out(namespace) or not selects_namespace(placement, namespace):
                continue
            winner, _ = governing(placements, namespace)
            name = str(namespace["metadata"]["name"])
            if winner is not None and winner["metadata"]["name"] == key.name:
                governed.append(name)
            else:
                conflicts.append(name)
        return sorted(governed), sorted(conflicts)

    async def _may_bind(self, workspace: str, requester: tuple[str, list[str]], location: str) -> bool:
        user, groups = requester
        cache_key = (workspace, user, tuple(groups), location)
        known = self._answers.get(cache_key)
        if known is not None and known[1] > self._clock():
            return known[0]
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": user, "groups": groups, "resourceAttributes": {
                      "group": "scheduling.kcp.io", "resource": LOCATIONS[1], "verb": BIND, "name": location}}}
        reviews = self.kcp.dynamic(workspace).resource("authorization.k8s.io/v1", "subjectaccessreviews",
                                                       namespaced=False)
        answer = await reviews.create(review)
        allowed = bool((answer.get("status") or {}).get("allowed"))
        self._answers[cache_key] = (allowed, self._clock() + self.access_ttl)
        return allowed

    async def _write(self, key: ObjectKey, placement: Mapping[str, Any], status: dict[str, Any]) -> None:
        body = {"apiVersion": PLACEMENTS[0], "kind": "Placement",
                "metadata": {"name": key.name, "resourceVersion": placement["metadata"]["resourceVersion"]},
                "status": status}
        resource = self.kcp.dynamic(key.cluster).resource(PLACEMENTS[0], PLACEMENTS[1], namespaced=False)
        try:
            await resource.replace(body, subresource="status")
        except APINotFoundError:
            return
        except APIClientError as exc:
            log.info("placement status not written; retrying", cluster=key.cluster, placement=key.name,
                     error=str(exc))
            raise
        log.info("placement status", cluster=key.cluster, placement=key.name, phase=status["phase"],
                 locations=status["locations"], targets=status["syncTargets"])
