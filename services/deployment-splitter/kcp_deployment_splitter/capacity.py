"""What each target can run of one root: estimated from allocatable, learned from replicas that never start.

Two sources, the smaller wins (Karmada's estimator is the anchor):
- allocatable: the SyncTarget's `status.allocatable` (summed over its Nodes) minus what the other
  Deployments assigned to it in the same logical cluster request, divided by one replica's requests;
- observation: a child that has all its replicas created but keeps some unavailable for the
  capacity grace period (its pods stay Pending, Unschedulable) can run only what is available. That
  is remembered until the target's allocatable changes or the retry period passes, then tried again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .quantity import parse_quantity
from .targets import room_for


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


class CapacityTracker:
    """Remembers children that stay short of replicas, and what their targets were seen to run."""

    def __init__(self, *, grace_period: float, retry_period: float, clock: Callable[[], float]) -> None:
        self.grace_period = grace_period
        self.retry_period = retry_period
        self._clock = clock
        self._short: dict[tuple[Any, str], _Shortfall] = {}
        self._learned: dict[tuple[Any, str], _Learned] = {}

    def observe(self, root: Any, target: str, child: Mapping[str, Any],
                allocatable: Mapping[str, Any]) -> float | None:
        """Look at one child; returns seconds until a shortfall would count, if one is being timed."""
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
        self._learned[slot] = _Learned(available, _fingerprint(allocatable), now)
        return None

    def learned(self, root: Any, target: str, allocatable: Mapping[str, Any]) -> int | None:
        """Replicas `target` was seen able to run of `root`, while still believed."""
        seen = self._learned.get((root, target))
        if seen is None:
            return None
        if seen.allocatable != _fingerprint(allocatable) or self._clock() - seen.at >= self.retry_period:
            del self._learned[(root, target)]
            self._short.pop((root, target), None)
            return None
        return seen.replicas

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
