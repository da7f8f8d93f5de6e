"""What the syncer queues (`SyncKey`) and what it knows of each synced type (`SyncedType`: both sides' caches)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kcpcommon.dynamic import DynamicResource
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import ObjectKey
from kcpcommon.store import NAMESPACE_INDEX

from .discovery import APIType
from .objects import Obj


@dataclass(frozen=True, order=True, slots=True)
class SyncKey:
    """An upstream object of one synced type; `resource` "" is a downstream namespace to clean up (`name`)."""

    resource: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.resource}:{self.namespace}/{self.name}" if self.resource else f"namespace:{self.name}"


@dataclass
class SyncedType:
    """One resource type served on both sides, with its two informers."""

    name: str
    up: APIType
    down: APIType
    up_resource: DynamicResource
    down_resource: DynamicResource
    up_informer: SharedInformer
    down_informer: SharedInformer
    state_informer: SharedInformer | None = None  # upstream objects assigned by `state.workload.kcp.io/<target>`
    status_up: bool = field(init=False)
    waiting: set[SyncKey] = field(init=False, default_factory=set)  # keys held until the caches have listed
    release: asyncio.Task[None] | None = field(init=False, default=None)  # queues `waiting` once they have

    def __post_init__(self) -> None:
        self.status_up = self.up.has_status and self.down.has_status

    @property
    def informers(self) -> list[SharedInformer]:
        return [self.up_informer, self.down_informer, *([self.state_informer] if self.state_informer else [])]

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers)

    def upstream(self, key: ObjectKey) -> Obj | None:
        """The cached upstream object, assigned by either label."""
        found = self.up_informer.indexer.get(key)
        if found is None and self.state_informer is not None:
            found = self.state_informer.indexer.get(key)
        return found

    def upstream_in(self, namespace: str) -> list[Obj]:
        """The cached upstream objects of `namespace`, assigned by either label."""
        informers = [self.up_informer, *([self.state_informer] if self.state_informer is not None else [])]
        return [obj for informer in informers for obj in informer.indexer.by_index(NAMESPACE_INDEX, namespace)]
