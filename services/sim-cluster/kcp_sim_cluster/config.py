"""The simulated cluster's `ServerConfig`: kube's workload API of one release and CRDs, the admin
token, NamespaceLifecycle and Service IP allocation, and the controllers (the apiserver's own plus
the simulated control plane)."""

from __future__ import annotations

import socket

from kcp_apiserver.apiextensions.reserved import ReservedGroups
from kcp_apiserver.controllers.compaction import Compactor
from kcp_apiserver.endpoints.nonresource import version_info
from kcp_apiserver.filters.authentication import StaticTokenAuthenticator
from kcp_apiserver.server.cli import Backend, token_file_authenticators, watch_settings
from kcp_apiserver.server.config import AdmissionFactory, ControllerFactory, ServerConfig, ServerParts
from kcp_apiserver.server.kcp import (
    crd_serving,
    garbage_collector,
    namespace_controller,
    namespace_lifecycle,
    reserved_crds,
)
from kcp_sim_cluster.api import resource, resources
from kcp_sim_cluster.api.serviceips import ServiceIPs
from kcp_sim_cluster.bootstrap import ClusterBootstrap
from kcp_sim_cluster.controlplane import ControlPlaneOptions, control_plane
from kcp_sim_cluster.settings import SimClusterSettings


def control_plane_options(args: SimClusterSettings, clusters: tuple[str, ...]) -> ControlPlaneOptions:
    return ControlPlaneOptions(nodes=args.nodes, node_capacity=args.capacity, ready_delay=args.ready_delay,
                               eviction_toleration=args.eviction_toleration, clusters=clusters)


def service_ips(release: str) -> AdmissionFactory:
    async def build(parts: ServerParts) -> ServiceIPs:
        plugin = ServiceIPs(parts.storage, await parts.caches.get(resource(release, "", "services")))
        await plugin.start()
        return plugin
    return build


def advertise_address(args: SimClusterSettings) -> str:
    """The address the `kubernetes` Service's endpoints name: where this server listens."""
    return args.bind_address if args.bind_address not in ("", "0.0.0.0", "::") else "127.0.0.1"


def sim_config(args: SimClusterSettings, backend: Backend, logical_clusters: tuple[str, ...]) -> ServerConfig:
    """`logical_clusters`: where the simulated clusters live (the default logical cluster for one)."""

    def compaction(parts: ServerParts) -> Compactor:
        return Compactor(parts.storage, args.compaction_interval)

    follow_crds, crd_controller = crd_serving()
    defaults: list[ControllerFactory] = [crd_controller, namespace_controller, garbage_collector, compaction]
    options = control_plane_options(args, logical_clusters)
    return ServerConfig(
        etcd_endpoints=backend.endpoints,
        resources=resources(args.release),
        authenticators=[StaticTokenAuthenticator.admin(backend.creds.admin_token), *token_file_authenticators(args)],
        identity=f"{socket.gethostname()}:{args.secure_port}",
        # a CRD may take any group a cluster does not serve itself (no kcp.io reservation: a physical cluster)
        admission=[namespace_lifecycle, service_ips(args.release), reserved_crds(ReservedGroups(groups=()))],
        extensions=[follow_crds, lambda parts: ClusterBootstrap(parts, args.release, logical_clusters,
                                                                 advertise_address(args), args.secure_port)],
        controllers=[*defaults, *control_plane(options)],
        run_controllers=backend.controllers,
        watch_cache_size=args.watch_cache_size,
        watch=watch_settings(args),
        etcd_tls=backend.etcd_tls,
        live_checks=backend.live_checks or {},
        version=version_info(args.release, "+sim"),
    )
