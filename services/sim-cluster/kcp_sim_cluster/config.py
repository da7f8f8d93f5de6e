"""The simulated cluster's `ServerConfig`: kcp's own (who may call, RBAC, admission, CRDs, the
apiserver's controllers) serving kube's workload API of one release (Service IPs from the sim's --service-cluster-ip-range),
with the clusters' bootstrap and the simulated control plane added."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress

from kcp_apiserver.embedding import (
    AdmissionFactory,
    Backend,
    ReservedGroups,
    Resource,
    ServerConfig,
    ServerParts,
    kcp_server_config,
    version_info,
)
from kcp_sim_cluster.api import resources
from kcp_sim_cluster.api.core import with_log_interval, with_network
from kcp_sim_cluster.api.limits import LimitRanger, limit_ranges
from kcp_sim_cluster.api.network import Network, parse_peers
from kcp_sim_cluster.api.policylister import PolicyLister
from kcp_sim_cluster.api.priority import PriorityAdmission
from kcp_sim_cluster.api.protection import StorageProtection
from kcp_sim_cluster.api.quota import QuotaAdmission, resource_quotas
from kcp_sim_cluster.api.scheduling import priority_classes
from kcp_sim_cluster.bootstrap import ClusterBootstrap
from kcp_sim_cluster.controlplane import ControlPlaneOptions, control_plane
from kcp_sim_cluster.controlplane.servicelb import cluster_ranges
from kcp_sim_cluster.settings import SimClusterSettings


def control_plane_options(args: SimClusterSettings, clusters: tuple[str, ...], root_ca: str = "") -> ControlPlaneOptions:
    return ControlPlaneOptions(nodes=args.nodes, node_capacity=args.capacity, ready_delay=args.ready_delay,
                               eviction_toleration=args.eviction_toleration,
                               node_startup_grace_period=args.node_startup_grace_period, clusters=clusters, root_ca=root_ca,
                               load_balancer_ip_range=args.load_balancer_ip_range,
                               pod_networks={c: str(n) for c, n in cluster_ranges(args.pod_network, clusters or ("",)).items()},
                               hpa_sync_period=args.horizontal_pod_autoscaler_sync_period,
                               hpa_downscale_stabilization=args.horizontal_pod_autoscaler_downscale_stabilization,
                               hpa_tolerance=args.horizontal_pod_autoscaler_tolerance)


async def policy_lister(parts: ServerParts, res: Resource) -> PolicyLister:
    return PolicyLister(parts.storage, res, await parts.informers.get(res))


async def storage_protection(parts: ServerParts) -> StorageProtection:
    return StorageProtection()


def priority(release: str) -> AdmissionFactory:
    async def build(parts: ServerParts) -> PriorityAdmission:
        return PriorityAdmission(await policy_lister(parts, priority_classes(release)))
    return build


def limit_ranger(release: str) -> AdmissionFactory:
    async def build(parts: ServerParts) -> LimitRanger:
        return LimitRanger(await policy_lister(parts, limit_ranges(release)))
    return build


def quota(release: str) -> AdmissionFactory:
    async def build(parts: ServerParts) -> QuotaAdmission:
        return QuotaAdmission(parts.storage, await policy_lister(parts, resource_quotas(release)))
    return build


def advertise_address(args: SimClusterSettings) -> str:
    """The address the `kubernetes` Service's endpoints name: where this server listens."""
    return args.bind_address if args.bind_address not in ("", "0.0.0.0", "::") else "127.0.0.1"


def sim_config(args: SimClusterSettings, backend: Backend, logical_clusters: tuple[str, ...]) -> ServerConfig:
    """kcp's configuration (identities, RBAC, CRDs, the namespace, service-account and garbage-collection
    controllers, compaction) with a cluster's API in place of kcp's: `logical_clusters` are where the
    simulated clusters live (the default logical cluster for one)."""
    base = kcp_server_config(args, backend, reserved=ReservedGroups(groups=()))  # CRDs may take kcp.io too
    options = control_plane_options(args, logical_clusters, backend.creds.ca_cert.read_text())
    bootstrap = functools.partial(ClusterBootstrap, release=args.release, clusters=logical_clusters,
                                  address=advertise_address(args), port=args.secure_port,
                                  service_cidr=ipaddress.IPv4Network(args.service_cluster_ip_range))
    return dataclasses.replace(
        base,
        resources=with_network(with_log_interval(resources(args.release), args.log_interval),
                               Network(args.name if args.clusters == 1 else "", parse_peers(args.network_peers))),
        admission=[*base.admission, priority(args.release), limit_ranger(args.release),
                   quota(args.release), storage_protection],
        extensions=[*base.extensions, bootstrap],
        controllers=[*base.controllers, *control_plane(options)],
        version=version_info(args.release, "+sim"),
        cluster_annotation=False,  # a physical cluster's objects do not show kcp's annotation
    )
