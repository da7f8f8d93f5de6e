"""The physical cluster's namespaces of one syncer: `kcp-<hash>` per upstream namespace, made on first use,
deleted once nothing synced is left in them on either side, unless something else still is (then annotated).

A namespace is made with a create, never an apply: a pull-mode syncer may create namespaces anywhere but
patch only its own (an apply that creates is also a patch of that name), and one that exists already is
left as it is (labelling someone else's namespace as ours would earn it nothing, and take nothing)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

from structlog.typing import FilteringBoundLogger

from kcpcommon.controller import Result
from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIAlreadyExistsError, APIForbiddenError, APINotFoundError
from kcpcommon.store import NAMESPACE_INDEX

from .foreign import ForeignObjects
from .names import (
    FIELD_MANAGER,
    KEPT_ANNOTATION,
    NAMESPACE_LOCATOR_ANNOTATION,
    OWNER_LABEL,
    SYNC_TARGET_KEY_ANNOTATION,
    namespace_locator,
)
from .objects import Obj, deleting, meta
from .synced import SyncedType, TypeCaches, applied_key

KEPT_RETRY = 30.0  # seconds until a namespace kept by objects of others is looked at again
KEPT_SHOWN = 20  # objects named in the annotation; the rest are counted


class DownstreamNamespaces:
    """Ensures and cleans up the downstream namespaces; remembers which exist, so an apply costs no extra call."""

    def __init__(self, down: DynamicClient, *, logical_cluster: str, owner: str, sync_target_key: str,
                 log: FilteringBoundLogger) -> None:
        self._namespaces = down.resource("v1", "namespaces", namespaced=False)
        self._lc = logical_cluster
        self._owner = owner
        self._sync_target_key = sync_target_key
        self._log = log
        self.known: set[str] = set()  # downstream namespaces known to exist
        self._locks: dict[str, asyncio.Lock] = {}
        self._origin: dict[str, str] = {}  # downstream namespace -> upstream namespace
        self._foreign = ForeignObjects(down, owner=owner, log=log)

    def forget(self, down_ns: str) -> None:
        """`down_ns` may be gone or terminating: the next apply into it ensures it again."""
        self.known.discard(down_ns)

    async def ensure(self, down_ns: str, up_ns: str) -> None:
        if down_ns in self.known:
            return
        lock = self._locks.setdefault(down_ns, asyncio.Lock())
        async with lock:
            if down_ns in self.known:
                return
            body = {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": down_ns, "labels": {OWNER_LABEL: self._owner},
                                 "annotations": {NAMESPACE_LOCATOR_ANNOTATION: namespace_locator(self._lc, up_ns),
                                                 SYNC_TARGET_KEY_ANNOTATION: self._sync_target_key}}}
            try:
                await self._namespaces.create(body, field_manager=FIELD_MANAGER)
            except APIAlreadyExistsError:
                pass  # made by us before (or terminating: the write into it says so, and forgets it)
            self.known.add(down_ns)
            self._origin[down_ns] = up_ns

    async def cleanup(self, down_ns: str, types: Iterable[SyncedType], mirrored: Iterable[TypeCaches] = (),
                      *, found: Obj | None = None) -> Result | None:
        """Delete a downstream namespace of ours once nothing synced is left in it, on either side, nothing
        our workloads made (`mirrored` kinds: pods a ReplicaSet deleted with orphan left running, a StatefulSet's
        retained claims) and nothing the syncer did not make (`foreign.py`): deleting it would delete them.
        A namespace kept by what is left says so in its KEPT_ANNOTATION; one kept by objects of others is looked
        at again after KEPT_RETRY s (nothing watches them), a mirrored object's delete queues it anyway.
        `found`: the namespace as a cache holds it (else it is read, unless this syncer made it)."""
        up_ns = self._origin.get(down_ns)
        if up_ns is None:
            if found is not None and meta(found).get("deletionTimestamp"):
                return None  # going already
            try:
                found = found if found is not None else await self._namespaces.get(down_ns)
            except APINotFoundError:
                return None
            if (meta(found).get("labels") or {}).get(OWNER_LABEL) != self._owner:
                return None
            up_ns = downstream_origin(found)
            if up_ns is None:
                return None
        left: set[str] = set()  # what our workloads made and left behind (a StatefulSet's retained claims)
        going = False  # what goes with its owner, or is going: its delete queues the namespace again
        for typ in types:
            if not typ.synced:
                return None
            downs = typ.down_informer.indexer.by_index(NAMESPACE_INDEX, down_ns)
            if any(not deleting(obj) for obj in typ.upstream_in(up_ns)) \
                    or any(applied_key(typ.name, obj, self._lc) is not None for obj in downs):
                await self._explain(down_ns, found, [])  # in use again: nothing to explain
                return None
            going = _leftovers(typ.name, downs, left) or going  # a claim's cache is also the mirror's
        for held in mirrored:
            if not held.synced:
                return None
            going = _leftovers(held.name, held.down_informer.indexer.by_index(NAMESPACE_INDEX, down_ns), left) \
                or going
        if left:
            await self._explain(down_ns, found, sorted(left))
            return None
        if going:
            return None
        others = await self._foreign.find(down_ns)
        if others:
            await self._explain(down_ns, found, others)
            return Result(requeue_after=KEPT_RETRY)
        self.known.discard(down_ns)
        try:
            await self._namespaces.delete(down_ns)
        except APINotFoundError:
            return None
        self._log.info("deleted empty downstream namespace", namespace=up_ns, downstream_namespace=down_ns)
        return None

    async def _explain(self, down_ns: str, found: Obj | None, kept: list[str]) -> None:
        """Say in the namespace's KEPT_ANNOTATION what keeps it (nothing: the annotation goes), when that
        changed; a merge patch of the namespace, ours."""
        value = ", ".join(kept[:KEPT_SHOWN]) + (f" (and {len(kept) - KEPT_SHOWN} more)" if len(kept) > KEPT_SHOWN
                                                 else "") if kept else None
        if found is not None and (meta(found).get("annotations") or {}).get(KEPT_ANNOTATION) == value:
            return
        if found is None and value is None:
            return  # not known to carry one: an extra read for every namespace in use is not worth it
        if value is not None:
            self._log.info("downstream namespace kept: it holds objects the syncer did not sync",
                           downstream_namespace=down_ns, kept=value)
        try:
            await self._namespaces.patch(down_ns, {"metadata": {"annotations": {KEPT_ANNOTATION: value}}},
                                         field_manager=FIELD_MANAGER)
        except (APINotFoundError, APIForbiddenError) as exc:  # gone, or an identity that may not patch it
            self._log.info("downstream namespace not annotated", downstream_namespace=down_ns, error=str(exc))


def _leftovers(resource: str, objs: Iterable[Obj], left: set[str]) -> bool:
    """Add to `left` the objects that stay unless someone deletes them (no owner, not going); whether others,
    which go by themselves, are there."""
    going = False
    for obj in objs:
        if deleting(obj) or meta(obj).get("ownerReferences"):
            going = True
        else:
            left.add(f"{resource}/{meta(obj).get('name')}")
    return going


def downstream_origin(namespace: Obj) -> str | None:
    """The upstream namespace a downstream namespace's locator annotation names."""
    return _locator(namespace, "namespace")


def downstream_workspace(namespace: Obj) -> str | None:
    """The logical cluster a downstream namespace's locator annotation names."""
    return _locator(namespace, "logicalCluster")


def _locator(namespace: Obj, field: str) -> str | None:
    text = (meta(namespace).get("annotations") or {}).get(NAMESPACE_LOCATOR_ANNOTATION)
    try:
        locator = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    value = locator.get(field) if isinstance(locator, dict) else None
    return value if isinstance(value, str) else None
