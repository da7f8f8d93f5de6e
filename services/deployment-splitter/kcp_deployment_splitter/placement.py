"""Where a root's replicas should run, and what to write now to get there without losing ready ones.

`plan` turns the usable targets, the break-glass annotation and what is known of each target's
capacity into shares. `step` orders the move: children that grow are written at once; children that
shrink keep their available replicas until the growing ones are available (or have shown they cannot
grow any further), so the ready total never drops when capacity allows; replicas that are not
available anyway go at once. A target that was deleted has no
syncer left to wait for: its child goes at once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from .division import divide


class InvalidPlacement(ValueError):
    """The break-glass annotation cannot be read."""


def parse_placement(text: str | None) -> dict[str, int] | None:
    """`"east,west"` (equal weights) or `"east=3,west=1"`; None when the annotation is absent or empty."""
    if text is None or not text.strip():
        return None
    weights: dict[str, int] = {}
    for part in text.split(","):
        name, sep, weight = part.strip().partition("=")
        name = name.strip()
        if not name:
            raise InvalidPlacement(f"empty target name in {text!r}")
        try:
            value = int(weight) if sep else 1
        except ValueError:
            raise InvalidPlacement(f"weight of {name} is not an integer: {weight!r}") from None
        if value < 0:
            raise InvalidPlacement(f"weight of {name} is negative: {value}")
        weights[name] = value
    return weights


@dataclass(frozen=True)
class Plan:
    shares: dict[str, int]  # target -> replicas (targets with 0 have no child)
    weights: dict[str, int]


def plan(replicas: int, usable: tuple[str, ...], *, placement: Mapping[str, int] | None = None,
         capacity: Mapping[str, int] | None = None, bounded: Collection[str] = ()) -> Plan:
    """Shares of `replicas` over `usable` targets (restricted and weighed by `placement` when given); `bounded`
    targets never take more than their `capacity` (see `divide`)."""
    if placement is None:
        weights = dict.fromkeys(usable, 1)
    else:
        weights = {name: placement[name] for name in usable if name in placement}
    shares = divide(replicas, weights, {t: c for t, c in (capacity or {}).items() if t in weights}, bounded)
    return Plan({t: n for t, n in shares.items() if n > 0}, weights)


def step(desired: Mapping[str, int], current: Mapping[str, int], available: Mapping[str, int], *,
         capacity: Mapping[str, int] | None = None, gone: frozenset[str] = frozenset(),
         floor: int = 0, reported: Mapping[str, int] | None = None) -> dict[str, int]:
    """Replicas to write per target now (0: delete that child); `current` maps existing children.

    `floor` is the available replicas a PodDisruptionBudget wants kept (disruption.py). Growing shares
    count as "available" once they reach their capacity, so when capacity caps a new share the old ones
    may go while the total available is below the replicas; the floor then keeps back available replicas
    on shrinking children, the fewest that reach it, as kube's eviction API refuses to go below a budget.
    A deleted target's child is not held: no syncer is left to run it, and losing it is not voluntary.
    `reported` (default `available`) is what the floor counts: a child just shrunk has a status one
    generation behind, which `available` counts as 0 (nothing proven), but scaling down only deletes
    pods, so its last report, capped at its replicas, is what still runs; counting 0 would let it go.
    """
    capacity = capacity or {}
    # a share is grown once its child has it available (or all its cluster can run): a child written
    # at its new size but not there yet still holds the old ones back
    grown = all(available.get(t, 0) >= min(n, capacity.get(t, n)) for t, n in desired.items())
    out: dict[str, int] = {}
    for target in sorted(set(desired) | set(current)):
        want, have = desired.get(target, 0), current.get(target, 0)
        if want >= have or grown or target in gone:
            out[target] = want
        else:  # keep the ready ones until the new share is; kube's ReplicaSet removes unready pods first
            out[target] = max(want, min(have, available.get(target, 0)))
    return _keep_floor(out, current, available if reported is None else reported, floor, gone)


def _keep_floor(out: dict[str, int], current: Mapping[str, int], available: Mapping[str, int], floor: int,
                gone: frozenset[str]) -> dict[str, int]:
    """Raise shrinking children back towards their available replicas until `floor` stay available."""
    short = floor - sum(min(n, available.get(t, 0)) for t, n in out.items())
    for target in sorted(out):
        if short <= 0:
            break
        if target in gone:
            continue
        keep = min(current.get(target, 0), available.get(target, 0))
        if keep > out[target]:
            back = min(keep - out[target], short)
            out[target] += back
            short -= back
    return out
