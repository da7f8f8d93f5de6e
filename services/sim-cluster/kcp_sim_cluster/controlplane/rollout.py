"""The deployment controller's arithmetic (kube's pkg/controller/deployment/util), free of I/O.

How many pods a rolling update may add above the desired count (maxSurge, rounded up) and take
away below it (maxUnavailable, rounded down; both zero would stall, so unavailable becomes 1),
how far the new ReplicaSet may grow, how far the old ones may shrink, and how a resize in the
middle of a rollout is spread over the ReplicaSets in proportion to their sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kcpcommon.intorstring import scaled_value

DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"


def resolve_fenceposts(max_surge: int | str | None, max_unavailable: int | str | None,
                       desired: int) -> tuple[int, int]:
    """(surge, unavailable) for `desired` replicas: surge rounds up, unavailable down; never both 0."""
    surge = scaled_value(DEFAULT_MAX_SURGE if max_surge is None else max_surge, desired, round_up=True)
    unavailable = scaled_value(DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable,
                               desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # kube: otherwise the rollout could never make progress
    return surge, unavailable


@dataclass
class RSState:
    """What the arithmetic needs of one ReplicaSet."""

    name: str
    replicas: int  # spec.replicas
    available: int = 0  # status.availableReplicas
    created: str = ""  # creationTimestamp, for age ordering
    max_replicas: int | None = None  # annotation deployment.kubernetes.io/max-replicas


def new_rs_replicas(desired: int, surge: int, new_rs: int, total_current: int) -> int:
    """How large the new ReplicaSet may be now (kube's NewRSNewReplicas for RollingUpdate)."""
    max_total = desired + surge
    if total_current >= max_total:
        return new_rs  # cannot scale up
    scale_up = min(max_total - total_current, desired - new_rs)
    return new_rs + max(scale_up, 0)


def old_scale_down(desired: int, unavailable: int, new_rs: RSState, olds: Sequence[RSState]) -> dict[str, int]:
    """New sizes for old ReplicaSets in a rolling update (kube's reconcileOldReplicaSets).

    First shed old pods that are not available (they count for nothing), then available ones as far
    as the availability floor (`desired - unavailable`) allows. Oldest first.
    """
    result: dict[str, int] = {}
    old_total = sum(rs.replicas for rs in olds)
    if old_total == 0:
        return result
    all_total = old_total + new_rs.replicas
    min_available = desired - unavailable
    new_unavailable = new_rs.replicas - new_rs.available
    budget = all_total - min_available - new_unavailable
    if budget <= 0:
        return result
    ordered = sorted(olds, key=lambda rs: (rs.created, rs.name))
    sizes = {rs.name: rs.replicas for rs in olds}
    cleaned = 0
    for rs in ordered:  # unhealthy replicas first
        if cleaned >= budget:
            break
        if sizes[rs.name] == 0 or sizes[rs.name] == rs.available:
            continue
        shed = min(budget - cleaned, sizes[rs.name] - rs.available)
        sizes[rs.name] -= shed
        cleaned += shed
    available = new_rs.available + sum(min(rs.available, sizes[rs.name]) for rs in olds)
    to_shed = available - min_available
    for rs in ordered:
        if to_shed <= 0:
            break
        if sizes[rs.name] == 0:
            continue
        shed = min(sizes[rs.name], to_shed)
        sizes[rs.name] -= shed
        to_shed -= shed
    for rs in olds:
        if sizes[rs.name] != rs.replicas:
            result[rs.name] = sizes[rs.name]
    return result


def proportional_scale(desired: int, surge: int, status_replicas: int, active: Sequence[RSState]) -> dict[str, int]:
    """New sizes when the Deployment is resized mid-rollout (kube's scale with several active RSs).

    Each ReplicaSet gets its share of the difference in proportion to its size, against the size the
    Deployment had when it was last sized (the max-replicas annotation, else the Deployment's
    status.replicas); the rounding remainder goes to the largest one.
    """
    allowed = desired + surge
    current = sum(rs.replicas for rs in active)
    to_add = allowed - current
    if to_add == 0 or not active:
        return {}
    if to_add > 0:  # largest first, newer first on ties
        ordered = sorted(active, key=lambda rs: (-rs.replicas, _negated(rs.created), rs.name))
    else:  # largest first, older first on ties
        ordered = sorted(active, key=lambda rs: (-rs.replicas, rs.created, rs.name))
    sizes: dict[str, int] = {}
    added = 0
    for rs in ordered:
        proportion = 0
        if rs.replicas != 0 and to_add != 0:
            annotated = rs.max_replicas if rs.max_replicas else status_replicas
            if desired == 0:
                fraction = -rs.replicas
            elif annotated:
                fraction = _round(rs.replicas * allowed / annotated) - rs.replicas
            else:
                fraction = 0
            left = to_add - added
            proportion = min(fraction, left) if to_add > 0 else max(fraction, left)
        sizes[rs.name] = rs.replicas + proportion
        added += proportion
    leftover = to_add - added
    if leftover:
        first = ordered[0].name
        sizes[first] = max(sizes[first] + leftover, 0)
    return {rs.name: sizes[rs.name] for rs in active if sizes[rs.name] != rs.replicas}


def _round(value: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() goes to even)."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _negated(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)
