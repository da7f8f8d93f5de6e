"""What shapes the simulated control plane (placeholder until sim-api's skeleton lands)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ControlPlaneOptions:
    nodes: int = 3
    node_capacity: dict[str, str] = field(default_factory=lambda: {"cpu": "4", "memory": "16Gi", "pods": "110"})
    ready_delay: float = 0.0
    eviction_toleration: float = 300.0
    clusters: tuple[str, ...] = ("root",)
