"""The physical cluster's namespaces of one syncer: `kcp-<hash>` per upstream namespace, made on first use,
deleted once nothing synced is left in them on either side."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

from structlog.typing import FilteringBoundLogger

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APINotFoundError
from kcpcommon.store import NAMESPACE_INDEX

from .names import FIELD_MANAGER, NAMESPACE_LOCATOR_ANNOTATION, OWNER_LABEL, namespace_locator
from .objects import Obj, deleting, meta
from .synced import SyncedType


class DownstreamNamespaces:
    """Ensures and cleans up the downstream namespaces; remembers which exist, so an apply costs no extra call."""

    def __init__(self, down: DynamicClient, *, logical_cluster: str, owner: str,
                 log: FilteringBoundLogger) -> None:
        self._namespaces = down.resource("v1", "namespaces", namespaced=False)
        self._lc = logical_cluster
        self._owner = owner
        self._log = log
        self.known: set[str] = set()  # downstream namespaces known to exist
        self._locks: dict[str, asyncio.Lock] = {}
        self._origin: dict[str, str] = {}  # downstream namespace -> upstream namespace

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
                                 "annotations": {NAMESPACE_LOCATOR_ANNOTATION: namespace_locator(self._lc, up_ns)}}}
            await self._namespaces.patch(down_ns, body, patch_type="apply", field_manager=FIELD_MANAGER, force=True)
            self.known.add(down_ns)
            self._origin[down_ns] = up_ns

    async def cleanup(self, down_ns: str, types: Iterable[SyncedType]) -> None:
        """Delete a downstream namespace of ours once nothing synced is left in it, on either side."""
        up_ns = self._origin.get(down_ns)
        if up_ns is None:
            try:
                found = await self._namespaces.get(down_ns)
            except APINotFoundError:
                return
            if (meta(found).get("labels") or {}).get(OWNER_LABEL) != self._owner:
                return
            up_ns = downstream_origin(found)
            if up_ns is None:
                return
        for typ in types:
            if not typ.synced:
                return
            if any(not deleting(obj) for obj in typ.upstream_in(up_ns)):
                return
            if typ.down_informer.indexer.by_index(NAMESPACE_INDEX, down_ns):
                return
        self.known.discard(down_ns)
        try:
            await self._namespaces.delete(down_ns)
        except APINotFoundError:
            return
        self._log.info("deleted empty downstream namespace", namespace=up_ns, downstream_namespace=down_ns)


def downstream_origin(namespace: Obj) -> str | None:
    """The upstream namespace a downstream namespace's locator annotation names."""
    text = (meta(namespace).get("annotations") or {}).get(NAMESPACE_LOCATOR_ANNOTATION)
    try:
        locator = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    value = locator.get("namespace") if isinstance(locator, dict) else None
    return value if isinstance(value, str) else None
