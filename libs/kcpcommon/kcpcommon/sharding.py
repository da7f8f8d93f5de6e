"""Which shard owns a logical cluster, when shards split the work between them.

The hash must be the same in every process and every release: Python's
`hash()` of a string is salted per process, so it would hand one cluster to
two replicas (or to none). sha256 is stable everywhere.

Each shard may itself run several replicas for high availability; they elect
one leader per shard, so every shard campaigns for a Lease of its own
(`shard_lease_name`). One Lease for all shards would leave every shard but
the winner's idle, and its logical clusters unreconciled.
"""

from __future__ import annotations

import hashlib


def shard_for(cluster: str, replicas: int) -> int:
    """The index (0 .. replicas-1) of the replica that owns `cluster`."""
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    digest = hashlib.sha256(cluster.encode()).digest()
    return int.from_bytes(digest[:8], "big") % replicas


def owns(cluster: str, index: int, replicas: int) -> bool:
    """Whether replica `index` of `replicas` owns `cluster`."""
    return shard_for(cluster, replicas) == index


def shard_lease_name(name: str, index: int, shards: int) -> str:
    """The Lease shard `index` of `shards` elects its leader on: `name` unsharded, else `name-shard-<index>`."""
    if not 0 <= index < max(shards, 1):
        raise ValueError(f"shard index {index} is not in 0..{shards - 1}")
    return name if shards <= 1 else f"{name}-shard-{index}"
