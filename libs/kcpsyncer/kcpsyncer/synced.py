"""What the syncer queues (`SyncKey`) and what it knows of each synced type (`SyncedType`: both sides' caches)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kcpcommon.dynamic import DynamicResource
from kcpcommon.informer import SharedInformer
from kcpcommon.keys import ObjectKey
from kcpcommon.store import NAMESPACE_INDEX

from .discovery import APIType
from .names import UPSTREAM_CLUSTER_ANNOTATION, UPSTREAM_NAME_ANNOTATION, UPSTREAM_NAMESPACE_ANNOTATION
from .objects import Obj, meta
from .pernamespace import PerNamespaceInformer


@dataclass(frozen=True, order=True, slots=True)
class SyncKey:
    """An upstream object of one synced type; `resource` "" is a downstream namespace to clean up (`name`)."""

    resource: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.resource}:{self.namespace}/{self.name}" if self.resource else f"namespace:{self.name}"


@dataclass
class TypeCaches:
    """One resource type on both sides: its two clients and two informers, and the keys held until they list."""

    name: str
    up: APIType
    down: APIType
    up_resource: DynamicResource
    down_resource: DynamicResource
    up_informer: SharedInformer
    down_informer: SharedInformer | PerNamespaceInformer  # per namespace: a type not readable cluster-wide

    def __post_init__(self) -> None:
        self.waiting: set[SyncKey] = set()  # keys held until the caches have listed
        self.release: asyncio.Task[None] | None = None  # queues `waiting` once they have
        self.also_read: list[SharedInformer] = []  # other caches its reconcile reads (a pod: kcp's revisions)

    @property
    def informers(self) -> list[SharedInformer | PerNamespaceInformer]:
        return [self.up_informer, self.down_informer, *self.also_read]

    @property
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.informers)


@dataclass
class SyncedType(TypeCaches):
    """One resource type synced down (spec) and up (status)."""

    state_informer: SharedInformer | None = None  # upstream objects assigned by `state.workload.kcp.io/<target>`

    def __post_init__(self) -> None:
        super().__post_init__()
        self.status_up = self.up.has_status and self.down.has_status

    @property
    def informers(self) -> list[SharedInformer | PerNamespaceInformer]:
        return [*super().informers, *([self.state_informer] if self.state_informer else [])]

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


def applied_key(resource: str, down: Obj, logical_cluster: str) -> SyncKey | None:
    """The upstream key of a downstream object the down path applied (its provenance annotations), or None."""
    annotations = meta(down).get("annotations") or {}
    if annotations.get(UPSTREAM_CLUSTER_ANNOTATION) != logical_cluster or not annotations.get(UPSTREAM_NAME_ANNOTATION):
        return None
    if annotations.get(UPSTREAM_NAMESPACE_ANNOTATION) and annotations[UPSTREAM_NAME_ANNOTATION] != meta(down).get("name"):
        return None  # not ours but made from ours: a Deployment's ReplicaSets inherit its annotations
    return SyncKey(resource, str(annotations.get(UPSTREAM_NAMESPACE_ANNOTATION) or ""),
                   str(annotations[UPSTREAM_NAME_ANNOTATION]))
