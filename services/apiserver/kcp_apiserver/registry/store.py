"""The generic registry: kube's REST semantics for every resource, over storage.

Nothing here is specific to one type; types differ only in their `Resource`
descriptor. Errors leave as `APIError` (a kube Status).
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.deleteoptions import Propagation
from kcp_apiserver.apimachinery.jsonvalues import exceeds_depth, json_copy
from kcp_apiserver.apimachinery.request import RequestContext, system_context
from kcp_apiserver.apimachinery.validation import drop_malformed_meta, generate_name, validate_object_meta
from kcp_apiserver.apimachinery.validation import invalid as invalid_value
from kcp_apiserver.registry import fieldpath as fp
from kcp_apiserver.registry.admission import CREATE, DELETE, UPDATE, Attributes
from kcp_apiserver.registry.catalog import WatchCaches
from kcp_apiserver.registry.continuetoken import decode_continue, encode_continue
from kcp_apiserver.registry.conversion import stored_view, to_storage
from kcp_apiserver.registry.deletion import deletion_finalizers
from kcp_apiserver.registry.fieldsets import DuplicateItem
from kcp_apiserver.registry.listing import Entry, decoded
from kcp_apiserver.registry.managedfields import manager_name
from kcp_apiserver.registry.ownership import SYSTEM_MANAGER, ApplyOwnership, Ownership, UpdateOwnership
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.shared import REVISION as SHARED_REVISION
from kcp_apiserver.registry.shared import SharedObjects
from kcp_apiserver.registry.strategy import DEFAULT as DEFAULT_STRATEGY
from kcp_apiserver.registry.strategy import Strategy
from kcp_apiserver.registry.timestamps import normalize_timestamps
from kcp_apiserver.storage.cachestate import Cached
from kcp_apiserver.storage.etcd import (
    Compacted,
    Delete,
    KeyExists,
    KeyNotFound,
    PreconditionFailed,
    Preconditions,
    RequestTooLarge,
    RevisionConflict,
    Storage,
    StorageError,
    Stored,
    TryUpdate,
    Unavailable,
    decode,
)
from kcp_apiserver.storage.keys import object_key, parse_key, scope_prefix
from kcp_apiserver.storage.watchcache import WatchCache
from kcpcommon.keys import CLUSTER_ANNOTATION

CONSISTENT_FROM_CACHE_MIN = 500  # objects in scope from which a consistent read first asks if the cache is fresh
DELETE_PAGE = 500  # objects a collection delete reads, decodes and deletes before reading more
TOO_LARGE_RV_WAIT = 3.0  # seconds a read waits for a resourceVersion the server has not reached (kube's 3 s)
Objs = list[Obj]  # a name for the annotation: inside Registry, `list` is the method
SERVER_SET_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")

Admission = Callable[[Attributes], Awaitable[None]]


def new_uid() -> str:
    """A random (version 4, RFC 4122 variant) UUID; uids need uniqueness, not cryptographic strength.

    Formatted by hand: uuid.UUID costs several times more, on every create."""
    n = random.getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48) | (0x4000 << 64) | (0x8000 << 48)
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_second: list[Any] = [-1, ""]


def now_rfc3339() -> str:
    """The current second as kube writes timestamps; formatted once per second, not per call."""
    now = int(time.time())
    if now != _second[0]:
        _second[:] = [now, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))]
    return str(_second[1])


def storage_errors(res: Resource, name: str, exc: StorageError) -> st.APIError:
    """Map a storage failure to the Status kube would answer with."""
    if isinstance(exc, KeyNotFound):
        return st.not_found(res.plural, name, res.group)
    if isinstance(exc, KeyExists):
        return st.already_exists(res.plural, name, res.group)
    if isinstance(exc, RevisionConflict):
        return st.conflict(res.plural, name, res.group)
    if isinstance(exc, PreconditionFailed):
        return st.conflict(res.plural, name, res.group, str(exc))
    if isinstance(exc, Compacted):
        return st.gone("The resourceVersion for the provided list is too old.")
    if isinstance(exc, Unavailable):
        return st.unavailable()
    if isinstance(exc, RequestTooLarge):
        # kube passes etcd's error through as a bare 500; a client's too-large object is no server fault,
        # so it is 413 (no client retries it), with etcd's words
        return st.too_large(f"Request entity too large: {exc}")
    return st.internal(str(exc))


@dataclass
class ListResult:
    """A list's items (objects, or etcd's bytes where nothing needed decoding: see listing) and metadata."""

    entries: list[Entry]
    revision: int
    continue_token: str = ""
    remaining: int | None = None  # kube's remainingItemCount: set only when exact (an unfiltered page)

    @property
    def items(self) -> list[Obj]:
        return [decoded(entry) for entry in self.entries]

    @items.setter
    def items(self, objs: list[Obj]) -> None:
        self.entries = list(objs)


def _spec_view(obj: Obj) -> Obj:
    """What counts as 'spec' for generation: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _without_rv(obj: Obj) -> bytes:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return orjson.dumps({**obj, "metadata": meta}, option=orjson.OPT_SORT_KEYS)


class Registry:
    """create/get/list/update/patch/delete for any Resource in any logical cluster."""

    def __init__(self, storage: Storage, *, admit: Admission, ensure_cluster: Callable[[str], Awaitable[None]],
                 track_managed_fields: bool = True, caches: WatchCaches | None = None,
                 stamp_cluster: bool = True) -> None:
        self.storage = storage
        # `kcp.io/cluster` on every stored object, as kcp shows it; a simulated physical cluster shows none
        # (in-process readers take the cluster from the key either way: `kcpcommon.keys.cluster_of`)
        self.stamp_cluster = stamp_cluster
        self.caches = caches  # writes start from the watch cache's state where it has the object
        self.admit = admit
        self.ensure_cluster = ensure_cluster
        self.track_managed_fields = track_managed_fields  # off only to measure what tracking costs (bench)
        self.shared: dict[str, SharedObjects] = {}  # by resource prefix: objects every cluster sees (shared.py)

    # -- reads -------------------------------------------------------------------------------

    def key(self, res: Resource, cluster: str, namespace: str, name: str) -> str:
        return object_key(res.prefix, cluster, namespace if res.namespaced else "", name)

    async def get(self, res: Resource, cluster: str, namespace: str, name: str) -> Obj:
        return (await self._read(res, self.key(res, cluster, namespace, name), name)).obj

    async def list(
        self, res: Resource, cluster: str | None, namespace: str, *,
        matches: Callable[[Obj], bool] | None = None, limit: int = 0, continue_token: str = "",
        resource_version: str = "", exact: bool = False, cache: WatchCache | None = None,
    ) -> ListResult:
        """kube's list semantics; with the resource's watch cache, served from it where kube's is.

        Like kube's cacher, the cache serves every list but a continuation, an Exact resourceVersion
        and a limited list at a resourceVersion other than "0" (those page through etcd). With "0"
        (any state) a limit is ignored, as kube does when its cache serves it.
        """
        prefix = scope_prefix(res.prefix, cluster, namespace if res.namespaced else None)
        if (cache is not None and not continue_token and not exact and (not limit or resource_version == "0")
                and await self.cache_can_serve(res, cache, cluster, namespace, resource_version)):
            return self.list_cached(res, cache, cluster, namespace, matches=matches)
        revision, start, wanted = 0, prefix, 0
        if continue_token:
            revision, start = decode_continue(continue_token)
            if not start.startswith(prefix):
                raise st.bad_request("continue key is not valid: it belongs to another list")
        elif resource_version not in ("", "0"):
            wanted = parse_resource_version(resource_version)
            if exact:  # etcd refuses to read at a revision it has not reached
                await self.wait_for_revision(res, wanted)
                revision = wanted
        entries: list[Entry] = []
        # etcd read in pages (bounded in keys and bytes) at one pinned revision: consistent, and each answer
        # under gRPC's message size limit
        page = min(max(limit + 1, 100), 1000) if limit else 1000
        total: int | None = None  # keys from the first page's start to the end of the range
        try:
            while True:
                entries.clear()
                async for chunk, read_at, count, _ in self.storage.scan_raw(prefix, revision=revision,
                                                                            start_key=start, page=page):
                    revision = read_at
                    if revision < wanted:  # NotOlderThan a revision etcd has not reached (first read only)
                        break
                    total = count if total is None else total
                    for key, raw, mod in chunk:
                        entry: Entry = Cached(raw, mod)
                        if matches is not None:
                            entry = decode(raw, mod)
                            if not matches(entry):
                                continue
                        if limit and len(entries) == limit:
                            remaining = total - limit if matches is None else None
                            return ListResult(entries, revision, encode_continue(revision, key), remaining)
                        entries.append(entry)
                else:
                    return ListResult(entries, revision)
                await self.wait_for_revision(res, wanted)
                revision, total = 0, None
        except Compacted as exc:
            if continue_token:
                raise st.gone("The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter.") from exc
            raise st.gone(f"too old resource version: {revision}") from exc
        except StorageError as exc:
            raise storage_errors(res, "", exc) from exc

    async def cache_can_serve(self, res: Resource, cache: WatchCache, cluster: str | None, namespace: str,
                              resource_version: str) -> bool:
        """Whether the cache's state may answer a read of a scope at resource_version.

        "0" accepts any state. "N" needs the cache at N or later. "" is a consistent read: the cache
        must have reached etcd's current revision, read now. kube (1.31+) makes a lagging cache catch
        up by requesting an etcd progress notification; etcd before 3.5.13 (the embedded one is
        3.5.1) may answer that request ahead of events still in flight (etcd#15220), and kube then
        reads from etcd instead. So do we: a cache that is behind is not waited for. Asking etcd for
        its revision costs a round trip, wasted when the cache is behind: small scopes skip the
        question and read etcd at once.
        """
        if resource_version == "0":
            return True
        if resource_version:
            return cache.revision >= parse_resource_version(resource_version)
        scope = scope_prefix(res.prefix, cluster, namespace if res.namespaced else None)
        if cache.state.count_hint(scope) < CONSISTENT_FROM_CACHE_MIN:
            return False
        return cache.revision >= await self.current_revision(res)

    def list_cached(self, res: Resource, cache: WatchCache, cluster: str | None, namespace: str, *,
                    matches: Callable[[Obj], bool] | None = None, name: str = "") -> ListResult:
        """The cache's current state of a scope, at the cache's revision.

        Synchronous: a `cache.subscribe(after_revision=<its revision>)` right after it, with no await
        in between, continues exactly where it ends.
        """
        if name and cluster is not None and (namespace or not res.namespaced):
            key = self.key(res, cluster, namespace, name)
            found = cache.state.get(key)
            entries = [(key, found)] if found is not None else []
            revision = cache.revision
        else:
            entries, revision = cache.snapshot(scope_prefix(res.prefix, cluster,
                                                            namespace if res.namespaced else None))
            if name:
                entries = [(key, c) for key, c in entries if key.endswith("/" + name)]
        if matches is None:
            return ListResult([cached for _, cached in entries], revision)
        items: list[Entry] = []
        for _, cached in entries:
            obj = cached.decode()
            if matches(obj):
                items.append(obj)
        return ListResult(items, revision)

    async def current_revision(self, res: Resource) -> int:
        """etcd's revision now (a quorum read): what a consistent read must reach."""
        try:
            return await self.storage.current_revision()
        except StorageError as exc:
            raise storage_errors(res, "", exc) from exc

    async def wait_for_revision(self, res: Resource, wanted: int, patience: float = TOO_LARGE_RV_WAIT) -> None:
        """A read at a resourceVersion newer than etcd's waits briefly for it, then is refused, as kube does.

        As kube's cacher waits until it is fresh: the resource's watch cache wakes the wait when it
        reaches the revision (no polling). The cache sees other resources' writes only through etcd's
        progress notifications, so etcd is asked once before waiting and once when patience runs out."""
        cache = self.caches.caches.get(res.prefix) if self.caches is not None else None
        if cache is not None and cache.revision >= wanted:
            return  # the cache never runs ahead of etcd
        current = await self.current_revision(res)
        if current >= wanted:
            return
        if self.caches is None:
            await asyncio.sleep(patience)  # no cache to wake it (unit tests' registries)
        elif await (cache or await self.caches.get(res)).reached(wanted, patience):
            return
        current = await self.current_revision(res)
        if current < wanted:
            raise st.resource_version_too_large(wanted, current)

    # -- create ------------------------------------------------------------------------------

    async def create(self, res: Resource, cluster: str, namespace: str, obj: Obj, *, dry_run: bool = False,
                     ctx: RequestContext | None = None, ownership: Ownership | None = None) -> Obj:
        obj = self._check_kind(res, obj)
        normalize_timestamps(res, obj)
        meta = _metadata(res, obj)
        self._check_namespace(res, namespace, meta)
        for field_name in (*SERVER_SET_META, "resourceVersion"):
            meta.pop(field_name, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if res.tracks_generation:
            meta["generation"] = 1
        if self.stamp_cluster:
            meta.setdefault("annotations", {})[CLUSTER_ANNOTATION] = cluster
        if res.has_status and not res.status_on_create:
            obj.pop("status", None)
        generate = not meta.get("name") and meta.get("generateName")
        shared = self.shared.get(res.prefix)
        if shared is not None and not generate and shared.get(cluster, meta.get("name", "")) is not None:
            raise st.already_exists(res.plural, meta["name"], res.group)
        if generate:
            meta["name"] = generate_name(meta["generateName"])
        strategy_of(res).prepare_for_create(obj)
        ownership = ownership or self._ownership(res, ctx, "")
        if ownership is not None:
            ownership.record(None, obj, now_rfc3339())
        self._validate(res, obj, None)
        if not dry_run:
            await self.ensure_cluster(cluster)
        await self.admit(self._attributes(ctx, res, CREATE, cluster, namespace, meta.get("name", ""), obj, None))
        if dry_run:
            return obj
        for attempt in range(8):
            key = self.key(res, cluster, namespace, meta["name"])
            try:
                return (await self.storage.create(key, obj)).obj
            except KeyExists as exc:
                if not generate or attempt == 7:
                    raise st.already_exists(res.plural, meta["name"], res.group) from exc
                meta["name"] = generate_name(meta["generateName"])
            except StorageError as exc:
                raise storage_errors(res, meta.get("name", ""), exc) from exc
        raise st.internal("unreachable")

    # -- update and patch --------------------------------------------------------------------

    async def update(self, res: Resource, cluster: str, namespace: str, name: str, obj: Obj, *,
                     subresource: str = "", dry_run: bool = False, ctx: RequestContext | None = None,
                     manager_subresource: str | None = None) -> Obj:
        obj = self._check_kind(res, obj)
        normalize_timestamps(res, obj)
        meta = _metadata(res, obj)
        if meta.get("name") and meta["name"] != name:
            raise st.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        meta["name"] = name
        self._check_namespace(res, namespace, meta)
        wanted_rv = _precondition(meta.get("resourceVersion"))

        async def mutate(current: Stored) -> Obj:
            if wanted_rv and wanted_rv != str(current.mod_revision):
                raise st.conflict(res.plural, name, res.group)
            return copy.deepcopy(obj)

        ownership = self._ownership(res, ctx, subresource if manager_subresource is None else manager_subresource)
        return await self._update_with(res, cluster, namespace, name, mutate, subresource, dry_run, ctx, ownership,
                                       Preconditions(uid=meta.get("uid") or ""))  # as kube's UpdatedObjectInfo

    async def patch(self, res: Resource, cluster: str, namespace: str, name: str,
                    apply_patch: Callable[[Obj], Obj], *, subresource: str = "", dry_run: bool = False,
                    ctx: RequestContext | None = None, manager_subresource: str | None = None,
                    ownership: Ownership | None = None) -> Obj:
        async def mutate(current: Stored) -> Obj:
            base = json_copy(current.obj)
            view = stored_view(res)
            patched = apply_patch(view(base) if view is not None else base)
            if not isinstance(patched, dict):
                raise st.bad_request("the patch did not produce an object")
            if exceeds_depth(patched):
                raise _undecodable_patch(patched)
            meta = _metadata(res, patched)
            rv = _precondition(meta.get("resourceVersion"))
            if rv and rv != str(current.mod_revision):
                raise st.conflict(res.plural, name, res.group)
            if meta.get("name") != name:
                raise st.bad_request("metadata.name: the name of the object does not match the name on the URL")
            patched["kind"] = res.kind
            normalize_timestamps(res, patched, patch=True)
            return to_storage(res, patched)

        if ownership is None:
            ownership = self._ownership(res, ctx, subresource if manager_subresource is None else manager_subresource)
        return await self._update_with(res, cluster, namespace, name, mutate, subresource, dry_run, ctx, ownership)

    async def apply(self, res: Resource, cluster: str, namespace: str, name: str, config: Obj, *,
                    prepare: Callable[[Obj], Obj], force: bool = False, subresource: str = "",
                    dry_run: bool = False, ctx: RequestContext | None = None) -> tuple[Obj, bool]:
        """Server-side apply: config merged over the object (created if missing); returns (object, created).

        `prepare` finishes a merged object as the endpoint's other writes are (unknown fields pruned,
        defaults set)."""
        manager = ctx.field_manager if ctx is not None else ""
        try:
            ownership = ApplyOwnership(manager, res.api_version, res.type_schema, config, force=force,
                                       subresource=subresource, has_status=res.has_status)
        except DuplicateItem as exc:
            cause = st.Cause("FieldValueDuplicate", f"duplicate entries for key {fp.render((exc.element,))}",
                             fp.render(exc.path).lstrip("."))
            raise st.invalid(res.kind, name, [cause], res.group) from None
        for _ in range(4):
            try:
                obj = await self.patch(res, cluster, namespace, name, lambda doc: prepare(ownership.merged(doc)),
                                       subresource=subresource, dry_run=dry_run, ctx=ctx, ownership=ownership)
                return obj, False
            except st.APIError as exc:
                if exc.code != 404 or exc.reason != "NotFound" or subresource:
                    raise
            try:
                created = prepare(ownership.merged({}))
                return await self.create(res, cluster, namespace, created, dry_run=dry_run, ctx=ctx,
                                         ownership=ownership), True
            except st.APIError as exc:
                if exc.code != 409 or exc.reason != "AlreadyExists":
                    raise
        raise st.conflict(res.plural, name, res.group)

    def _ownership(self, res: Resource, ctx: RequestContext | None, subresource: str) -> Ownership | None:
        """An Update's ownership step for this request (None when tracking is switched off)."""
        if not self.track_managed_fields:
            return None
        manager = SYSTEM_MANAGER if ctx is None else manager_name(ctx.field_manager, ctx.user_agent)
        return UpdateOwnership(manager, res.api_version, res.type_schema, subresource=subresource,
                               has_status=res.has_status)

    async def _update_with(self, res: Resource, cluster: str, namespace: str, name: str,
                           mutate: Callable[[Stored], Awaitable[Obj]], subresource: str, dry_run: bool,
                           ctx: RequestContext | None, ownership: Ownership | None = None,
                           preconditions: Preconditions | None = None) -> Obj:
        """kube's Update over storage's GuaranteedUpdate: `mutate` gives the object wanted from the current
        state; the strategy, ownership, validation and admission finish it, attempt after attempt."""
        key = self.key(res, cluster, namespace, name)

        async def try_update(current: Stored) -> Obj | Delete | None:
            new = self._merge_update(res, cluster, await mutate(current), current.obj, subresource)
            if ownership is not None and (self.track_managed_fields or isinstance(ownership, ApplyOwnership)):
                ownership.record(current.obj, new, now_rfc3339())
            if _without_rv(new) == _without_rv(current.obj):
                return None  # a no-op write keeps its resourceVersion, as kube does
            if subresource != "status" or res.is_custom:
                self._validate(res, new, current.obj, subresource)
            await self.admit(self._attributes(ctx, res, UPDATE, cluster, namespace, name, new, current.obj,
                                              subresource))
            return Delete(new) if _finalized(res, new) else new

        return (await self._guaranteed_update(res, key, name, try_update, ctx=ctx, dry_run=dry_run,
                                              preconditions=preconditions)).obj

    async def _guaranteed_update(self, res: Resource, key: str, name: str, try_update: TryUpdate, *,
                                 ctx: RequestContext | None, dry_run: bool,
                                 preconditions: Preconditions | None = None) -> Stored:
        """storage's GuaranteedUpdate for a request: from the watch cache's copy (a dry run reads etcd), until
        the request's deadline, a missing key read as the shared object of that name; errors as Status."""
        cache = self.caches.caches.get(res.prefix) if self.caches is not None and not dry_run else None
        shared = self.shared.get(res.prefix)
        cluster = parse_key(res.prefix, key, res.namespaced).cluster if shared is not None else ""
        try:
            return await self.storage.guaranteed_update(
                key, try_update, preconditions=preconditions, dry_run=dry_run,
                deadline=ctx.deadline if ctx is not None else None,
                suggestion=cache.state.get(key) if cache is not None else None,
                if_absent=(lambda: shared.get(cluster, name)) if shared is not None else None)
        except StorageError as exc:
            raise storage_errors(res, name, exc) from exc

    def _merge_update(self, res: Resource, cluster: str, new: Obj, old: Obj, subresource: str) -> Obj:
        """Apply kube's update strategy: server-set metadata and status survive main writes."""
        if subresource == "status":
            merged = json_copy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            return merged
        meta = new.setdefault("metadata", {})
        old_meta = old.get("metadata", {})
        for field_name in SERVER_SET_META:
            if field_name in old_meta:
                meta[field_name] = old_meta[field_name]
            else:
                meta.pop(field_name, None)
        meta["namespace"] = old_meta.get("namespace", "") if res.namespaced else None
        if meta["namespace"] is None:
            del meta["namespace"]
        if self.stamp_cluster:
            if meta.get("annotations") is None:
                meta["annotations"] = {}
            meta["annotations"][CLUSTER_ANNOTATION] = cluster
        if res.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        strategy_of(res).prepare_for_update(new, old)  # defaults first: an omitted default is no change
        if res.tracks_generation and _spec_view(new) != _spec_view(old):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        return new

    # -- delete ------------------------------------------------------------------------------

    async def delete(self, res: Resource, cluster: str, namespace: str, name: str, *,
                     preconditions: dict[str, str] | None = None, dry_run: bool = False,
                     ctx: RequestContext | None = None, propagation: Propagation | None = None,
                     grace_period: int | None = None) -> tuple[Obj, bool]:
        """Delete or start deleting; returns (object, deleted_now).

        `propagation` becomes the garbage collector's finalizer (`orphan`, `foregroundDeletion`) as kube
        records it; an object left with any finalizer is only marked deleting. A type with graceful deletion (a
        running pod: its strategy's `grace_period`) is marked deleting with that grace, its deadline in its
        deletionTimestamp, and left for its kubelet to end; a second DELETE may shorten the grace, never lengthen
        it, and one with grace 0 removes it at once (kube's BeforeDelete)."""
        key = self.key(res, cluster, namespace, name)
        propagation = propagation or Propagation()

        async def try_delete(current: Stored) -> Obj | Delete | None:
            if current.mod_revision == SHARED_REVISION:
                raise st.APIError(405, "MethodNotAllowed", f'{res.group_resource} "{name}" is shared by every '
                                  "logical cluster and cannot be deleted", {"name": name, "kind": res.plural,
                                                                            "group": res.group})
            await self.admit(self._attributes(ctx, res, DELETE, cluster, namespace, name, None, current.obj))
            meta = current.obj["metadata"]
            existing = list(meta.get("finalizers") or [])
            finalizers = deletion_finalizers(res, existing, propagation)
            pending = json_copy(current.obj)
            if finalizers:
                pending["metadata"]["finalizers"] = finalizers
            else:
                pending["metadata"].pop("finalizers", None)
            grace = strategy_of(res).grace_period(current.obj, grace_period)
            if grace > 0:
                return _graceful(pending, grace, changed=finalizers != existing)
            if not _has_finalizers(res, pending):
                return Delete(current.obj)
            if meta.get("deletionTimestamp") and finalizers == existing:
                return None  # already deleting, nothing to add: finalizers hold it
            _mark_deleting(res, pending)
            return pending

        pre = preconditions or {}
        stored = await self._guaranteed_update(res, key, name, try_delete, ctx=ctx, dry_run=dry_run,
                                               preconditions=Preconditions(pre.get("uid") or "",
                                                                           pre.get("resourceVersion") or ""))
        return stored.obj, stored.deleted

    async def delete_collection(self, res: Resource, cluster: str, namespace: str, *,
                                matches: Callable[[Obj], bool] | None = None, dry_run: bool = False,
                                ctx: RequestContext | None = None,
                                propagation: Propagation | None = None) -> Objs:
        """kube's DeleteCollection: every object of the scope that matches, deleted; answers what was deleted."""
        deleted: Objs = []
        async for page in self.delete_pages(res, cluster, namespace, matches=matches, dry_run=dry_run, ctx=ctx,
                                            propagation=propagation):
            deleted.extend(page)
        return deleted

    async def delete_pages(self, res: Resource, cluster: str, namespace: str, *,
                           matches: Callable[[Obj], bool] | None = None, dry_run: bool = False,
                           ctx: RequestContext | None = None,
                           propagation: Propagation | None = None) -> AsyncIterator[Objs]:
        """A collection delete a page at a time: what each page deleted (or marked deleting).

        Each page is read from etcd, decoded and deleted before the next is read, so a namespace of
        50,000 objects never has more than a page of them in memory at once, nor decodes them all in
        one step of the event loop. Callers that need no answer (the namespace finalizer) drop each
        page. Every page is read at etcd's current revision from where the last one ended: a
        deletion that outlasts a compaction goes on (a consistent continue token would pin the first
        page's revision and turn 410 Gone)."""
        token = ""
        while True:
            listed = await self.list(res, cluster, namespace, matches=matches, limit=DELETE_PAGE,
                                     continue_token=token)
            # kube's inconsistent continue (revision -1): from where this page ended, at the latest revision
            token = encode_continue(-1, decode_continue(listed.continue_token)[1]) if listed.continue_token else ""
            page: Objs = []
            for entry in listed.entries:
                meta = decoded(entry)["metadata"]
                try:
                    gone, _ = await self.delete(res, cluster, meta.get("namespace", ""), meta["name"],
                                                dry_run=dry_run, ctx=ctx, propagation=propagation)
                    page.append(gone)
                except st.APIError as exc:
                    if exc.code != 404:
                        raise
            del listed  # the read page is not held while the caller has the deleted one
            yield page
            if not token:
                return

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _attributes(ctx: RequestContext | None, res: Resource, operation: str, cluster: str, namespace: str,
                    name: str, obj: Obj | None, old: Obj | None, subresource: str = "") -> Attributes:
        return Attributes(ctx if ctx is not None else system_context(cluster), res, operation,
                          namespace if res.namespaced else "", name, obj, old, subresource)

    async def _read(self, res: Resource, key: str, name: str) -> Stored:
        try:
            return await self.storage.get(key)
        except KeyNotFound as exc:
            shared = self.shared.get(res.prefix)
            found = shared.get(parse_key(res.prefix, key, res.namespaced).cluster, name) if shared is not None else None
            if found is None:
                raise storage_errors(res, name, exc) from exc
            return Stored(key, found, SHARED_REVISION)
        except StorageError as exc:
            raise storage_errors(res, name, exc) from exc

    def _check_kind(self, res: Resource, obj: Any) -> Obj:
        if not isinstance(obj, dict):
            raise st.bad_request("the body of the request must be a JSON or YAML object")
        kind = obj.get("kind") or res.kind
        api_version = obj.get("apiVersion") or res.api_version
        if kind != res.kind:
            raise st.bad_request(f"the kind of the object ({kind}) does not match the resource's kind ({res.kind})")
        if api_version != res.api_version:
            raise st.bad_request(f"the API version in the data ({api_version}) does not match the expected API "
                                 f"version ({res.api_version})")
        obj["kind"] = kind
        return to_storage(res, obj)

    def _check_namespace(self, res: Resource, namespace: str, meta: Obj) -> None:
        if not res.namespaced:
            meta.pop("namespace", None)
            return
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise st.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
        meta["namespace"] = namespace

    def _validate(self, res: Resource, obj: Obj, old: Obj | None, subresource: str = "") -> None:
        causes = validate_object_meta(obj["metadata"], namespaced=res.namespaced,
                                      name_is_dns_label=res.name_is_dns_label,
                                      name_is_path_segment=res.name_is_path_segment)
        if old is not None and not causes:
            causes += _immutable_meta(obj["metadata"], old["metadata"])
        strategy = strategy_of(res)
        if old is None:
            causes += strategy.validate(obj)
        elif subresource:
            causes += strategy.validate_subresource_update(subresource, obj, old)
        else:
            causes += strategy.validate_update(obj, old)
        if causes:
            raise st.invalid(res.kind, obj["metadata"].get("name", ""), causes, res.group)


def _metadata(res: Resource, obj: Obj) -> Obj:
    """obj's metadata, null fields dropped: kube decodes null into the zero value, which it omits.

    A custom resource's malformed metadata fields are dropped too, as kube's CRD handler drops them."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    if res.is_custom:
        drop_malformed_meta(meta)
    for field_name in [k for k, v in meta.items() if v is None]:
        del meta[field_name]
    return meta


def _undecodable_patch(patched: Obj) -> st.APIError:
    """kube's answer when the patched object does not decode: 422 on the field `patch`, with the decoder's error."""
    import json

    try:
        text = json.dumps(patched, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        text = "{...}"
    return st.invalid("", "", [invalid_value("patch", text, "exceeded max depth")])


def _immutable_meta(meta: Obj, old: Obj) -> list[st.Cause]:
    causes = []
    for field_name in ("namespace", "name"):
        if meta.get(field_name, "") != old.get(field_name, ""):
            causes.append(st.Cause("FieldValueInvalid", "Invalid value: field is immutable",
                                   f"metadata.{field_name}"))
    return causes


def strategy_of(res: Resource) -> Strategy:
    return res.strategy if res.strategy is not None else DEFAULT_STRATEGY


def _has_finalizers(res: Resource, obj: Obj) -> bool:
    return bool(strategy_of(res).finalizers(obj))


def _mark_deleting(res: Resource, obj: Obj) -> None:
    """The first DELETE of an object that finalizers hold: deletionTimestamp now, grace 0, as kube marks it."""
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        return
    meta["deletionTimestamp"] = now_rfc3339()
    meta["deletionGracePeriodSeconds"] = 0
    if meta.get("generation"):
        meta["generation"] = int(meta["generation"]) + 1
    strategy_of(res).prepare_for_delete(obj)


def _graceful(obj: Obj, grace: int, *, changed: bool) -> Obj | None:
    """`obj` deleting within `grace` seconds from now; None when it already is, as soon or sooner, and nothing
    else changed."""
    meta = obj["metadata"]
    deadline = time.time() + grace
    current = meta.get("deletionGracePeriodSeconds")
    if meta.get("deletionTimestamp") and isinstance(current, int) and current <= grace:
        return obj if changed else None
    meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deadline))
    meta["deletionGracePeriodSeconds"] = grace
    return obj


def _finalized(res: Resource, obj: Obj) -> bool:
    """A deleting object whose last finalizer is gone is removed, as kube does (kube's ShouldDeleteDuringUpdate:
    not one still in its grace period, which its kubelet ends)."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("deletionGracePeriodSeconds") \
        and not _has_finalizers(res, obj)


def _precondition(resource_version: Any) -> str:
    """The resourceVersion an update or patch must find: "" for none. kube reads "0" as unset here (an
    unconditional update), so a `kubectl replace` of a file saved with `resourceVersion: "0"` works."""
    return "" if resource_version in (None, "", "0") else str(resource_version)


def parse_resource_version(value: str) -> int:
    try:
        rv = int(value)
    except ValueError as exc:
        raise st.bad_request(f"invalid resourceVersion {value!r}: it must be an integer") from exc
    if rv < 0:
        raise st.bad_request(f"invalid resourceVersion {value!r}")
    return rv


__all__ = [
    "CLUSTER_ANNOTATION",
    "ListResult",
    "Registry",
    "now_rfc3339",
    "parse_key",
    "parse_resource_version",
    "storage_errors",
]
