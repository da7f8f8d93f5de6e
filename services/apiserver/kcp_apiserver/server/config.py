"""`ServerConfig`: what one API server serves and how it decides.

kcp-apiserver and kcp-sim-cluster are two configurations of the same package:
the resources they serve as built-in types, who may call them (authenticators,
authorizer), what every write passes (admission plugins) and what runs beside
the handlers (in-process controllers). Plugins and controllers are factories
because they need the server's parts (storage, watch caches, registry), which
exist only once the server starts.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry

from kcp_apiserver.endpoints.apiexports import ExportContent
from kcp_apiserver.endpoints.base import Visibility, WatchSettings
from kcp_apiserver.endpoints.initializing import InitializingContent
from kcp_apiserver.endpoints.reviews import Answer
from kcp_apiserver.endpoints.syncerview import SyncerContent
from kcp_apiserver.filters.authentication import Authenticator
from kcp_apiserver.filters.authorization import AlwaysAllow, Authorizer
from kcp_apiserver.registry.actions import Action
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.informers import Informers
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.serviceaccounts import ServiceAccountTokens
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.etcd_client import TLSFiles
from kcpcommon.health import Check


class Runnable(Protocol):
    """An in-process controller: `start()` returns once it runs, `stop()` once it stopped."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass
class ServerParts:
    """What plugins and controllers are built from."""

    storage: Storage
    caches: WatchCaches
    catalog: Catalog
    run_controllers: bool
    informers: Informers  # one shared informer per resource, for every in-process consumer
    metrics: CollectorRegistry | None = None  # the server's /metrics registry
    registry: Registry | None = None  # set once admission is built: plugins never write through it


AdmissionFactory = Callable[[ServerParts], Awaitable[object]]  # a plugin with admit() and/or validate()
ControllerFactory = Callable[[ServerParts], Runnable]


@dataclass
class ServerConfig:
    etcd_endpoints: list[str]
    resources: Sequence[Resource]  # built-in types, served in every logical cluster
    authenticators: Sequence[Authenticator]
    authorizer: Authorizer = field(default_factory=AlwaysAllow)
    # create-only resources answered by a function, never stored (the review APIs), by (group, plural)
    answers: Mapping[tuple[str, str], Answer] = field(default_factory=dict)
    # subresources with handlers of their own that CRD-served types gain, by (group, plural): kcp's pods' streams
    custom_actions: Mapping[tuple[str, str], tuple[Action, ...]] = field(default_factory=dict)
    admission: Sequence[AdmissionFactory] = ()  # in order; mutating ones run before validating ones
    extensions: Sequence[ControllerFactory] = ()  # run in every replica, before serving (CRD serving)
    controllers: Sequence[ControllerFactory] = ()  # run only where run_controllers (one replica of several)
    run_controllers: bool = True  # take part in the election for them (one replica of several leads)
    identity: str = field(default_factory=socket.gethostname)  # this replica, in the leader election
    watch_cache_size: int = 10_000
    track_managed_fields: bool = True  # metadata.managedFields on every write; off only for the benchmark
    cluster_annotation: bool = True  # kcp.io/cluster on every stored object (kcp's); a simulated cluster: off
    watch: WatchSettings = field(default_factory=WatchSettings)
    etcd_tls: TLSFiles | None = None  # None: etcd in plain text
    live_checks: Mapping[str, Check] = field(default_factory=dict)  # /livez checks beyond ping (embedded etcd)
    visibility: Visibility | None = None  # which listed and watched objects each user is shown (None: all)
    service_accounts: ServiceAccountTokens | None = None  # TokenRequest and the issuer's OIDC documents
    jwks_uri: str = ""  # where the OIDC discovery document says the keys are
    audit_log_path: str = ""  # "": no audit; "-": standard output
    version: Mapping[str, str] | None = None  # what /version answers (None: kcp's own)
    # APIExports' virtual workspaces (`/services/apiexport/...`), built once admission is (None: not served)
    export_views: Callable[[ServerParts], ExportContent] | None = None
    # initializers' virtual workspaces (`/services/initializingworkspaces/...`), built once admission is (None: not
    # served)
    initializing_views: Callable[[ServerParts], InitializingContent] | None = None
    # SyncTargets' syncer virtual workspaces (`/services/syncer/...`), built once admission is (None: not served)
    syncer_views: Callable[[ServerParts], Awaitable[SyncerContent]] | None = None
