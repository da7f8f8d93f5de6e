"""One informer per (endpoint, cluster, resource, scope) per process (client-go's SharedInformerFactory).

Two controllers in one process that both watch Deployments over `*` must not
open two watches and keep two caches: they ask the factory, and get the same
`SharedInformer`. The syncer and the cluster controller also watch physical
clusters: an informer may name the client factory of another server, and the
server is part of the key, so kcp's `default/web` and a physical cluster's
never share a cache. Informers are shared by what they watch, not by whose
credentials they watch it with.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from .dynamic import DynamicClient
from .informer import SharedInformer, Transform
from .reflector import ReflectorOptions
from .tasks import cancel_and_wait, spawn


class DynamicClients(Protocol):
    """Anything that gives a dynamic client per cluster of one server (a `ClientFactory`, a `KubeClientFactory`)."""

    @property
    def server(self) -> str:
        """The server's URL: the endpoint part of an informer's key."""
        ...

    def dynamic(self, cluster: str) -> DynamicClient: ...


@dataclass(frozen=True, order=True)
class InformerKey:
    """What makes two informers the same watch: the endpoint (server URL) and what is watched there."""

    cluster: str
    api_version: str
    plural: str
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""
    endpoint: str = ""  # last, so keys built by position before endpoints existed still mean the same


class SharedInformerFactory:
    """Hands out shared informers and runs them; `start()` again after asking for more.

    `clients` reaches the default endpoint; `informer(clients=...)` watches another one.
    `transform` trims every object before any of its informers caches it.
    """

    def __init__(self, clients: DynamicClients, *, options: ReflectorOptions | None = None,
                 transform: Transform | None = None) -> None:
        self.clients = clients
        self.options = options
        self.transform = transform
        self._informers: dict[InformerKey, SharedInformer] = {}
        self._tasks: dict[InformerKey, asyncio.Task[None]] = {}
        self._started = False

    def informer(self, *, cluster: str, api_version: str, plural: str, namespaced: bool,
                 namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, clients: DynamicClients | None = None) -> SharedInformer:
        """The informer for this watch, created on first request (and started, if the factory runs).

        `clients` (default: the factory's own) picks the endpoint; for a `KubeClientFactory`
        `cluster` is its name.
        """
        clients = self.clients if clients is None else clients
        key = InformerKey(cluster, api_version, plural, namespace or "", label_selector or "", field_selector or "",
                          endpoint=clients.server)
        informer = self._informers.get(key)
        if informer is None:
            resource = clients.dynamic(cluster).resource(api_version, plural, namespaced=namespaced)
            informer = SharedInformer(resource, cluster=cluster, namespace=namespace, label_selector=label_selector,
                                      field_selector=field_selector, options=self.options, name=_name(key),
                                      transform=self.transform)
            self._informers[key] = informer
            if self._started:
                self._start(key, informer)
        return informer

    @property
    def informers(self) -> dict[InformerKey, SharedInformer]:
        return dict(self._informers)

    def start(self) -> None:
        """Run every informer not yet running (call inside the event loop)."""
        self._started = True
        for key, informer in self._informers.items():
            if key not in self._tasks:
                self._start(key, informer)

    def _start(self, key: InformerKey, informer: SharedInformer) -> None:
        self._tasks[key] = spawn(informer.run(), name=informer.name)

    async def wait_for_sync(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - False on timeout
        """True once every informer has its first list; False if `timeout` seconds passed first."""
        results = await asyncio.gather(*(i.wait_for_sync(timeout) for i in self._informers.values()))
        return all(results)

    async def stop(self) -> None:
        """Stop every informer and wait until they have."""
        self._started = False
        tasks, self._tasks = list(self._tasks.values()), {}
        await cancel_and_wait(*tasks)

    async def __aenter__(self) -> SharedInformerFactory:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop()


def _name(key: InformerKey) -> str:
    scope = f"/{key.namespace}" if key.namespace else ""
    selectors = ",".join(s for s in (key.label_selector, key.field_selector) if s)
    name = f"informer:{key.cluster}:{key.api_version}/{key.plural}{scope}" + (f"[{selectors}]" if selectors else "")
    return f"{name}@{key.endpoint}" if key.endpoint else name
