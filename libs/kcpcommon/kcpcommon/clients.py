"""Clients per logical cluster, from one kubeconfig.

A kcp controller talks to many logical clusters (and to `*`, all of them) of
one server. `ClientFactory` loads the credentials once and hands out, per
logical cluster, a kubernetes_asyncio `ApiClient` whose base URL is
`<server>/clusters/<name>`: typed APIs (`CoreV1Api(api_client)`) and the
`DynamicClient` both work on it. All of them share one connection pool, one
user agent and one client-side token bucket, so the process as a whole keeps
to `qps`/`burst` however many logical clusters it touches.

Typed APIs keep kubernetes_asyncio's own exceptions (its helpers, such as its
leader election, catch `ApiException`); wrap typed calls in
`errors.translate()`. The dynamic client translates by itself.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import structlog
import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration

from .dynamic import DynamicClient
from .flowcontrol import TokenBucket
from .keys import WILDCARD_CLUSTER

__all__ = ["ClientFactory", "DynamicClient", "ThrottledApiClient", "base_server"]

log = structlog.get_logger("kcpcommon.clients")

_CLUSTER_NAME = re.compile(r"^[a-z0-9]([a-z0-9:-]{0,78}[a-z0-9])?$")
_CLUSTER_SUFFIX = re.compile(r"/clusters/[^/]+/?$")


def base_server(server: str) -> str:
    """The server URL without a trailing `/clusters/<name>` (kcp kubeconfigs often carry one)."""
    return _CLUSTER_SUFFIX.sub("", server.rstrip("/")).rstrip("/")


def _check_cluster(cluster: str) -> str:
    if cluster != WILDCARD_CLUSTER and not _CLUSTER_NAME.match(cluster):
        raise ValueError(f"invalid logical cluster name {cluster!r}")
    return cluster


class ThrottledApiClient(ApiClient):
    """An `ApiClient` whose every request first takes a token from a shared bucket.

    Per-cluster clients are shallow clones of one owner: they share its aiohttp
    session (and so its connections); only the owner really closes it.
    """

    def __init__(self, configuration: Configuration, *, bucket: TokenBucket, user_agent: str) -> None:
        super().__init__(configuration)
        self.bucket = bucket
        self.user_agent = user_agent
        self._owns_session = True

    async def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        await self.bucket.acquire()
        return await super().request(method, url, *args, **kwargs)

    def clone(self, configuration: Configuration) -> ThrottledApiClient:
        """The same session, bucket and headers, another configuration (base URL)."""
        other = copy.copy(self)
        other.configuration = configuration
        other.default_headers = dict(self.default_headers)
        other._owns_session = False
        return other

    async def close(self) -> None:
        if self._owns_session:
            await super().close()


class ClientFactory:
    """`ApiClient`s and `DynamicClient`s per logical cluster (`"*"` included), sharing one pool.

    Construct it inside a running event loop (aiohttp needs one); prefer `load()`.
    Close it (or use `async with`) to release the connections.
    """

    def __init__(self, configuration: Configuration, *, component: str, version: str,
                 qps: float = 50.0, burst: int = 100, request_timeout: float = 60.0) -> None:
        self.server = base_server(configuration.host)
        self.user_agent = f"{component}/{version}"
        self.request_timeout = request_timeout
        self._configuration = configuration
        self._owner = ThrottledApiClient(self._cluster_configuration(""), bucket=TokenBucket(qps, burst),
                                         user_agent=self.user_agent)
        self._clients: dict[str, ThrottledApiClient] = {}
        self._closed = False

    @classmethod
    async def load(cls, kubeconfig: str | Path | None = None, *, context: str | None = None,
                   component: str, version: str, qps: float = 50.0, burst: int = 100) -> ClientFactory:
        """From a kubeconfig file path, kubeconfig YAML text, or (None) the in-cluster service account.

        A `str` holding a newline (or a JSON object) is kubeconfig text; any other string is a path.
        """
        configuration = Configuration()
        if kubeconfig is None:
            kube_config.load_incluster_config(client_configuration=configuration)
        elif isinstance(kubeconfig, Path) or not _looks_like_text(kubeconfig):
            await kube_config.load_kube_config(config_file=str(kubeconfig), context=context,
                                               client_configuration=configuration, persist_config=False)
        else:
            parsed = yaml.safe_load(kubeconfig)
            if not isinstance(parsed, dict):
                raise ValueError("kubeconfig text is not a YAML mapping")
            await kube_config.load_kube_config_from_dict(parsed, context=context,
                                                         client_configuration=configuration)
        factory = cls(configuration, component=component, version=version, qps=qps, burst=burst)
        log.info("api clients configured", server=factory.server, user_agent=factory.user_agent, qps=qps,
                 burst=burst)
        return factory

    def _cluster_configuration(self, cluster: str) -> Configuration:
        configuration = copy.deepcopy(self._configuration)
        configuration.host = f"{self.server}/clusters/{cluster}" if cluster else self.server
        return configuration

    def api_client(self, cluster: str) -> ApiClient:
        """The ApiClient for one logical cluster (or `*`); owned by the factory, do not close it."""
        if self._closed:
            raise RuntimeError("the client factory is closed")
        client = self._clients.get(cluster)
        if client is None:
            client = self._owner.clone(self._cluster_configuration(_check_cluster(cluster)))
            self._clients[cluster] = client
        return client

    def dynamic(self, cluster: str) -> DynamicClient:
        """A dynamic (plain-dict) client for one logical cluster (or `*`)."""
        return DynamicClient(self.api_client(cluster), request_timeout=self.request_timeout)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._clients.clear()
            await self._owner.close()

    async def __aenter__(self) -> ClientFactory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _looks_like_text(value: str) -> bool:
    return "\n" in value or value.lstrip().startswith("{")
