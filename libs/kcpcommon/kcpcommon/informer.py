"""A shared informer: one list+watch, one cache, any number of event handlers (client-go's).

The reflector lists and watches one resource and feeds a `SharedCache` (sharedcache.py says what
the cache and its handlers promise: frozen objects, tombstones for what vanished, one queue and
task per handler).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Protocol

from .dynamic import DynamicResource
from .keys import WILDCARD_CLUSTER, key_for
from .reflector import Reflector, ReflectorOptions
from .sharedcache import (
    DeletedFinalStateUnknown,
    Handler,
    HandlerRegistration,
    Obj,
    SharedCache,
    Transform,
    deleted_object,
    strip_managed_fields,
)
from .store import IndexFunc, IndexReader

__all__ = ["DeletedFinalStateUnknown", "Handler", "HandlerRegistration", "InformerView", "Obj", "Registration",
           "SharedCache", "SharedInformer", "Transform", "deleted_object", "strip_managed_fields"]


class Registration(Protocol):
    """What a caller keeps of `add_handler`: a `HandlerRegistration`, or one over several informers."""

    @property
    def has_synced(self) -> bool: ...

    async def wait_for_sync(self) -> None: ...

    def remove(self) -> None: ...


class InformerView(Protocol):
    """What a controller uses of a `SharedInformer`; `identities.AcrossIdentities` offers the same over every
    identity a type is served under, so code written against this takes either."""

    @property
    def name(self) -> str: ...

    @property
    def indexer(self) -> IndexReader: ...

    @property
    def has_synced(self) -> bool: ...

    @property
    def synced_or_unserved(self) -> bool: ...

    async def wait_for_sync(self, timeout: float | None = None) -> bool: ...  # noqa: ASYNC109 - False on timeout

    def add_indexers(self, indexers: Mapping[str, IndexFunc], *, skip_existing: bool = False) -> None: ...

    def add_handler(self, *, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None, name: str = "handler",
                    inline: bool = False, needs_old: bool = True) -> Registration: ...


class SharedInformer(SharedCache):
    """A cache of one resource in one logical cluster (or `*`), fed by list+watch, and its handlers."""

    def __init__(self, resource: DynamicResource, *, cluster: str, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc] | None = None, options: ReflectorOptions | None = None,
                 name: str | None = None, transform: Transform | None = None) -> None:
        # over `*` each object names its logical cluster in the kcp.io/cluster annotation
        key_func = functools.partial(key_for, cluster=None if cluster == WILDCARD_CLUSTER else cluster)
        super().__init__(name or f"informer:{cluster}:{resource.api_version}/{resource.plural}", key_func,
                         indexers=indexers, transform=transform)
        self.cluster = cluster
        self.resource = resource
        self.reflector = Reflector(resource, self, name=self.name, namespace=namespace,
                                   label_selector=label_selector, field_selector=field_selector, options=options)
        self._running = False

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    @property
    def synced_or_unserved(self) -> bool:
        """What readiness asks of an informer: it has listed, or its type is not served (yet), so there is
        nothing to list and the reflector follows the type until it is (then it must list again first)."""
        return self.has_synced or not self.reflector.served

    async def run(self) -> None:
        """List, watch and dispatch until cancelled."""
        if self._running:
            raise RuntimeError(f"{self.name} is already running")
        self._running = True
        self.start_handlers()
        try:
            await self.reflector.run()
        finally:
            self._running = False
            await self.stop_handlers()
