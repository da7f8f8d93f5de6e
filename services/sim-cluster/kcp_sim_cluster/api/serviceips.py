"""Cluster IPs and node ports of the sim's Services: the apiserver package's allocator (the one kcp uses
too), added to every server by `kcp_server_config` with `--service-cluster-ip-range` (the sim's default:
kube's 10.96.0.0/12)."""

from __future__ import annotations

from kcp_apiserver.embedding import SERVICE_CIDR, ServiceIPs, taken_ips

__all__ = ["SERVICE_CIDR", "ServiceIPs", "taken_ips"]
