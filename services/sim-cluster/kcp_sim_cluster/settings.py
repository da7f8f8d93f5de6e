"""kcp-sim-cluster's settings: the apiserver's serving flags plus the simulated cluster's shape.

Every option is a `--flag` and a `KCP_SIM_CLUSTER_*` environment variable; `--help` is written from here.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from kcp_apiserver.embedding import RELEASES, APIServerSettings, newest_release
from kcp_sim_cluster.capacity import parse_capacity
from kcpcommon.settings import settings_config

CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class SimClusterSettings(APIServerSettings):
    """A simulated physical Kubernetes cluster: kube's workload API with simulated nodes, scheduler and kubelets."""

    model_config = settings_config("kcp-sim-cluster")

    root_dir: str = Field(".kcp-sim", description="directory for admin.kubeconfig (and <name>.kubeconfig per "
                                                  "cluster with --clusters), TLS material and the embedded "
                                                  "etcd's data; a restart on the same directory keeps everything")
    name: str = Field("sim", description="the cluster's name: its kubeconfig's context and cluster name; with "
                                         "--clusters N the clusters are <name>-1 .. <name>-N")
    clusters: int = Field(1, ge=1, le=10_000, description="simulated clusters served by this process, each a "
                                                         "logical cluster /clusters/<name>-<i> with its own "
                                                         "nodes and controllers and DIR/<name>-<i>.kubeconfig; "
                                                         "1: one cluster, served at the root URL")
    service_cluster_ip_range: str = Field("10.96.0.0/12", description="IPv4 CIDR the cluster IPs of Services "
                                                                     "come from (kube's default), each simulated "
                                                                     "cluster its own pool of it")
    load_balancer_ip_range: str = Field("172.18.0.0/16", description="IPv4 CIDR the external addresses of "
                                                                    "LoadBalancer Services come from, split into "
                                                                    "one equal slice per simulated cluster")
    pod_network: str = Field("10.64.0.0/10", description="IPv4 CIDR the nodes' pod CIDRs (a /20 each) come "
                                                          "from, one equal slice per simulated cluster; give "
                                                          "clusters that reach each other apart ranges")
    network_peers: str = Field("", description="comma-separated NAME=KUBECONFIG of other clusters on a flat "
                                               "network with this one: a pod's `wget` of a Service whose "
                                               "EndpointSlices name their pods' addresses is answered by them "
                                               "(api/network.py)")
    nodes: int = Field(3, ge=0, description="Node objects per simulated cluster")
    node_capacity: str = Field("cpu=4,memory=16Gi,pods=110", description="each node's capacity and allocatable, "
                                                                         "as comma-separated resource=quantity")
    ready_delay: float = Field(1.0, ge=0, description="seconds from a pod's containers starting to the pod "
                                                      "being Ready")
    log_interval: float = Field(0.0, ge=0, description="seconds between two lines a running container prints to "
                                                        "its log (kubectl logs -f, attach) when its pod has no "
                                                        "sim.kcp.io/log-interval annotation; 0: only its starts")
    eviction_toleration: float = Field(300.0, ge=0, description="seconds the pods of a NotReady node stay "
                                                                "before they are evicted, as kube's default "
                                                                "not-ready toleration")
    node_startup_grace_period: float = Field(60.0, ge=0, description="seconds a Node whose kubelet never posted "
                                                                     "status may wait before its conditions turn "
                                                                     "Unknown (NodeStatusNeverUpdated), as kube's "
                                                                     "controller-manager flag")
    horizontal_pod_autoscaler_sync_period: float = Field(15.0, gt=0, description="seconds between two syncs of "
                                                                                 "a HorizontalPodAutoscaler, as "
                                                                                 "kube's controller-manager flag")
    horizontal_pod_autoscaler_downscale_stabilization: float = Field(
        300.0, ge=0, description="seconds a HorizontalPodAutoscaler without a behavior looks back for the highest "
                                 "recommendation before it scales down, as kube's controller-manager flag")
    horizontal_pod_autoscaler_tolerance: float = Field(0.1, ge=0, description="how far the usage ratio may be "
                                                                              "from 1 before a "
                                                                              "HorizontalPodAutoscaler scales, as "
                                                                              "kube's controller-manager flag")
    kubernetes_version: str = Field("", description="Kubernetes release whose API schemas are served and "
                                                    "reported by /version, as MAJOR.MINOR; empty: the newest "
                                                    f"shipped ({', '.join(RELEASES)})")

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not CLUSTER_NAME.match(value) or len(value) > 50:
            raise ValueError(f"--name {value!r} must be a DNS label of at most 50 characters")
        return value

    @field_validator("node_capacity")
    @classmethod
    def _capacity(cls, value: str) -> str:
        parse_capacity(value)
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _release(cls, value: str) -> str:
        value = value.strip().removeprefix("v")
        release = ".".join(value.split(".")[:2])
        if value and release not in RELEASES:
            raise ValueError(f"--kubernetes-version {value!r} is not one of {', '.join(RELEASES)}")
        return release

    @model_validator(mode="after")
    def _load_balancer_range(self) -> SimClusterSettings:
        from kcp_sim_cluster.api.network import parse_peers
        from kcp_sim_cluster.controlplane.nodes import NODE_CIDR_PREFIX
        from kcp_sim_cluster.controlplane.servicelb import cluster_ranges

        try:
            cluster_ranges(self.load_balancer_ip_range, self.cluster_names)
        except ValueError as exc:
            raise ValueError(f"--load-balancer-ip-range: {exc}") from exc
        try:
            pods = cluster_ranges(self.pod_network, self.cluster_names)
        except ValueError as exc:
            raise ValueError(f"--pod-network: {exc}") from exc
        if any(n.prefixlen > NODE_CIDR_PREFIX for n in pods.values()):
            raise ValueError(f"--pod-network {self.pod_network}: each of the {len(pods)} clusters needs at least a "
                             f"/{NODE_CIDR_PREFIX} (one node's pods)")
        parse_peers(self.network_peers)
        return self

    @property
    def release(self) -> str:
        return self.kubernetes_version or newest_release()

    @property
    def capacity(self) -> dict[str, str]:
        return parse_capacity(self.node_capacity)

    @property
    def cluster_names(self) -> tuple[str, ...]:
        """The simulated clusters' names (one: the --name itself)."""
        if self.clusters == 1:
            return (self.name,)
        return tuple(f"{self.name}-{i}" for i in range(1, self.clusters + 1))
