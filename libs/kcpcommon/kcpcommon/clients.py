"""API clients from one kubeconfig: per logical cluster of kcp, or for any Kubernetes server.

`ClientFactory` serves kcp: a controller talks to many logical clusters (and
to `*`, all of them) of one server, so it hands out, per logical cluster, a
kubernetes_asyncio `ApiClient` whose base URL is `<server>/clusters/<name>`.
`KubeClientFactory` serves one physical cluster (k3s, kind, EKS, a
kcp-sim-cluster) at the URL its kubeconfig gives, path included; the syncer
and the cluster controller hold one per SyncTarget, loaded from the
kubeconfig text in its spec. The URL rule is all that differs: both share
`BaseClientFactory`, so typed APIs (`CoreV1Api(api_client)`) and the
`DynamicClient` work on either, and every client of one factory shares its
connection pool, user agent and client-side token bucket: the process keeps
to `qps`/`burst` per server however many logical clusters it touches.

Typed APIs keep kubernetes_asyncio's own exceptions (its helpers, such as its
leader election, catch `ApiException`); wrap typed calls in
`errors.translate()`. The dynamic client translates by itself. A kubeconfig
that yields no usable configuration raises `errors.InvalidKubeconfigError`.
"""

from __future__ import annotations

import copy
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Self

import structlog
from kubernetes_asyncio.client import Configuration

from .dynamic import DynamicClient
from .errors import InvalidKubeconfigError
from .flowcontrol import TokenBucket
from .keys import WILDCARD_CLUSTER
from .kubeconfig import configuration_from_text, load_configuration
from .transport import ThrottledApiClient

__all__ = ["BaseClientFactory", "ClientFactory", "DynamicClient", "KubeClientFactory", "ThrottledApiClient",
           "base_server"]

log = structlog.get_logger("kcpcommon.clients")

_CLUSTER_NAME = re.compile(r"^[a-z0-9]([a-z0-9:-]{0,78}[a-z0-9])?$")
_CLUSTER_SUFFIX = re.compile(r"/clusters/[^/]+/?$")


CONNECTIONS = 1000  # per server: room for the long-lived watches of many informers


def base_server(server: str) -> str:
    """The server URL without a trailing `/clusters/<name>` (kcp kubeconfigs often carry one)."""
    return _CLUSTER_SUFFIX.sub("", server.rstrip("/")).rstrip("/")


def _check_cluster(cluster: str) -> str:
    if cluster != WILDCARD_CLUSTER and not _CLUSTER_NAME.match(cluster):
        raise ValueError(f"invalid logical cluster name {cluster!r}")
    return cluster


class BaseClientFactory(ABC):
    """`ApiClient`s and `DynamicClient`s per cluster of one server, sharing one pool, user agent and bucket.

    A subclass says only where a cluster's requests go (`_server_url`, `_url`).
    Construct it inside a running event loop (aiohttp needs one); prefer `load()`
    or `from_text()`. Close it (or use `async with`) to release the connections.
    """

    def __init__(self, configuration: Configuration, *, component: str, version: str,
                 qps: float = 50.0, burst: int = 100, request_timeout: float = 60.0) -> None:
        self.server = self._server_url((configuration.host or "").rstrip("/"))
        self.version = version
        self.user_agent = f"{component}/{version}"
        self.request_timeout = request_timeout
        # every watch holds one connection for minutes (no HTTP/2 multiplexing as client-go has): a process
        # running many informers, such as push-mode syncers, must not queue its requests behind them
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, CONNECTIONS)
        self._configuration = configuration
        try:
            self._owner = ThrottledApiClient(self._configuration_at(self.server), bucket=TokenBucket(qps, burst),
                                             user_agent=self.user_agent)
        except OSError as exc:  # an unreadable CA or client certificate (ssl.SSLError is an OSError)
            raise InvalidKubeconfigError(f"unusable TLS credentials for {self.server}: {exc}") from exc
        self._clients: dict[str, ThrottledApiClient] = {}
        self._closed = False

    @classmethod
    async def load(cls, kubeconfig: str | Path | None = None, *, context: str | None = None,
                   **options: Any) -> Self:
        """From a kubeconfig file path, kubeconfig text, or (None) the in-cluster service account.

        A `str` holding a newline (or a JSON object) is kubeconfig text; any other
        string is a path. `options` are the constructor's (component, version, qps, ...).
        """
        return cls._configured(await load_configuration(kubeconfig, context=context), options)

    @classmethod
    async def from_text(cls, text: str, *, context: str | None = None, **options: Any) -> Self:
        """From kubeconfig text only (e.g. `SyncTarget.spec.kubeconfig`): never read as a file path."""
        return cls._configured(await configuration_from_text(text, context=context), options)

    @classmethod
    def _configured(cls, configuration: Configuration, options: dict[str, Any]) -> Self:
        factory = cls(configuration, **options)
        bucket = factory._owner.bucket
        log.info("api clients configured", factory=cls.__name__, server=factory.server,
                 user_agent=factory.user_agent, qps=bucket.qps, burst=bucket.burst)
        return factory

    @abstractmethod
    def _server_url(self, host: str) -> str:
        """The server this factory talks to, from the configuration's host (no trailing `/`)."""

    @abstractmethod
    def _url(self, cluster: str) -> str:
        """The base URL of `cluster`'s requests; ValueError for a cluster this factory cannot reach."""

    def _configuration_at(self, url: str) -> Configuration:
        configuration = copy.deepcopy(self._configuration)
        configuration.host = url
        return configuration

    def api_client(self, cluster: str) -> ThrottledApiClient:
        """The ApiClient for one cluster; owned by the factory, do not close it."""
        if self._closed:
            raise RuntimeError("the client factory is closed")
        client = self._clients.get(cluster)
        if client is None:
            client = self._owner.clone(self._configuration_at(self._url(cluster)))
            self._clients[cluster] = client
        return client

    def dynamic(self, cluster: str) -> DynamicClient:
        """A dynamic (plain-dict) client for one cluster."""
        return DynamicClient(self.api_client(cluster), request_timeout=self.request_timeout)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._clients.clear()
            await self._owner.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class ClientFactory(BaseClientFactory):
    """kcp's logical clusters, each at `<server>/clusters/<name>`; `"*"` is all of them.

    A kubeconfig that names one logical cluster (`.../clusters/user`) serves them all.
    """

    def _server_url(self, host: str) -> str:
        return base_server(host)

    def _url(self, cluster: str) -> str:
        return f"{self.server}/clusters/{_check_cluster(cluster)}"


    def through(self, path: str) -> ClientFactory:
        """The same credentials and budget, with every logical cluster under `<server><path>` (a virtual workspace
        such as kcp's syncer view, `/services/syncer/<cluster>/<synctarget>`). Close it after."""
        configuration = copy.deepcopy(self._configuration)
        configuration.host = self.server + "/" + path.strip("/")
        bucket = self._owner.bucket
        return ClientFactory(configuration, component=self.user_agent.partition("/")[0], version=self.version,
                             qps=bucket.qps, burst=bucket.burst, request_timeout=self.request_timeout)

    def with_budget(self, *, component: str, qps: float, burst: int) -> ClientFactory:
        """The same server and credentials with a rate budget and connections of its own: what a component
        run inside this process (a push-mode syncer) would have as its own process. Close it after."""
        return ClientFactory(copy.deepcopy(self._configuration), component=component, version=self.version,
                             qps=qps, burst=burst, request_timeout=self.request_timeout)


class KubeClientFactory(BaseClientFactory):
    """One Kubernetes cluster (k3s, kind, EKS, a kcp-sim-cluster) at exactly its kubeconfig's URL.

    The URL's path is part of the address (a sim cluster's `/clusters/sim-3`, a
    proxy's `/k8s/clusters/c-1`), so it is kept. `name` is what object keys and
    logs call this cluster (a SyncTarget's name); `api_client()` and `dynamic()`
    need no argument, and answer only to that name if given one, so the factory
    also serves a `SharedInformerFactory`.
    """

    def __init__(self, configuration: Configuration, *, name: str, component: str, version: str,
                 qps: float = 50.0, burst: int = 100, request_timeout: float = 60.0) -> None:
        if not name or name == WILDCARD_CLUSTER or "|" in name or "/" in name:
            raise ValueError(f"invalid cluster name {name!r}: it must be non-empty, not `*`, without | or /")
        self.name = name
        super().__init__(configuration, component=component, version=version, qps=qps, burst=burst,
                         request_timeout=request_timeout)

    def _server_url(self, host: str) -> str:
        return host

    def _url(self, cluster: str) -> str:
        if cluster != self.name:
            raise ValueError(f"{self.server} is the cluster {self.name!r}, it has no cluster {cluster!r}")
        return self.server

    def api_client(self, cluster: str | None = None) -> ThrottledApiClient:
        """The cluster's ApiClient; owned by the factory, do not close it."""
        return super().api_client(self.name if cluster is None else cluster)

    def dynamic(self, cluster: str | None = None) -> DynamicClient:
        """A dynamic (plain-dict) client for the cluster."""
        return super().dynamic(self.name if cluster is None else cluster)
