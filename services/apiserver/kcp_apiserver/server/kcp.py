"""kcp's own configuration of the API server: its built-in types, who may call (client certificates,
the admin token, service-account tokens), NamespaceLifecycle admission, CRD serving and the
namespace, service-account and garbage-collection controllers."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from kcp_apiserver.admission.location_quota import LocationQuota, RegistryReads
from kcp_apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from kcp_apiserver.admission.placement_metadata import PlacementMetadata
from kcp_apiserver.admission.placement_requester import PlacementRequester
from kcp_apiserver.admission.serviceips import KCP_SERVICE_CIDR, ServiceIPs, start_service_ips
from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.reserved import ReservedCRDs, ReservedGroups
from kcp_apiserver.apiextensions.serving import CRDServing
from kcp_apiserver.apis.admission import BindPermission, BoundCRDs, TerminatingBindings
from kcp_apiserver.apis.controller import APIBindingController
from kcp_apiserver.apis.exportview import ExportViews
from kcp_apiserver.apis.serving import BoundAPIs
from kcp_apiserver.apis.types import API_BINDING
from kcp_apiserver.apis.types import RESOURCES as APIS
from kcp_apiserver.controllers.compaction import Compactor
from kcp_apiserver.controllers.garbagecollector import GarbageCollector
from kcp_apiserver.controllers.kubernetes_service import KubernetesServiceController
from kcp_apiserver.controllers.namespace import NamespaceController
from kcp_apiserver.controllers.rbac_aggregation import AggregationController
from kcp_apiserver.controllers.serviceaccounts import ServiceAccountsController
from kcp_apiserver.endpoints.base import WatchSettings
from kcp_apiserver.endpoints.podstreams import pod_stream_actions
from kcp_apiserver.endpoints.tunnels import Tunnels, tunnel_action
from kcp_apiserver.filters.authentication import Authenticator, StaticTokenAuthenticator
from kcp_apiserver.filters.serviceaccount import ServiceAccountAuthenticator
from kcp_apiserver.filters.x509 import ClientCertificateAuthenticator
from kcp_apiserver.kubetypes.podbinding import BINDING
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.escalation import EscalationCheck
from kcp_apiserver.rbac.follow import RBACFollowers
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.rbac.reviews import Reviews
from kcp_apiserver.registry.builtin import BUILTINS, NAMESPACE, SERVICE_ACCOUNT
from kcp_apiserver.registry.builtin.reviews import RESOURCES as REVIEWS
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.serviceaccounts import ServiceAccountLookup, ServiceAccountTokens
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.server.config import AdmissionFactory, ControllerFactory, Runnable, ServerConfig, ServerParts
from kcp_apiserver.storage.etcd_client import TLSFiles
from kcp_apiserver.tenancy.access import FollowWorkspaces, WorkspaceAccess
from kcp_apiserver.tenancy.admission import WorkspaceOwner
from kcp_apiserver.tenancy.controller import WorkspaceController
from kcp_apiserver.tenancy.initializing import InitializerLift, InitializingViews
from kcp_apiserver.tenancy.syncerview import SyncerViews
from kcp_apiserver.tenancy.typeadmission import WorkspaceTypeAdmission
from kcp_apiserver.tenancy.typelookup import cluster_type_lookup, type_lookup
from kcp_apiserver.tenancy.types import RESOURCES as TENANCY
from kcpcommon.health import Check

# kcp's own CRDs, which only kcp installs: the cluster controller creates SyncTargets' CRD in a logical
# cluster with the admin identity. Every other CRD in kcp.io and its subgroups is refused.
SYSTEM_CRDS = frozenset({"synctargets.workload.kcp.io", "locations.scheduling.kcp.io",
                         "placements.scheduling.kcp.io"})


async def namespace_lifecycle(parts: ServerParts) -> NamespaceLifecycle:
    plugin = NamespaceLifecycle(parts.storage, await parts.informers.get(NAMESPACE))
    await plugin.start()
    return plugin


def reserved_crds(groups: ReservedGroups) -> AdmissionFactory:
    """No CRD on storage the server owns, nor in kcp's groups unless kcp installs it."""
    async def build(parts: ServerParts) -> ReservedCRDs:
        return ReservedCRDs(CRD.prefix, parts.catalog.builtins, groups)
    return build


class _FollowCRDs:
    """Every replica follows CRDs into its catalog."""

    def __init__(self, serving: CRDServing) -> None:
        self.serving = serving

    async def start(self) -> None:
        await self.serving.start()

    async def stop(self) -> None:
        await self.serving.stop()


class _CRDController:
    """The leader also names CRDs, marks them Established and deletes a deleted CRD's objects."""

    def __init__(self, serving: CRDServing) -> None:
        self.serving = serving

    async def start(self) -> None:
        await self.serving.start_controllers()

    async def stop(self) -> None:
        await self.serving.stop_controllers()


def garbage_collector(parts: ServerParts) -> Runnable:
    assert parts.registry is not None
    return GarbageCollector(parts.storage, parts.informers, parts.catalog, parts.registry, metrics=parts.metrics)


def namespace_controller(parts: ServerParts) -> Runnable:
    assert parts.registry is not None
    return NamespaceController(parts.storage, parts.informers, parts.registry, parts.catalog.namespaced,
                               metrics=parts.metrics)


class _Idle:
    """In place of a part whose types this configuration does not serve (kcp-sim-cluster serves no Workspaces)."""

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass


def serves_workspaces(parts: ServerParts) -> bool:
    return all(res in parts.catalog.builtins for res in TENANCY)


def follow_workspaces(access: WorkspaceAccess) -> ControllerFactory:
    def build(parts: ServerParts) -> Runnable:
        return FollowWorkspaces(access, parts.informers) if serves_workspaces(parts) else _Idle()
    return build


def workspace_controller(base_url: str) -> ControllerFactory:
    def build(parts: ServerParts) -> Runnable:
        assert parts.registry is not None
        if not serves_workspaces(parts):
            return _Idle()
        return WorkspaceController(parts.storage, parts.informers, parts.registry, parts.catalog.for_cluster,
                                   base_url=base_url, api_binding=API_BINDING, metrics=parts.metrics)
    return build


async def workspace_owner(parts: ServerParts) -> WorkspaceOwner:
    return WorkspaceOwner()


async def placement_requester(parts: ServerParts) -> PlacementRequester:
    return PlacementRequester()


async def placement_metadata(parts: ServerParts) -> PlacementMetadata:
    return PlacementMetadata()


async def location_quotas(parts: ServerParts) -> LocationQuota:
    """Per-team quotas on Locations: per judged write, the Locations from etcd, the Namespaces, Placements,
    SyncTargets and the team's Deployments from the watch caches (nothing kept across requests)."""
    def registry() -> Registry:
        assert parts.registry is not None, "the registry is built right after admission"
        return parts.registry
    return LocationQuota(RegistryReads(registry, parts.catalog, parts.caches))


def workspace_types(authorizer: RBACAuthorizer) -> AdmissionFactory:
    async def build(parts: ServerParts) -> WorkspaceTypeAdmission:
        def registry() -> Registry:
            assert parts.registry is not None, "the registry is built right after admission"
            return parts.registry
        return WorkspaceTypeAdmission(type_lookup(registry), cluster_type_lookup(registry), authorizer)
    return build


async def initializer_lift(parts: ServerParts) -> InitializerLift:
    return InitializerLift()


async def syncer_views(parts: ServerParts) -> SyncerViews:
    """The SyncTargets' syncer virtual workspaces: who may use one is the authorizer's `sync` check; what it shows,
    the placed namespaces, followed from the Namespaces' informer (the server's shared one)."""
    views = SyncerViews(await parts.informers.get(NAMESPACE))
    await views.start()
    return views


def initializing_views(parts: ServerParts) -> InitializingViews:
    """The initializers' virtual workspaces; who may use one is WorkspaceAccess's `initialize` check."""
    def registry() -> Registry:
        assert parts.registry is not None, "the registry is built right after admission"
        return parts.registry
    return InitializingViews(registry, type_lookup(registry))


def serviceaccounts_controller(parts: ServerParts) -> Runnable:
    assert parts.registry is not None
    return ServiceAccountsController(parts.storage, parts.informers, parts.registry, metrics=parts.metrics)


class _BindServiceAccounts:
    """Every replica checks service-account tokens against its own watch cache of ServiceAccounts."""

    def __init__(self, authenticator: ServiceAccountAuthenticator, parts: ServerParts) -> None:
        self.authenticator = authenticator
        self.parts = parts

    async def start(self) -> None:
        await self.parts.caches.get(SERVICE_ACCOUNT)
        self.authenticator.bind(ServiceAccountLookup(self.parts.caches, self.parts.storage))

    async def stop(self) -> None:
        pass


def crd_serving() -> tuple[ControllerFactory, ControllerFactory]:
    """CustomResourceDefinitions served: (the extension every replica runs, which follows CRDs into its
    catalog; the leader's controller, which names them, marks them Established and deletes a deleted
    CRD's objects). Both share one CRDServing."""
    crds: list[CRDServing] = []

    def follow_crds(parts: ServerParts) -> Runnable:
        assert parts.registry is not None
        crds.append(CRDServing(parts.storage, parts.informers, parts.catalog, parts.registry, metrics=parts.metrics))
        return _FollowCRDs(crds[-1])

    def crd_controller(parts: ServerParts) -> Runnable:
        return _CRDController(crds[-1])

    return follow_crds, crd_controller


def shared_apis(authorizer: RBACAuthorizer) -> tuple[list[AdmissionFactory], ControllerFactory, ControllerFactory,
                                                     Callable[[ServerParts], ExportViews]]:
    """APIExports and APIBindings: (the admission plugins, which refuse a binding without `bind`, a CRD of a
    bound type and new objects of a type whose binding is being deleted; the extension every replica runs, which serves what bindings bound; the leader's
    controller, which binds and cleans up; the exports' virtual workspaces). All share one BoundAPIs, made with the
    first plugin."""
    bound: list[BoundAPIs] = []

    async def bind_permission(parts: ServerParts) -> BindPermission:
        bound.append(BoundAPIs(parts.informers, parts.catalog))
        return BindPermission(authorizer)

    async def bound_crds(parts: ServerParts) -> BoundCRDs:
        return BoundCRDs(CRD.prefix, bound[-1])

    async def terminating_bindings(parts: ServerParts) -> TerminatingBindings:
        return TerminatingBindings(bound[-1])

    def follow_bindings(parts: ServerParts) -> Runnable:
        return bound[-1]

    def binding_controller(parts: ServerParts) -> Runnable:
        assert parts.registry is not None
        return APIBindingController(parts.storage, parts.informers, parts.registry, bound[-1],
                                    parts.catalog.builtins, metrics=parts.metrics)

    def export_views(parts: ServerParts) -> ExportViews:
        return ExportViews(bound[-1])

    return [bind_permission, bound_crds, terminating_bindings], follow_bindings, binding_controller, export_views


def kcp_config(etcd_endpoints: list[str], admin_token: str, *, run_controllers: bool = True,
               watch_cache_size: int = 10_000, compaction_interval: float = 300.0,
               watch: WatchSettings | None = None, identity: str = "", etcd_tls: TLSFiles | None = None,
               live_checks: Mapping[str, Check] | None = None,
               system_crds: frozenset[str] = SYSTEM_CRDS, service_accounts: ServiceAccountTokens | None = None,
               jwks_uri: str = "", audit_log_path: str = "", reserved: ReservedGroups | None = None,
               service_cidr: ipaddress.IPv4Network = KCP_SERVICE_CIDR, external_url: str = "") -> ServerConfig:
    """`reserved`: the groups no tenant's CRD may take (default: kcp's, but for `system_crds`);
    `service_cidr`: where Services' cluster IPs come from; `external_url`: where clients reach this server
    (the base of Workspaces' URLs)."""
    follow_crds, crd_controller = crd_serving()
    tunnels = Tunnels()  # the syncers' tunnels to this replica: how its mirrored pods' streams are reached
    rbac = PolicyIndex()  # every replica's RBAC, read by the authorizer, escalation admission and reviews
    authorizer = RBACAuthorizer(rbac)
    access = WorkspaceAccess(authorizer)  # entering a workspace needs `access` there, then RBAC decides
    apis_admission, follow_bindings, binding_controller, export_views = shared_apis(authorizer)

    async def no_escalation(parts: ServerParts) -> EscalationCheck:
        async def get(res: Resource, cluster: str, namespace: str, name: str) -> Obj:
            assert parts.registry is not None, "the registry is built right after admission"
            return await parts.registry.get(res, cluster, namespace, name)
        return EscalationCheck(authorizer, get)

    async def service_ips(parts: ServerParts) -> ServiceIPs:
        return await start_service_ips(parts.informers, service_cidr)

    def kubernetes_service(parts: ServerParts) -> Runnable:
        assert parts.registry is not None
        return KubernetesServiceController(parts.informers, parts.catalog, parts.registry, cidr=service_cidr,
                                           port=urlsplit(external_url).port or 443, metrics=parts.metrics)

    def aggregate_cluster_roles(parts: ServerParts) -> Runnable:
        assert parts.registry is not None
        return AggregationController(rbac, parts.registry, metrics=parts.metrics)

    def follow_rbac(parts: ServerParts) -> Runnable:
        assert parts.registry is not None
        return RBACFollowers(rbac, parts.informers, parts.registry)

    # kube's order: client certificates, then bearer tokens
    authenticators: list[Authenticator] = [ClientCertificateAuthenticator(), StaticTokenAuthenticator.admin(admin_token)]
    extensions: list[ControllerFactory] = [follow_rbac, follow_crds, follow_workspaces(access), follow_bindings]
    if service_accounts is not None:
        tokens = ServiceAccountAuthenticator(service_accounts)
        authenticators.append(tokens)
        extensions.append(lambda parts: _BindServiceAccounts(tokens, parts))
    return ServerConfig(
        etcd_endpoints=etcd_endpoints,
        resources=(*BUILTINS, *REVIEWS, CRD, *TENANCY, *APIS),  # the reviews are answered by `answers`
        authenticators=authenticators,
        authorizer=access,
        visibility=access.visibility,
        answers=Reviews(authorizer).by_resource,
        custom_actions={("", "pods"): (*pod_stream_actions(tunnels), BINDING),
                        ("workload.kcp.io", "synctargets"): (tunnel_action(tunnels),)},
        identity=identity or socket.gethostname(),
        admission=[namespace_lifecycle, reserved_crds(reserved or ReservedGroups(system_crds=system_crds)),
                   no_escalation, service_ips, workspace_owner, placement_requester, placement_metadata,
                   workspace_types(authorizer),
                   initializer_lift, location_quotas,
                   *apis_admission],
        extensions=extensions,
        controllers=[crd_controller, namespace_controller, serviceaccounts_controller, kubernetes_service,
                     garbage_collector, aggregate_cluster_roles, workspace_controller(external_url), binding_controller,
                     lambda parts: Compactor(parts.storage, compaction_interval)],
        service_accounts=service_accounts,
        jwks_uri=jwks_uri,
        audit_log_path=audit_log_path,
        run_controllers=run_controllers,
        watch_cache_size=watch_cache_size,
        watch=watch or WatchSettings(),
        etcd_tls=etcd_tls,
        live_checks=live_checks or {},
        export_views=export_views,
        initializing_views=initializing_views,
        syncer_views=syncer_views,
    )
