"""`--node-capacity`: the text form of a node's resources, shared by the simulated cluster and the agent."""

from __future__ import annotations


def parse_capacity(text: str) -> dict[str, str]:
    """`cpu=4,memory=16Gi,pods=110` as a mapping; every item must be resource=quantity."""
    capacity: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--node-capacity item {item!r} is not resource=quantity")
        capacity[key.strip()] = value.strip()
    return capacity
