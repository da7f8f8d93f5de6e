"""Which SyncTargets may run replicas now, which are lost (and why), and when that next changes.

kcp's scheduler rules are the anchor: a target is a home for new replicas while it is Ready, schedulable
and not past `spec.evictAfter`. A cordoned one (`spec.unschedulable`, as `kubectl cordon` a Node) keeps
what it holds and is given nothing new; evicting it (`spec.evictAfter` passed) is the drain. A target
that stops being Ready keeps the replicas it holds for a grace period (a blip must not move workloads
about) but is given no new ones; after that, and at once when it is evicted or deleted, its replicas go
to the others. A target that has never been Ready holds nothing, so it gets nothing. `TargetView` says all of it for one moment, so the decision
is a pure function of what the informers hold and the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from kcpcommon.keys import cluster_of, sync_target_key
from kcpcommon.kubetime import parse_time
from kcpcommon.quantity import try_parse_quantity as parse_quantity


def ready_condition(target: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (target.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond
    return None


@dataclass(frozen=True)
class TargetView:
    """The targets of one logical cluster at one moment."""

    usable: tuple[str, ...]  # replicas may be here (includes the cordoned: see usable_for)
    lost: Mapping[str, str]  # target name -> why its replicas leave ("NotReady for 30s", "unschedulable", ...)
    allocatable: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    recheck_after: float | None = None  # seconds until a grace period or evictAfter changes the answer
    # usable targets that keep what they hold and get nothing new -> why: cordoned ("unschedulable") or
    # inside their NotReady grace period ("NotReady for 12s")
    cordoned: Mapping[str, str] = field(default_factory=dict)
    # every target whose Ready is not True (in its grace period or lost): its syncer copies no status up, so
    # what its objects show is old. Without a duration, so a status naming it stays the same while it lasts.
    not_ready: Mapping[str, str] = field(default_factory=dict)
    # target name -> its sync_target_key (what the load of every workspace on it is summed by)
    keys: Mapping[str, str] = field(default_factory=dict)
    # target name -> `spec.capacityBounds`: the most its admin lets the workloads of every workspace request there
    bounds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def view(targets: Iterable[Mapping[str, Any]], *, now: datetime, grace_period: float) -> TargetView:
    """Sort `targets` (SyncTarget objects) into usable and lost, as of `now`."""
    usable: list[str] = []
    lost: dict[str, str] = {}
    cordoned: dict[str, str] = {}
    not_ready: dict[str, str] = {}
    allocatable: dict[str, Mapping[str, Any]] = {}
    keys: dict[str, str] = {}
    bounds: dict[str, Mapping[str, Any]] = {}
    waits: list[float] = []
    for target in targets:
        meta = target.get("metadata") or {}
        name = meta.get("name")
        if not name:
            continue
        spec = target.get("spec") or {}
        allocatable[name] = (target.get("status") or {}).get("allocatable") or {}
        if (workspace := cluster_of(target)) is not None:
            keys[name] = sync_target_key(workspace, name)
        if spec.get("capacityBounds"):
            bounds[name] = spec["capacityBounds"]
        if meta.get("deletionTimestamp"):
            lost[name] = "deleted"
            continue
        evict_at = parse_time(spec.get("evictAfter"))
        if evict_at is not None:
            until = (evict_at - now).total_seconds()
            if until <= 0:
                lost[name] = f"evicted after {spec['evictAfter']}"
                continue
            waits.append(until)
        if spec.get("unschedulable"):
            cordoned[name] = "unschedulable"
        cond = ready_condition(target)
        if cond is not None and cond.get("status") == "True":
            usable.append(name)
            continue
        since = parse_time((cond or {}).get("lastTransitionTime")) or parse_time(meta.get("creationTimestamp"))
        down_for = (now - since).total_seconds() if since is not None else grace_period
        if cond is None and since is None:
            lost[name] = "never Ready"
        elif down_for >= grace_period:
            lost[name] = f"NotReady for {int(down_for)}s"
        elif cond is None:
            lost[name] = "not Ready yet"  # a new target earns replicas by becoming Ready, not by waiting
        else:
            usable.append(name)
            cordoned.setdefault(name, f"NotReady for {int(down_for)}s")
            waits.append(grace_period - down_for)
        if name in lost:
            cordoned.pop(name, None)
        not_ready[name] = "NotReady" if cond is not None else "not Ready yet"
    return TargetView(tuple(sorted(usable)), lost, allocatable, min(waits) if waits else None, cordoned, not_ready,
                      keys, bounds)


def leaving(targets: TargetView, names: Iterable[str], why: str) -> TargetView:
    """`targets` with `names` lost for `why` (a namespace its Placement moves off them): their children shrink
    as the new ones become available, as for any lost target that has not gone."""
    gone = set(names) & set(targets.usable)
    if not gone:
        return targets
    return replace(targets, usable=tuple(t for t in targets.usable if t not in gone),
                   lost={**targets.lost, **dict.fromkeys(sorted(gone), why)},
                   cordoned={t: w for t, w in targets.cordoned.items() if t not in gone})


def usable_for(targets: TargetView, holding: Iterable[str]) -> tuple[str, ...]:
    """The targets one workload may be placed on: the Ready ones, and the cordoned ones that already hold
    some of it (a cordoned cluster, or a NotReady one through a blip, keeps its share but earns none)."""
    held = set(holding)
    return tuple(t for t in targets.usable if t not in targets.cordoned or t in held)


def placement_facts(target: Mapping[str, Any]) -> tuple[Any, ...]:
    """Everything `view` reads of one SyncTarget.

    The cluster controller rewrites each SyncTarget every heartbeat (`lastSyncerHeartbeatTime`, a
    condition message with an age in it); an update that leaves these facts alone cannot move a
    replica, so it need not wake every root of the logical cluster.
    """
    meta = target.get("metadata") or {}
    spec = target.get("spec") or {}
    cond = ready_condition(target) or {}
    return (meta.get("deletionTimestamp"), meta.get("creationTimestamp"), spec.get("unschedulable"),
            spec.get("evictAfter"), cond.get("status"), cond.get("lastTransitionTime"),
            (target.get("status") or {}).get("allocatable") or {}, spec.get("capacityBounds") or {})


def room_for(requests: Mapping[str, Any], allocatable: Mapping[str, Any],
             used: Mapping[str, Any] | None = None) -> int | None:
    """How many more replicas with `requests` fit in `allocatable` minus `used` (None: nothing to go by)."""
    used = used or {}
    fits: list[int] = []
    for resource, per_replica in {**dict(requests), "pods": 1}.items():
        need = parse_quantity(per_replica)
        have = parse_quantity(allocatable.get(resource)) if resource in allocatable else None
        if need is None or have is None or need <= 0:
            continue
        taken = parse_quantity(used.get(resource, 0)) or 0
        fits.append(max(0, int((have - taken) // need)))
    return min(fits) if fits else None
