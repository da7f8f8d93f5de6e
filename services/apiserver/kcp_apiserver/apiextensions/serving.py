"""CRDs per logical cluster: what each logical cluster serves, and the CRDs' own status.

Every serving process follows all CRDs through the watch cache and keeps the
catalog current. One process (the one that runs controllers) also decides
names (NamesAccepted), marks CRDs Established and, when a CRD is deleted,
deletes its objects before letting the CRD go.

The follower is shared by every logical cluster, so one CRD it cannot serve
(bad data written by an older version, or around the API) must cost that CRD
only: it is logged, left out of the catalog and marked Established=False with
the reason, and every other CRD goes on being served.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.fields import get, get_str
from kcp_apiserver.apiextensions.resources import CLEANUP_FINALIZER, is_established, storage_version
from kcp_apiserver.apiextensions.servable import Unservable, servable_resources, unservable
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.informers import Informers, add_observer
from kcp_apiserver.registry.ownership import record_system_update
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry, now_rfc3339
from kcp_apiserver.storage.etcd import KeyNotFound, Storage, Stored
from kcp_apiserver.storage.keys import object_key, scope_prefix
from kcpcommon.controller import Controller, Result
from kcpcommon.frozen import thaw
from kcpcommon.keys import ObjectKey, cluster_of
from kcpcommon.sharedcache import HandlerRegistration
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("crds")
RETRY_SECONDS = 1.0
NAME_FIELDS = ("plural", "singular", "kind", "listKind")


def _identity(crd: Obj) -> tuple[str, str] | None:
    """(logical cluster, name) of a stored CRD; None when even that is missing."""
    meta = crd.get("metadata")
    name = get(meta, "name")
    if not isinstance(name, str) or not name:
        return None
    return cluster_of(crd) or "", name


def _names(crd: Obj) -> dict[str, Any]:
    return (crd.get("status") or {}).get("acceptedNames") or {}


class CRDServing:
    """Follows CRDs into the catalog; with `controllers`, also maintains their status and cleanup."""

    def __init__(self, storage: Storage, informers: Informers, catalog: Catalog, registry: Registry, *,
                 metrics: CollectorRegistry | None = None) -> None:
        self.storage = storage
        self.informers = informers
        self.catalog = catalog
        self.registry = registry
        self.metrics = metrics
        # per cluster and group: CRD name -> the names it asks for (for conflict checks; small on purpose)
        self.requested: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self.unservable: dict[tuple[str, str], Unservable] = {}  # (cluster, CRD name) -> why it is not served
        self.controller: Controller[ObjectKey] | None = None  # while this replica leads
        self._handler: HandlerRegistration | None = None
        self._controller_task: asyncio.Task[None] | None = None

    @property
    def controllers(self) -> bool:
        return self.controller is not None

    async def start(self, *, controllers: bool = False) -> None:
        """Follow CRDs into the catalog (a handler on their informer); returns once every stored CRD is in."""
        crds = await self.informers.get(CRD)
        self._handler = add_observer(crds, self._observe, name="crds")
        await self._handler.wait_for_sync()
        if controllers:
            await self.start_controllers()

    async def start_controllers(self) -> None:
        """Names, status and cleanup of every CRD, from now on (the replica that leads calls this)."""
        self.controller = Controller("crd", self._reconcile, registry=self.metrics, component="kcp_apiserver")
        self._controller_task = spawn(self.controller.start(), name="crds:reconcile")
        for cluster, groups in self.requested.items():
            for names in groups.values():
                for name in names:
                    self.controller.enqueue(ObjectKey(cluster, "", name))
        for cluster, name in self.unservable:
            self.controller.enqueue(ObjectKey(cluster, "", name))

    async def stop_controllers(self) -> None:
        if self._controller_task is not None:
            await cancel_and_wait(self._controller_task)
        self.controller, self._controller_task = None, None

    async def stop(self) -> None:
        await self.stop_controllers()
        if self._handler is not None:
            self._handler.remove()

    def _observe(self, crd: Obj, deleted: bool) -> None:
        """One CRD's state into the catalog; whatever goes wrong stays with that CRD."""
        key = _identity(crd)  # from the informer's object, which knows where it is stored
        if key is None:
            log.warning("skipping a stored CRD without a name")
            return
        crd = thaw(crd)  # the catalog keeps parts of a CRD, and may adjust them
        try:
            self._follow(key, crd, deleted)
        except Exception:
            log.exception("following a CRD failed; not serving it", cluster=key[0], name=key[1])
            self.catalog.remove_crd(*key)

    def _follow(self, key: tuple[str, str], crd: Obj, deleted: bool) -> None:
        cluster, name = key
        group = get_str(get(crd, "spec"), "group")
        by_group = self.requested.get(cluster, {}).get(group, {})
        if deleted:
            self.unservable.pop(key, None)
            by_group.pop(name, None)
            self.catalog.remove_crd(cluster, name)
            self._requeue_group(cluster, group, name)
            return
        try:
            resources = servable_resources(crd, self.catalog.builtins)
        except Unservable as problem:
            by_group.pop(name, None)
            self.catalog.remove_crd(cluster, name)
            previous = self.unservable.get(key)
            self.unservable[key] = problem
            if previous is None or previous.message != problem.message:
                log.warning("not serving a CRD", cluster=cluster, name=name, reason=problem.reason,
                            message=problem.message)
            self.enqueue(key)
            return
        self.unservable.pop(key, None)
        self.requested.setdefault(cluster, {}).setdefault(group, {})[name] = dict(crd["spec"]["names"])
        if is_established(crd) and not crd["metadata"].get("deletionTimestamp"):
            self.catalog.set_crd(cluster, name, resources)
        else:
            self.catalog.remove_crd(cluster, name)
        self.enqueue(key)

    def _requeue_group(self, cluster: str, group: str, gone: str) -> None:
        """A CRD that lost a name conflict may be accepted once the other one is gone."""
        if self.controllers:
            for other in self.requested.get(cluster, {}).get(group, {}):
                if other != gone:
                    self.enqueue((cluster, other))

    def enqueue(self, key: tuple[str, str]) -> None:
        if self.controller is not None:
            self.controller.enqueue(ObjectKey(key[0], "", key[1]))

    async def _reconcile(self, key: ObjectKey) -> Result | None:
        """Not finished (objects of a deleted CRD still going): look again soon; errors back off."""
        return None if await self.reconcile(key.cluster, key.name) else Result(requeue_after=RETRY_SECONDS)

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
            return record_system_update(latest.obj, {**latest.obj, "status": status}, now_rfc3339(),
                                        schema=CRD.type_schema, subresource="status", has_status=True)

        await self.storage.guaranteed_update(key, write)
        return True

    def _status(self, cluster: str, crd: Obj) -> Obj:
        """acceptedNames, conditions and storedVersions as kube's CRD controllers set them; a CRD that
        cannot be served only gets Established=False with the reason."""
        stored = crd.get("status")
        status: Obj = copy.deepcopy(stored) if isinstance(stored, dict) else {}
        listed = status.get("conditions")
        conditions = {c["type"]: c for c in (listed if isinstance(listed, list) else [])
                      if isinstance(c, dict) and isinstance(c.get("type"), str)}
        problem = unservable(crd, self.catalog.builtins)
        if problem is not None:
            _set(conditions, "Established", "False", problem.reason, problem.message)
            status["conditions"] = list(conditions.values())
            return status
        names = crd["spec"]["names"]
        conflict = self._conflict(cluster, crd)
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
            taken_resources |= {str(theirs.get("plural")), str(theirs.get("singular")),
                                *(theirs.get("shortNames") or [])}
            taken_kinds |= {str(theirs.get("kind")), theirs.get("listKind") or f"{theirs.get('kind')}List"}
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
        """Delete every object of a deleted CRD, then remove its finalizer.

        A CRD that cannot be served has no objects of its own to delete: its keys, if it names any,
        may be another type's.
        """
        crd = current.obj
        try:
            served = servable_resources(_with_names(crd), self.catalog.builtins)
        except Unservable as problem:
            log.info("deleting a CRD that was not served; its objects are not touched", cluster=cluster,
                     name=crd["metadata"]["name"], reason=problem.reason)
            served = []
        remaining = 0
        for res in served[:1]:
            async for _ in self.registry.delete_pages(res, cluster, ""):
                pass  # page by page, nothing kept, as the namespace finalizer does
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
    status = crd.get("status")
    if get(get(status, "acceptedNames"), "plural"):
        return crd
    return {**crd, "status": {**(status if isinstance(status, dict) else {}),
                              "acceptedNames": get(get(crd, "spec"), "names")}}


def _set(conditions: dict[str, Obj], type_: str, status: str, reason: str, message: str) -> None:
    """kube's SetCRDCondition: the transition time moves only when the status does."""
    existing = conditions.get(type_)
    if existing and existing.get("status") == status:
        if (existing.get("reason"), existing.get("message")) != (reason, message):
            conditions[type_] = {**existing, "reason": reason, "message": message}
        return
    conditions[type_] = {"type": type_, "status": status, "lastTransitionTime": now_rfc3339(),
                         "reason": reason, "message": message}
