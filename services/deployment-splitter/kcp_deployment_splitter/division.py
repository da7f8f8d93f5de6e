"""Dividing a replica count between targets: largest remainder, deterministic, capacity-aware.

The same total over the same weights always gives the same shares, whatever order the targets come
in, so a reconcile that sees nothing new writes nothing. Ties go to the target whose name sorts
first. Capacity (Karmada's dynamic weighting by available replicas is the anchor) is water-filling:
a target's share is capped at what it can run, and the overflow is divided again, by the same
weights, between the targets that still have room; what nobody has room for stays where the
weights put it, so the shares always add up to the total.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping


def largest_remainder(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """`total` split in proportion to `weights` (targets with weight <= 0 get nothing)."""
    positive = {name: weight for name, weight in weights.items() if weight > 0}
    shares = dict.fromkeys(weights, 0)
    if total <= 0 or not positive:
        return shares
    whole = sum(positive.values())
    remainders: list[tuple[int, str]] = []
    for name, weight in positive.items():
        quotient, remainder = divmod(total * weight, whole)
        shares[name] = quotient
        remainders.append((remainder, name))
    left = total - sum(shares.values())
    for _, name in sorted(remainders, key=lambda item: (-item[0], item[1]))[:left]:
        shares[name] += 1
    return shares


def divide(total: int, weights: Mapping[str, int], capacity: Mapping[str, int] | None = None,
           bounded: Collection[str] = ()) -> dict[str, int]:
    """`largest_remainder`, then capped per target by `capacity` (absent: unlimited), overflow re-divided.
    A target in `bounded` has a capacity its admin set (a SyncTarget's `spec.capacityBounds`): what nobody has
    room for never goes over it, so the shares may add up to less than the total."""
    shares = largest_remainder(total, weights)
    if not capacity:
        return shares
    placed = dict.fromkeys(weights, 0)
    remaining = total
    open_weights = {name: weight for name, weight in weights.items() if weight > 0}
    while remaining > 0 and open_weights:
        round_shares = largest_remainder(remaining, open_weights)
        full: list[str] = []
        for name, share in round_shares.items():
            room = capacity.get(name)
            take = share if room is None else max(0, min(share, room - placed[name]))
            placed[name] += take
            remaining -= take
            if room is not None and placed[name] >= room:
                full.append(name)
        if not full:
            break
        for name in full:
            open_weights.pop(name, None)
    unbounded = {n: w for n, w in weights.items() if w > 0 and n not in bounded}
    if remaining > 0 and unbounded:  # nobody has room: the rest stays where the weights alone would put it
        for name, share in largest_remainder(remaining, unbounded).items():
            placed[name] += share
    return placed
