"""Reconcile one root Deployment: place its replicas (its shares, shares.py), then sum their status into it.

Level-based: everything comes from the informers' caches and the clock, so the same state always
gives the same writes and a reconcile that finds nothing new writes nothing. The shares are one merge
patch of the root's metadata; the root's status, summed from what each target's syncer reports, is a
second write, of the status subresource.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.events import NORMAL, ClientEventSink, EventRecorder
from kcpcommon.keys import ObjectKey, sync_target_key
from kcpcommon.kubetime import format_time
from kcpcommon.metrics import get_or_create
from kcpcommon.store import CLUSTER_NAMESPACE_INDEX, IndexReader, cluster_namespace_value

from .capacity import CapacityTracker, capacity_of, pod_requests
from .disruption import Budgets, floor
from .expectations import Expectations
from .load import TargetLoad
from .names import COMPONENT, DEPLOYMENTS, PLACEMENT_ANNOTATION
from .placement import InvalidPlacement, Plan, parse_placement, plan, step
from .placements import namespace_targets
from .shares import is_root, share_view, shares_of, shares_patch
from .status import Child, aggregate, with_times
from .targets import TargetView, leaving, room_for, usable_for, view

log = structlog.get_logger(COMPONENT)

__all__ = ["Splitter", "is_root"]

BOUNDS_RECHECK = 15.0  # seconds until a root with replicas waiting for room under capacityBounds looks again
MOVED = "its namespace's Placement moves it off"

Views = dict[str, Mapping[str, Any]]  # target -> the root's share there, shaped as that cluster's Deployment


class Splitter:
    """Holds the caches and writers; `reconcile(key)` is the controller's reconciler."""

    def __init__(self, kcp: ClientFactory, *, deployments: IndexReader, targets: IndexReader, grace_period: float,
                 capacity: CapacityTracker, load: TargetLoad, expectations: Expectations,
                 registry: CollectorRegistry, now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 namespaces: IndexReader | None = None, budgets: IndexReader | None = None) -> None:
        self.kcp = kcp
        self.deployments = deployments
        self.budgets = budgets  # PodDisruptionBudgets (disruption.py); None: none served anywhere
        self.targets = targets
        self.namespaces = namespaces  # their placed labels name the SyncTargets of a workspace without its own
        self.load = load
        self.grace_period = grace_period
        self.capacity = capacity
        self.expectations = expectations
        self.events = EventRecorder(ClientEventSink(kcp), component=COMPONENT)  # started by the controller
        self._now = now
        self._decisions = get_or_create(Counter, registry, "kcp_deployment_splitter_decisions_total",
                                        "Placement decisions written, by reason", ("reason",))

    async def reconcile(self, key: ObjectKey) -> Result | None:
        root = self.deployments.get(key)
        if root is None or not is_root(root) or (root.get("metadata") or {}).get("deletionTimestamp"):
            self.capacity.forget(key)
            self.expectations.forget(key)
            return None  # gone: its syncers delete its copies (their finalizers hold it until they have)
        pending = self.expectations.waiting(key, self.deployments.get)
        if pending is not None:
            return Result(requeue_after=pending)  # our last writes are not in the cache yet: it would mislead
        views = self._shares(root)
        found, draining = namespace_targets(self.targets, self.namespaces, key.cluster, key.namespace)
        targets = leaving(view(found, now=self._now(), grace_period=self.grace_period), draining, MOVED)
        known = {(t.get("metadata") or {}).get("name") for t in found}
        waits = [targets.recheck_after]
        problem: dict[str, str] | None = None
        try:
            placement = parse_placement(((root.get("metadata") or {}).get("annotations") or {}).get(
                PLACEMENT_ANNOTATION))
        except InvalidPlacement as exc:
            placement, problem = None, _failure("InvalidPlacement", f"annotation {PLACEMENT_ANNOTATION}: {exc}")
        settled, held = False, ""
        replicas = int((root.get("spec") or {}).get("replicas", 1) or 0)
        budgets = self._budgets(key, root, replicas)
        if problem is None:
            usable = tuple(t for t in usable_for(targets, views) if placement is None or placement.get(t, 0) > 0)
            if not usable:
                problem = _failure("NoSchedulableSyncTarget", _no_target_message(key.cluster, targets, views))
            else:
                caps, bounded, wait = self._capacities(key, root, views, targets, usable)
                waits.append(wait)
                chosen = plan(replicas, usable, placement=placement, capacity=caps, bounded=bounded)
                root, views, settled, held = await self._place(
                    key, root, views, chosen, targets, caps,
                    gone={t for t in views if t not in known}
                    | {t for t, why in targets.lost.items() if why == "deleted"}, budgets=budgets)
                if sum(chosen.shares.values()) < replicas:
                    problem = _failure("CapacityBoundsReached", _bounds_message(
                        replicas - sum(chosen.shares.values()), targets, bounded))
                    waits.append(BOUNDS_RECHECK)  # room others free is not watched: look again
        await self._write_status(key, root, views, settled=settled, problem=problem, targets=targets,
                                 note=" ".join(n for n in (held, _ignored(budgets)) if n))
        later = [w for w in waits if w is not None]
        return Result(requeue_after=min(later) + 0.1) if later else None

    # --- shares ---

    def _shares(self, root: Mapping[str, Any]) -> Views:
        return {target: share_view(root, target, replicas) for target, replicas in shares_of(root).items()}

    def _budgets(self, key: ObjectKey, root: Mapping[str, Any], replicas: int) -> Budgets:
        """What the PodDisruptionBudgets of the root's namespace ask of its pods."""
        if self.budgets is None:
            return Budgets()
        found = self.budgets.by_index(CLUSTER_NAMESPACE_INDEX, cluster_namespace_value(key.cluster, key.namespace))
        labels = ((((root.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}
        return floor(found, labels, replicas)

    def _capacities(self, key: ObjectKey, root: Mapping[str, Any], views: Mapping[str, Mapping[str, Any]],
                    targets: TargetView, usable: tuple[str, ...]) -> tuple[dict[str, int], set[str], float | None]:
        """What each usable target can take of the root, and which of those caps are its admin's bounds."""
        requests = pod_requests(((root.get("spec") or {}).get("template")) or {})
        waits: list[float] = []
        caps: dict[str, int] = {}
        bounded: set[str] = set()
        for target in usable:
            allocatable = targets.allocatable.get(target) or {}
            if target in views:
                wait = self.capacity.observe(key, target, views[target], allocatable)
                if wait is not None:
                    waits.append(wait)
            # what the other Deployments on this target request comes off its allocatable
            slot = targets.keys.get(target) or sync_target_key(key.cluster, target)
            bounds = targets.bounds.get(target)
            used = self.load.used(slot, excluding=(key,)) if allocatable or bounds else {}
            cap = capacity_of(requests=requests, allocatable=allocatable, used=used,
                              learned=self.capacity.learned(key, target, allocatable, views.get(target)))
            bound = room_for(requests, bounds, used) if bounds else None
            if bound is not None and (cap is None or bound <= cap):
                cap = bound
                bounded.add(target)
            if cap is not None:
                caps[target] = cap
        return caps, bounded, (min(waits) if waits else None)

    async def _place(self, key: ObjectKey, root: Mapping[str, Any], views: Views,
                     chosen: Plan, targets: TargetView, caps: Mapping[str, int],
                     gone: set[str], budgets: Budgets) -> tuple[Mapping[str, Any], Views, bool, str]:
        """Move the root's shares a step towards `chosen`; returns the root and its shares as now written."""
        current = {t: int((c.get("spec") or {}).get("replicas") or 0) for t, c in views.items()}
        available = {t: Child(t, c).count("availableReplicas") if Child(t, c).status.get("observedGeneration", -1)
                     >= int((c.get("metadata") or {}).get("generation") or 0) else 0 for t, c in views.items()}
        # what runs as last reported, even a generation behind (a share scaled down only loses pods)
        reported = {t: min(Child(t, c).count("availableReplicas"), n) for t, c in views.items()
                    for n in (current[t],)}
        loose = step(chosen.shares, current, available, capacity=caps, gone=frozenset(gone))
        writes = step(chosen.shares, current, available, capacity=caps, gone=frozenset(gone),
                      floor=budgets.floor or 0, reported=reported)
        held = _held_message({t: n - loose[t] for t, n in writes.items() if n > loose[t]}, loose, reported,
                             budgets)
        if any(writes.get(t, 0) != current.get(t, 0) for t in set(writes) | set(current)):
            status = root.get("status") or {}
            rescaled = int(status.get("observedGeneration") or 0) < int((root.get("metadata") or {}).get(
                "generation") or 0)
            reason, message = _decision(chosen.shares, current, targets, caps, views, rescaled=rescaled)
            message = f"{message}; {held}" if held else message
            self._decisions.labels(reason).inc()
            log.info("placement decided", reason=reason, decision=message, cluster=key.cluster,
                     namespace=key.namespace, name=key.name, disruption_budget=budgets.budget or None)
            self.events.record({**root, "apiVersion": "apps/v1", "kind": "Deployment"}, NORMAL, reason, message,
                               cluster=key.cluster)  # written in the background
        shares = {t: n for t, n in writes.items() if n > 0}
        patch = shares_patch(root, shares, {t: self.capacity.note(key, t) for t in shares})
        if patch is not None:  # every target's share in one write: a spread or a failover is one round trip
            root = await self.kcp.dynamic(key.cluster).resource(*DEPLOYMENTS, namespaced=True).patch(
                key.name, patch, namespace=key.namespace)
            self.expectations.wrote(key, key, root)
        settled = shares == chosen.shares
        return root, self._shares(root), settled, held

    # --- status ---

    async def _write_status(self, key: ObjectKey, root: Mapping[str, Any], views: Views, *, settled: bool,
                            problem: dict[str, str] | None, targets: TargetView, note: str = "") -> None:
        kids = [Child(t, views[t], stale=targets.not_ready.get(t, "")) for t in sorted(views)]
        extra = [problem] if problem else []
        new = aggregate(root, kids, settled=settled, extra_conditions=extra)
        if note:  # a disruption budget holding replicas back: why the rollout is not done
            new["conditions"] = [{**c, "message": f"{c['message']} {note}"} if c["type"] == "Progressing" else c
                                 for c in new["conditions"]]
        old = dict(root.get("status") or {})
        new["conditions"] = with_times(new["conditions"], old.get("conditions"), format_time())
        if _same_status(old, new):
            return
        # a merge patch without a precondition: the splitter alone writes a root's status, while its syncers
        # write their annotations on it all the time (a replace on the cached resourceVersion would conflict)
        change: dict[str, Any] = {**{field: None for field in old if field not in new}, **new}
        written = await self.kcp.dynamic(key.cluster).resource(*DEPLOYMENTS, namespaced=True).patch(
            key.name, {"status": change}, namespace=key.namespace, subresource="status")
        self.expectations.wrote(key, key, written)


def _same_status(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    def strip(status: Mapping[str, Any]) -> dict[str, Any]:
        conds = [{k: v for k, v in c.items() if k not in ("lastUpdateTime", "lastTransitionTime")}
                 for c in status.get("conditions") or []]
        return {**status, "conditions": conds}
    return strip(old) == strip(new)


def _failure(reason: str, message: str) -> dict[str, str]:
    """kube's ReplicaFailure condition: the replicas cannot be placed as asked."""
    return {"type": "ReplicaFailure", "status": "True", "reason": reason, "message": message}


def _bounds_message(waiting: int, targets: TargetView, bounded: set[str]) -> str:
    full = "; ".join(f"{t} ({', '.join(f'{r}={v}' for r, v in sorted(targets.bounds[t].items()))})"
                     for t in sorted(bounded))
    return (f"{waiting} replica(s) wait for room: the SyncTargets that could take them are at their capacityBounds: "
            f"{full}; they are placed when a bound is raised or room frees up")


def _no_target_message(cluster: str, targets: TargetView, views: Mapping[str, Any]) -> str:
    lost = ", ".join(f"{t}: {why}" for t, why in sorted({**targets.lost, **targets.cordoned}.items())) or \
        "none registered"
    keep = f"; replicas stay on {', '.join(sorted(views))}" if views else ""
    return f"no Ready, schedulable SyncTarget in logical cluster {cluster} ({lost}){keep}"


def _decision(shares: Mapping[str, int], current: Mapping[str, int], targets: TargetView,
              caps: Mapping[str, int], views: Views, *,
              rescaled: bool) -> tuple[str, str]:
    """The Event reason and message for moving from `current` to `shares`."""
    spread = ", ".join(f"{t} {n}" for t, n in sorted(shares.items()))
    total = sum(shares.values())
    if not current:
        return "Split", f"split {total} replicas: {spread}"
    moved = []
    for target, have in sorted(current.items()):
        want = shares.get(target, 0)
        if want >= have:
            continue
        if target in targets.lost:
            moved.append(("Rebalanced", f"moved {have - want} replicas from {target}: {targets.lost[target]}"))
        elif target in caps and want == caps[target] and sum(current.values()) == total:
            status = views[target].get("status") or {}
            moved.append(("CapacityRebalanced",
                          f"moved {have - want} replicas from {target}: it runs {status.get('availableReplicas', 0)}"
                          f" of {have} (allocatable {_short(targets.allocatable.get(target) or {})})"))
    if moved:
        return moved[0][0], "; ".join(m for _, m in moved) + f" (now {spread})"
    if sum(current.values()) != total and rescaled:
        return "Scaled", f"scaled to {total} replicas: {spread}"
    return "Rebalanced", f"spread {total} replicas: {spread}"


def _held_message(held: Mapping[str, int], loose: Mapping[str, int], available: Mapping[str, int],
                  budgets: Budgets) -> str:
    """kube's eviction refusal, for the replicas a budget keeps where the plan would take them away."""
    if not held:
        return ""
    kept = ", ".join(f"{n} on {t}" for t, n in sorted(held.items()))
    after = sum(min(n, available.get(t, 0)) for t, n in loose.items())
    return (f"Kept {sum(held.values())} replicas ({kept}): moving them would violate the pod's disruption budget "
            f'"{budgets.budget}" ({budgets.rule}; {after} would be available, it needs {budgets.floor}).')


def _ignored(budgets: Budgets) -> str:
    return " ".join(f"Ignored PodDisruptionBudget {name}: {why}." for name, why in sorted(budgets.ignored.items()))


def _short(allocatable: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(allocatable.items()) if k in ("cpu", "memory", "pods")) or "unknown"

