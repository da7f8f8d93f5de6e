"""What the simulated control plane is told by the command line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ControlPlaneOptions:
    nodes: int  # Node objects per simulated cluster
    node_capacity: dict[str, str]  # each node's capacity and allocatable, e.g. {"cpu": "4", "pods": "110"}
    ready_delay: float  # seconds from a pod's containers starting to the pod being Ready
    eviction_toleration: float  # seconds a NotReady node's pods stay before they are evicted
    node_startup_grace_period: float = 60.0  # seconds a Node may go without any status before it is Unknown
    clusters: tuple[str, ...] = field(default=())  # logical clusters the control plane runs in
    root_ca: str = ""  # PEM of the CA that signs the server's certificate, published in every namespace
    load_balancer_ip_range: str = "172.18.0.0/16"  # LoadBalancer Services' addresses, a slice per cluster
    pod_networks: Mapping[str, str] = field(default_factory=dict)  # cluster -> its slice of --pod-network
    hpa_sync_period: float = 15.0  # seconds between two syncs of one HorizontalPodAutoscaler
    hpa_downscale_stabilization: float = 300.0  # seconds a scale-down waits for the highest recent recommendation
    hpa_tolerance: float = 0.1  # usage ratios this close to 1 change nothing
