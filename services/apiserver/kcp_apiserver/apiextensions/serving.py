"""CRDs per logical cluster: what each logical cluster serves, and the CRDs' own status.

Every serving process follows all CRDs through the watch cache and keeps the
catalog current. One process (the one that runs controllers) also decides
names (NamesAccepted), marks CRDs Established and, when a CRD is deleted,
deletes its objects before letting the CRD go.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import structlog

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.resources import (
    CLEANUP_FINALIZER,
    is_established,
    resources_for,
    storage_version,
)
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import CLUSTER_ANNOTATION, Registry, now_rfc3339
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, Stored
from kcp_apiserver.storage.keys import object_key, scope_prefix
from kcp_apiserver.storage.watchcache import Follower, WatchCache
from kcpcommon.controller import Controller, Result
from kcpcommon.tasks import cancel_and_wait, spawn, supervise

log = structlog.get_logger("crds")
RETRY_SECONDS = 1.0
NAME_FIELDS = ("plural", "singular", "kind", "listKind")


def _cluster_of(crd: Obj) -> str:
    return str((crd["metadata"].get("annotations") or {}).get(CLUSTER_ANNOTATION, ""))


def _names(crd: Obj) -> dict[str, Any]:
    return (crd.get("status") or {}).get("acceptedNames") or {}


class CRDServing:
    """Follows CRDs into the catalog; with `controllers`, also maintains their status and cleanup."""

    def __init__(self, storage: Storage, cache: WatchCache, catalog: Catalog, registry: Registry) -> None:
        self.storage = storage
        self.cache = cache
        self.catalog = catalog
        self.registry = registry
        # per cluster and group: CRD name -> the names it asks for (for conflict checks; small on purpose)
        self.requested: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self.controller: Controller[tuple[str, str]] | None = None  # while this replica leads
        self._tasks: list[asyncio.Task[None]] = []
        self._controller_task: asyncio.Task[None] | None = None

    @property
    def controllers(self) -> bool:
        return self.controller is not None

    async def start(self, *, controllers: bool = False) -> None:
        """Follow CRDs into the catalog (serving depends on it, so the loop is supervised)."""
        follower = Follower(self.storage, self.cache, observe=self._observe, reset=self._reset, name="crds")
        first = [await follower.resync()]

        async def follow() -> None:
            await follower.follow(first.pop() if first else await follower.resync())

        self._tasks = [spawn(supervise(follow, name="crds:follow"), name="crds:follow")]
        if controllers:
            await self.start_controllers()

    async def start_controllers(self) -> None:
        """Names, status and cleanup of every CRD, from now on (the replica that leads calls this)."""
        self.controller = Controller("crd", self._reconcile)
        self._controller_task = spawn(self.controller.start(), name="crds:reconcile")
        for cluster, groups in self.requested.items():
            for names in groups.values():
                for name in names:
                    self.controller.enqueue((cluster, name))

    async def stop_controllers(self) -> None:
        if self._controller_task is not None:
            await cancel_and_wait(self._controller_task)
        self.controller, self._controller_task = None, None

    def _reset(self) -> None:
        self.catalog.clear_custom()
        self.requested.clear()

    async def stop(self) -> None:
        await self.stop_controllers()
        await cancel_and_wait(*self._tasks)

    def _observe(self, crd: Obj, deleted: bool) -> None:
        cluster, name = _cluster_of(crd), crd["metadata"]["name"]
        group = crd["spec"].get("group", "")
        by_group = self.requested.setdefault(cluster, {}).setdefault(group, {})
        if deleted:
            by_group.pop(name, None)
            self.catalog.remove_crd(cluster, name)
            self._requeue_group(cluster, group, name)
            return
        by_group[name] = dict(crd["spec"].get("names") or {})
        if is_established(crd) and not crd["metadata"].get("deletionTimestamp"):
            self.catalog.set_crd(cluster, name, resources_for(crd))
        else:
            self.catalog.remove_crd(cluster, name)
        if self.controllers:
            self.enqueue((cluster, name))

    def _requeue_group(self, cluster: str, group: str, gone: str) -> None:
        """A CRD that lost a name conflict may be accepted once the other one is gone."""
        if self.controllers:
            for other in self.requested.get(cluster, {}).get(group, {}):
                if other != gone:
                    self.enqueue((cluster, other))

    def enqueue(self, key: tuple[str, str]) -> None:
        if self.controller is not None:
            self.controller.enqueue(key)

    async def _reconcile(self, key: tuple[str, str]) -> Result | None:
        """Not finished (objects of a deleted CRD still going): look again soon; errors back off."""
        return None if await self.reconcile(*key) else Result(requeue_after=RETRY_SECONDS)

    async def reconcile(self, cluster: str, name: str) -> bool:
        key = object_key(CRD.prefix, cluster, "", name)
        try:
            current = await self.storage.get(key)
        except KeyNotFound:
            return True
        if current.obj["metadata"].get("deletionTimestamp"):
            return await self._cleanup(cluster, current)
        wanted = self._status(cluster, current.obj)
        if wanted == current.obj.get("status"):
            return True

        async def write(latest: Stored) -> Obj | None:
            status = self._status(cluster, latest.obj)
            if status == latest.obj.get("status"):
                return None
            return {**latest.obj, "status": status}

        await self.storage.guaranteed_update(key, write)
        return True

    def _status(self, cluster: str, crd: Obj) -> Obj:
        """acceptedNames, conditions and storedVersions as kube's CRD controllers set them."""
        status = copy.deepcopy(crd.get("status") or {})
        names = crd["spec"]["names"]
        conflict = self._conflict(cluster, crd)
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        if conflict:
            reason, message = conflict
            _set(conditions, "NamesAccepted", "False", reason, message)
            if "Established" not in conditions:
                _set(conditions, "Established", "False", "NotAccepted", "not all names are accepted")
        else:
            status["acceptedNames"] = {k: v for k, v in names.items()}
            status["acceptedNames"].setdefault("listKind", f"{names['kind']}List")
            status["acceptedNames"].setdefault("singular", names["kind"].lower())
            _set(conditions, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
            _set(conditions, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
        status["conditions"] = list(conditions.values())
        stored = list(status.get("storedVersions") or [])
        if storage_version(crd) not in stored:
            stored.append(storage_version(crd))
        status["storedVersions"] = stored
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        return status

    def _conflict(self, cluster: str, crd: Obj) -> tuple[str, str] | None:
        """A name another CRD of the same group already holds, reported as kube's naming controller does:
        each kind of name is checked in turn and the last conflict found names the reason."""
        name = crd["metadata"]["name"]
        names = crd["spec"]["names"]
        taken_resources: set[str] = set()
        taken_kinds: set[str] = set()
        for other, theirs in self.requested.get(cluster, {}).get(crd["spec"]["group"], {}).items():
            if other == name or (other > name and not self._accepted_elsewhere(cluster, other)):
                continue
            taken_resources |= {theirs.get("plural"), theirs.get("singular"), *(theirs.get("shortNames") or [])}
            taken_kinds |= {theirs.get("kind"), theirs.get("listKind") or f"{theirs.get('kind')}List"}
        checks = [("PluralConflict", [names.get("plural")], taken_resources),
                  ("SingularConflict", [names.get("singular")], taken_resources),
                  ("ShortNamesConflict", names.get("shortNames") or [], taken_resources),
                  ("KindConflict", [names.get("kind")], taken_kinds),
                  ("ListKindConflict", [names.get("listKind") or f"{names.get('kind')}List"], taken_kinds)]
        found = None
        for reason, requested, taken in checks:
            for value in requested:
                if value and value in taken:
                    found = reason, f'"{value}" is already in use'
        return found

    def _accepted_elsewhere(self, cluster: str, crd_name: str) -> bool:
        return self.catalog.has_crd(cluster, crd_name)

    async def _cleanup(self, cluster: str, current: Stored) -> bool:
        """Delete every object of a deleted CRD, then remove its finalizer."""
        crd = current.obj
        served = resources_for(_with_names(crd)) if crd["spec"].get("versions") else []
        remaining = 0
        for res in served[:1]:
            await self.registry.delete_collection(res, cluster, "")
            remaining += await self.storage.count(scope_prefix(res.prefix, cluster, None))
        if remaining:
            return False

        async def drop(latest: Stored) -> Obj | None:
            finalizers = latest.obj["metadata"].get("finalizers") or []
            if CLEANUP_FINALIZER not in finalizers:
                return None
            updated = copy.deepcopy(latest.obj)
            updated["metadata"]["finalizers"] = [f for f in finalizers if f != CLEANUP_FINALIZER]
            return updated

        key = object_key(CRD.prefix, cluster, "", crd["metadata"]["name"])
        try:
            latest = await self.storage.guaranteed_update(key, drop)
            if not latest.obj["metadata"].get("finalizers"):
                await self.storage.delete(key, latest.mod_revision)
        except KeyNotFound:
            pass
        return True


def _with_names(crd: Obj) -> Obj:
    """A CRD whose accepted names are its requested ones (to address its objects during cleanup)."""
    if (crd.get("status") or {}).get("acceptedNames", {}).get("plural"):
        return crd
    return {**crd, "status": {**(crd.get("status") or {}), "acceptedNames": crd["spec"]["names"]}}


def _set(conditions: dict[str, Obj], type_: str, status: str, reason: str, message: str) -> None:
    existing = conditions.get(type_)
    if existing and existing.get("status") == status and existing.get("reason") == reason:
        return
    conditions[type_] = {"type": type_, "status": status, "lastTransitionTime": now_rfc3339(),
                         "reason": reason, "message": message}
