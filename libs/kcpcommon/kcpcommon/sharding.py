"""Which replica owns a logical cluster, when replicas split the work instead of electing one leader.

The hash must be the same in every process and every release: Python's
`hash()` of a string is salted per process, so it would hand one cluster to
two replicas (or to none). sha256 is stable everywhere.
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
