"""What each target can run of one root: estimated from allocatable, learned from replicas that never start.

Two sources, the smaller wins (Karmada's estimator is the anchor):
- allocatable: the SyncTarget's `status.allocatable` (summed over its Nodes) minus what the other
  Deployments assigned to it in the same logical cluster request, divided by one replica's requests;
- observation: a share (shares.share_view) that has all its replicas created but keeps some
  unavailable for the capacity grace period (its pods stay Pending, Unschedulable) can run only what
  is available. That is remembered until the target's allocatable changes or the retry period passes,
  then tried again. The memory is also written on the root (`splitter.kcp.io/capacity.<target>`: the
  replicas, the allocatable they were measured against, when), so a replica that takes over as leader
  starts from it instead of putting the replicas back where they did not fit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from kcpcommon.kubetime import format_time
from kcpcommon.quantity import try_parse_quantity as parse_quantity

from .names import CAPACITY_ANNOTATION
from .targets import parse_time, room_for


def pod_requests(template: Mapping[str, Any]) -> dict[str, Fraction]:
    """One replica's resource requests (its containers' summed; init containers are not running)."""
    total: dict[str, Fraction] = {}
    for container in ((template.get("spec") or {}).get("containers") or []):
        resources = container.get("resources") or {}
        requests = resources.get("requests") or resources.get("limits") or {}
        for name, value in requests.items():
            parsed = parse_quantity(value)
            if parsed is not None:
                total[name] = total.get(name, Fraction(0)) + parsed
    return total


def requested_by(deployments: Iterable[Mapping[str, Any]]) -> dict[str, Fraction]:
    """What `deployments` request in all (replicas times one replica's requests, and pods)."""
    used: dict[str, Fraction] = {}
    for deployment in deployments:
        spec = deployment.get("spec") or {}
        replicas = int(spec.get("replicas") or 0)
        for name, value in {**pod_requests(spec.get("template") or {}), "pods": Fraction(1)}.items():
            used[name] = used.get(name, Fraction(0)) + value * replicas
    return used


@dataclass
class _Shortfall:
    replicas: int
    generation: int
    since: float


@dataclass
class _Learned:
    replicas: int
    allocatable: str
    at: float
    when: str  # the wall-clock time of `at`, RFC 3339, for the root's note


class CapacityTracker:
    """Remembers shares that stay short of replicas, and what their targets were seen to run."""

    def __init__(self, *, grace_period: float, retry_period: float, clock: Callable[[], float],
                 wall: Callable[[], datetime]) -> None:
        self.grace_period = grace_period
        self.retry_period = retry_period
        self._clock = clock
        self._wall = wall
        self._short: dict[tuple[Any, str], _Shortfall] = {}
        self._learned: dict[tuple[Any, str], _Learned] = {}

    def observe(self, root: Any, target: str, child: Mapping[str, Any],
                allocatable: Mapping[str, Any]) -> float | None:
        """Look at one share; returns seconds until a shortfall would count, if one is being timed."""
        spec_replicas = int((child.get("spec") or {}).get("replicas") or 0)
        generation = int((child.get("metadata") or {}).get("generation") or 0)
        status = child.get("status") or {}
        observed = isinstance(status.get("observedGeneration"), int) and status["observedGeneration"] >= generation
        available = int(status.get("availableReplicas") or 0)
        created = int(status.get("updatedReplicas") or 0) >= spec_replicas
        slot = (root, target)
        if not (observed and created and available < spec_replicas):
            self._short.pop(slot, None)
            return None
        now = self._clock()
        short = self._short.get(slot)
        if short is None or (short.replicas, short.generation) != (spec_replicas, generation):
            short = self._short[slot] = _Shortfall(spec_replicas, generation, now)
        waited = now - short.since
        if waited < self.grace_period:
            return self.grace_period - waited
        self._learned[slot] = _Learned(available, _fingerprint(allocatable), now,
                                       format_time(self._wall()))
        return None

    def learned(self, root: Any, target: str, allocatable: Mapping[str, Any],
                child: Mapping[str, Any] | None = None) -> int | None:
        """Replicas `target` was seen able to run of `root`, while still believed.

        Without a memory of its own, the tracker believes what the share's note says was learned
        (by this replica before a restart, or by the leader before it).
        """
        seen = self._learned.get((root, target))
        if seen is None and child is not None:
            seen = self._recall(root, target, child)
        if seen is None:
            return None
        if seen.allocatable != _fingerprint(allocatable) or self._clock() - seen.at >= self.retry_period:
            del self._learned[(root, target)]
            self._short.pop((root, target), None)
            return None
        return seen.replicas

    def note(self, root: Any, target: str) -> str | None:
        """What was learned about `target`, as the root's note for that share (None: nothing is)."""
        seen = self._learned.get((root, target))
        if seen is None:
            return None
        return json.dumps({"replicas": seen.replicas, "allocatable": json.loads(seen.allocatable),
                           "learnedAt": seen.when}, sort_keys=True, separators=(",", ":"))

    def _recall(self, root: Any, target: str, child: Mapping[str, Any]) -> _Learned | None:
        text = ((child.get("metadata") or {}).get("annotations") or {}).get(CAPACITY_ANNOTATION)
        try:
            note = json.loads(text) if text else {}
            replicas, allocatable = int(note["replicas"]), _fingerprint(note["allocatable"])
            when = str(note["learnedAt"])
        except (TypeError, ValueError, KeyError):
            return None  # absent, or not ours to read: learn it again
        at = parse_time(when)
        age = (self._wall() - at).total_seconds() if at is not None else -1.0
        if not 0 <= age < self.retry_period:
            return None
        seen = self._learned[(root, target)] = _Learned(replicas, allocatable, self._clock() - age, when)
        return seen

    def forget(self, root: Any) -> None:
        for store in (self._short, self._learned):
            for slot in [s for s in store if s[0] == root]:
                del store[slot]


def capacity_of(*, requests: Mapping[str, Any], allocatable: Mapping[str, Any], used: Mapping[str, Any],
                learned: int | None) -> int | None:
    """The smaller of the allocatable estimate and what was learned; None when neither says anything."""
    estimate = room_for(requests, allocatable, used) if allocatable else None
    known = [n for n in (estimate, learned) if n is not None]
    return min(known) if known else None


def _fingerprint(allocatable: Mapping[str, Any]) -> str:
    return json.dumps(dict(allocatable), sort_keys=True, default=str)
