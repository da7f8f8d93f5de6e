"""How a request reaches the server: credentials, the client-side token bucket, one connection pool.

`ThrottledApiClient` is a kubernetes_asyncio `ApiClient` (typed APIs work on
it) that every request first takes a token from. The dynamic client does not
go through kubernetes_asyncio's request path: `send` hands raw JSON bytes to
aiohttp directly. The library's path walks every body to "sanitize" it, and
its session has `trust_env` on, so aiohttp looks up proxy variables and
`~/.netrc` in a worker thread on *every* request: two thread hops per write,
the largest single cost of a busy syncer. `send` uses the same connections and
credentials, reads the proxy environment once (as client-go does), and never
consults netrc (kubeconfigs carry the credentials).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import aiohttp
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from .flowcontrol import TokenBucket

AUTH_SETTINGS = ["BearerToken"]
READ_BUFFER = 2**21  # as kubernetes_asyncio: a watch event can carry a 1.5 MiB object


class ThrottledApiClient(ApiClient):
    """An `ApiClient` whose every request first takes a token from a shared bucket.

    Per-cluster clients are shallow clones of one owner: they share its aiohttp
    sessions (and so its connections); only the owner really closes them.
    """

    def __init__(self, configuration: Configuration, *, bucket: TokenBucket, user_agent: str) -> None:
        super().__init__(configuration)
        self.bucket = bucket
        self.user_agent = user_agent
        self._owns_session = True
        # the dynamic client's session: kubernetes_asyncio's connections, without per-request env lookups
        self.session = aiohttp.ClientSession(connector=self.rest_client.pool_manager.connector,
                                             connector_owner=False, trust_env=False, read_bufsize=READ_BUFFER)
        self._proxy = _proxy_options(configuration)

    async def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        await self.bucket.acquire()
        return await super().request(method, url, *args, **kwargs)

    async def send(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (),
                   headers: Mapping[str, str], body: bytes | None = None,
                   timeout: aiohttp.ClientTimeout) -> aiohttp.ClientResponse:  # noqa: ASYNC109 - for aiohttp
        """`method` on `path` below this client's base URL, after a token; the caller releases the response."""
        url, all_headers = await self._authorized(path, query, headers)
        await self.bucket.acquire()
        response: aiohttp.ClientResponse = await self.session.request(
            method, url, data=body, headers=all_headers, timeout=timeout, **self._proxy)
        return response

    async def websocket(self, path: str, *, query: Sequence[tuple[str, str]] = (), protocols: Sequence[str] = (),
                        heartbeat: float | None = None) -> aiohttp.ClientWebSocketResponse:
        """A WebSocket to `path` below this client's base URL, with its credentials (the syncer's tunnel);
        aiohttp's WSServerHandshakeError when the server does not upgrade."""
        url, all_headers = await self._authorized(path, query, {})
        await self.bucket.acquire()
        ws: aiohttp.ClientWebSocketResponse = await self.session.ws_connect(
            url, protocols=tuple(protocols), headers=all_headers, heartbeat=heartbeat, max_msg_size=0, **self._proxy)
        return ws

    async def _authorized(self, path: str, query: Sequence[tuple[str, str]],
                          headers: Mapping[str, str]) -> tuple[str, dict[str, str]]:
        all_headers = {**self.default_headers, **headers}
        if self.cookie:
            all_headers["Cookie"] = self.cookie
        params = list(query)
        await self.update_params_for_auth(all_headers, params, AUTH_SETTINGS)  # a refreshed token, if any
        url = (self.configuration.host or "") + path
        if params:
            url += "?" + urlencode(params)
        return url, all_headers

    def clone(self, configuration: Configuration) -> ThrottledApiClient:
        """The same sessions, bucket and headers, another configuration (base URL)."""
        other = copy.copy(self)
        other.configuration = configuration
        other.default_headers = dict(self.default_headers)
        other._owns_session = False
        return other

    async def close(self) -> None:
        if self._owns_session:
            await self.session.close()
            await super().close()


def _proxy_options(configuration: Configuration) -> dict[str, Any]:
    """The proxy arguments for every request to this server: the configuration's, else the environment's."""
    options: dict[str, Any] = {}
    if configuration.tls_server_name:
        options["server_hostname"] = configuration.tls_server_name
    if configuration.proxy:
        options["proxy"] = configuration.proxy
        if configuration.proxy_headers:
            options["proxy_headers"] = configuration.proxy_headers
        return options
    with contextlib.suppress(LookupError, ValueError):  # no proxy variable for this host (or no_proxy names it)
        proxy, proxy_auth = aiohttp.helpers.get_env_proxy_for_url(URL(configuration.host or ""))
        options["proxy"], options["proxy_auth"] = proxy, proxy_auth
    return options
