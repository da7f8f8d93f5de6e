"""What the simulated control plane is told by the command line."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ControlPlaneOptions:
    nodes: int  # Node objects per simulated cluster
    node_capacity: dict[str, str]  # each node's capacity and allocatable, e.g. {"cpu": "4", "pods": "110"}
    ready_delay: float  # seconds from a pod's containers starting to the pod being Ready
    eviction_toleration: float  # seconds a NotReady node's pods stay before they are evicted
    clusters: tuple[str, ...] = field(default=())  # logical clusters the control plane runs in
    root_ca: str = ""  # PEM of the CA that signs the server's certificate, published in every namespace
    load_balancer_ip_range: str = "172.18.0.0/16"  # LoadBalancer Services' addresses, a slice per cluster
