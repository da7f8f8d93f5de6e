"""HTTP verbs on resources: turns RequestInfo + query into registry calls and responses."""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import MultiMapping

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.apimachinery.selectors import FieldSelector, LabelSelector
from kcp_apiserver.endpoints import listoptions
from kcp_apiserver.endpoints.deleteoptions import read_delete_options
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.endpoints.watchstream import ChunkedStream, TableEncoder
from kcp_apiserver.endpoints.wire import (
    PROTOBUF,
    decode_object,
    json_response,
    read_body,
    request_context,
    wants_table,
)
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.patch import patcher
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import (
    CLUSTER_ANNOTATION,
    ListResult,
    Registry,
    parse_resource_version,
    strategy_of,
)
from kcp_apiserver.registry.tables import to_table
from kcp_apiserver.storage import watchframing
from kcp_apiserver.storage.watchcache import (
    ADDED,
    TooOld,
    WatchCache,
    Watcher,
    WatchEvent,
)

CLIENT_GONE_CHECK_SECONDS = 5.0
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
NON_NAMESPACED_SUBRESOURCES = {"namespaces": {"status", "finalize"}}


@dataclass
class WatchSettings:
    bookmark_interval: float = 60.0
    min_request_timeout: float = 1800.0


def _dry_run(query: MultiMapping[str]) -> bool:
    values = query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise st.bad_request(f'Invalid dry run value "{value}": must be "All"')
    return bool(values)


def _int_param(query: MultiMapping[str], name: str) -> int:
    value = query.get(name, "")
    if not value:
        return 0
    try:
        parsed = int(value)
    except ValueError as exc:
        raise st.bad_request(f"invalid {name} {value!r}: must be an integer") from exc
    if parsed < 0:
        raise st.bad_request(f"invalid {name} {value!r}: must not be negative")
    return parsed


def build_filter(res: Resource, query: MultiMapping[str]) -> tuple[Callable[[Obj], bool] | None, str]:
    """Selectors from the query as one predicate, plus a name pinned by the field selector."""
    labels = LabelSelector.parse(query.get("labelSelector", ""))
    fields = FieldSelector.parse(query.get("fieldSelector", ""), res.selectable_fields)
    pinned = fields.exact("metadata.name") or ""
    if labels.empty and fields.empty:
        return None, pinned

    view = res.from_storage  # field paths name the requested shape, not the stored one

    def matches(obj: Obj) -> bool:
        return labels.matches((obj.get("metadata") or {}).get("labels")) and (
            fields.empty or fields.matches(view(obj) if view is not None else obj))

    return matches, pinned


def present(res: Resource, obj: Obj) -> Obj:
    """A stored object as the requested version shows it: its apiVersion, and defaults applied on read."""
    if res.from_storage is not None:
        return res.from_storage(obj)
    if not res.is_custom:
        return obj
    defaults = res.type_schema is not None and res.type_schema.has_defaults
    if obj.get("apiVersion") == res.api_version and not defaults:
        return obj
    out = copy.deepcopy(obj) if defaults else dict(obj)
    out["apiVersion"] = res.api_version
    if defaults and res.type_schema is not None:
        res.type_schema.default(out)
    return out


def _path_get(obj: Obj, path: str) -> Any:
    for part in path.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)  # type: ignore[assignment]
    return obj


def _path_set(obj: Obj, path: str, value: Any) -> None:
    parts = path.strip(".").split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


def to_scale(res: Resource, obj: Obj) -> Obj:
    """autoscaling/v1 Scale of a custom resource, from the CRD's scale paths."""
    meta = obj["metadata"]
    status: Obj = {"replicas": _path_get(obj, res.scale.status_replicas_path) or 0}
    if res.scale.label_selector_path:
        selector = _path_get(obj, res.scale.label_selector_path)
        if selector:
            status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": _path_get(obj, res.scale.spec_replicas_path) or 0}, "status": status}


class ResourceHandlers:
    """Serves every verb of every resource through the one generic registry."""

    def __init__(self, catalog: Catalog, registry: Registry, caches: WatchCaches, *,
                 watch: WatchSettings, fields: FieldValidator) -> None:
        self.catalog = catalog
        self.registry = registry
        self.caches = caches
        self.watch_settings = watch
        self.fields = fields

    async def handle(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        res = self.catalog.lookup(info.cluster, info.group, info.version, info.resource)
        if res is None or info.verb not in res.verbs:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        if info.subresource and not self._subresource_ok(res, info.subresource):
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        if info.wildcard and info.verb not in ("list", "watch"):
            raise st.method_not_allowed(f"{info.verb} is not allowed across logical clusters; only list and watch")
        namespace = info.namespace if res.namespaced else ""
        if res.namespaced and not namespace and info.verb not in ("list", "watch"):
            raise st.method_not_allowed()
        query = request.query
        verb = info.verb
        if info.subresource == "scale":
            return await self._scale(request, res, info, namespace)
        if verb == "get":
            if query.get("resourceVersion", "") not in ("", "0"):  # NotOlderThan: the latest will do, once reached
                await self.registry.wait_for_revision(res, parse_resource_version(query["resourceVersion"]))
            obj = await self.registry.get(res, info.cluster, namespace, info.name)
            return self._respond_object(request, res, obj)
        if verb == "list":
            return await self._list(request, res, info, namespace)
        if verb == "watch":
            return await self._watch(request, res, info, namespace)
        dry_run = _dry_run(query)
        ctx = request_context(request)
        ctx.dry_run = dry_run
        ctx.field_manager = query.get("fieldManager", "")
        if verb == "create":
            obj, warnings = await self._decode(request, res)
            created = await self.registry.create(res, info.cluster, namespace, obj, dry_run=dry_run, ctx=ctx)
            return self._respond_object(request, res, created, 201, warnings)
        if verb == "update":
            obj, warnings = await self._decode(request, res,
                                               check_fields=info.subresource != "status" or res.is_custom)
            if info.subresource == "finalize":
                return await self._finalize(request, res, info, obj, dry_run)
            updated = await self.registry.update(res, info.cluster, namespace, info.name, obj,
                                                 subresource=info.subresource, dry_run=dry_run, ctx=ctx)
            return self._respond_object(request, res, updated, 200, warnings)
        if verb == "patch":
            return await self._patch(request, res, info, namespace, dry_run)
        if verb == "delete":
            return await self._delete(request, res, info, namespace, dry_run)
        if verb == "deletecollection":
            return await self._delete(request, res, info, namespace, dry_run)
        raise st.method_not_allowed()

    @staticmethod
    def _subresource_ok(res: Resource, sub: str) -> bool:
        if sub == "status":
            return res.has_status
        if sub == "scale":
            return res.scale is not None
        return sub in NON_NAMESPACED_SUBRESOURCES.get(res.plural, set()) and not res.group

    def _respond_object(self, request: web.Request, res: Resource, obj: Obj, code: int = 200,
                        warnings: list[str] | None = None) -> web.Response:
        headers = _warning_headers(res, warnings)
        obj = present(res, obj)
        if wants_table(request) and request.method == "GET":
            return json_response(to_table(res, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                                          request.query.get("includeObject", "Metadata")), code, headers)
        return json_response(obj, code, headers)

    async def _decode(self, request: web.Request, res: Resource, *, check_fields: bool = True) -> tuple[Obj, list[str]]:
        body = await read_body(request)
        obj = decode_object(body, request.content_type, res.kind)
        if not isinstance(obj, dict):
            raise st.bad_request("the body of the request must be an object")
        warnings: list[str] = []
        if check_fields:
            json_body = None if request.content_type == PROTOBUF else body
            warnings = self.fields.check(res, obj, json_body, request.query.get("fieldValidation", ""))
        return obj, warnings

    async def _list(self, request: web.Request, res: Resource, info: RequestInfo, namespace: str) -> web.Response:
        query = request.query
        listoptions.validate_list(query)
        matches, _ = build_filter(res, query)
        cluster = None if info.wildcard else info.cluster
        rv = query.get("resourceVersion", "")
        exact = query.get("resourceVersionMatch", "") == listoptions.EXACT
        result = await self.registry.list(res, cluster, namespace, matches=matches, limit=_int_param(query, "limit"),
                                          continue_token=query.get("continue", ""), resource_version=rv, exact=exact,
                                          cache=await self.caches.get(res))
        list_meta: dict[str, Any] = {"resourceVersion": str(result.revision)}
        if result.continue_token:
            list_meta["continue"] = result.continue_token
        items = result.items
        if res.converts:
            show = self._presenter(res, info)
            items = [show(_cluster_of(o), o) for o in items]
        headers = _warning_headers(res, None)
        if wants_table(request):
            return json_response(to_table(res, items, list_meta, query.get("includeObject", "Metadata")),
                                 headers=headers)
        return json_response({"kind": res.list_kind, "apiVersion": res.api_version, "metadata": list_meta,
                              "items": items}, headers=headers)

    def _presenter(self, res: Resource, info: RequestInfo) -> Callable[[str, Obj], Obj]:
        """present() for objects of a logical cluster: across clusters (`*`), each object is shown by
        its own cluster's definition of the resource (its CRD's schema and defaults)."""
        if not (info.wildcard and res.is_custom):
            return lambda _cluster, obj: present(res, obj)
        return lambda cluster, obj: present(self.catalog.in_cluster(res, cluster), obj)

    async def _patch(self, request: web.Request, res: Resource, info: RequestInfo, namespace: str,
                     dry_run: bool) -> web.Response:
        apply = patcher(request.content_type, await read_body(request), self.fields.patch_meta(res))
        warnings: list[str] = []
        mode = request.query.get("fieldValidation", "")

        def apply_checked(doc: Obj) -> Obj:
            patched = apply(doc)
            if (info.subresource != "status" or res.is_custom) and isinstance(patched, dict):
                warnings.extend(self.fields.check(res, patched, None, mode))
            return patched

        obj = await self.registry.patch(res, info.cluster, namespace, info.name, apply_checked,
                                        subresource=info.subresource, dry_run=dry_run, ctx=request_context(request))
        return self._respond_object(request, res, obj, 200, warnings)

    async def _delete(self, request: web.Request, res: Resource, info: RequestInfo, namespace: str,
                      dry_run: bool) -> web.Response:
        """DELETE of one object or of a collection, with kube's DeleteOptions (body, else query)."""
        options = read_delete_options(await read_body(request), request.content_type, request.query)
        dry_run = dry_run or options.dry_run
        ctx = request_context(request)
        ctx.delete_options = options
        if info.verb == "deletecollection":
            matches, _ = build_filter(res, request.query)
            deleted = await self.registry.delete_collection(res, info.cluster, namespace, matches=matches,
                                                            dry_run=dry_run, propagation=options.propagation, ctx=ctx)
            return json_response({"kind": res.list_kind, "apiVersion": res.api_version, "metadata": {},
                                  "items": [present(res, o) for o in deleted]})
        obj, deleted_now = await self.registry.delete(res, info.cluster, namespace, info.name,
                                                      preconditions=options.preconditions, dry_run=dry_run,
                                                      propagation=options.propagation, ctx=ctx)
        if deleted_now and not strategy_of(res).return_deleted_object:
            return json_response(st.success_status({"name": info.name, "group": res.group, "kind": res.plural,
                                                    "uid": obj["metadata"].get("uid", "")}))
        # kube answers 202 when a cascading delete asked for with orphanDependents=false is still under way
        code = 202 if not deleted_now and options.propagation.orphan_dependents is False else 200
        return json_response(present(res, obj), code)

    async def _scale(self, request: web.Request, res: Resource, info: RequestInfo, namespace: str) -> web.Response:
        """GET/PUT/PATCH of autoscaling/v1 Scale, mapped onto the CRD's replica paths."""
        if info.verb == "get":
            return json_response(to_scale(res, await self.registry.get(res, info.cluster, namespace, info.name)))
        dry_run = _dry_run(request.query)
        body = await read_body(request)
        if info.verb == "update":
            wanted = decode_object(body, request.content_type, "Scale")
            if not isinstance(wanted, dict):
                raise st.bad_request("the body of the request must be a Scale object")

            def change(doc: Obj) -> Obj:
                rv = (wanted.get("metadata") or {}).get("resourceVersion")
                if rv and rv != doc["metadata"].get("resourceVersion"):
                    raise st.conflict(res.plural, info.name, res.group)
                return wanted
        elif info.verb == "patch":
            patch_scale = patcher(request.content_type, body, self.fields.scale_patch_meta())

            def change(doc: Obj) -> Obj:
                return patch_scale(to_scale(res, doc))
        else:
            raise st.method_not_allowed()

        def apply(doc: Obj) -> Obj:
            replicas = (change(doc).get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise st.invalid("Scale", info.name, [st.Cause(
                    "FieldValueInvalid", f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    "spec.replicas")], "autoscaling")
            _path_set(doc, res.scale.spec_replicas_path, replicas)
            return doc

        updated = await self.registry.patch(res, info.cluster, namespace, info.name, apply, dry_run=dry_run)
        return json_response(to_scale(res, updated))

    async def _finalize(self, request: web.Request, res: Resource, info: RequestInfo, obj: Obj,
                        dry_run: bool) -> web.Response:
        finalizers = (obj.get("spec") or {}).get("finalizers") or []

        def apply(doc: Obj) -> Obj:
            doc.setdefault("spec", {})["finalizers"] = finalizers
            return doc

        updated = await self.registry.patch(res, info.cluster, "", info.name, apply, dry_run=dry_run)
        return json_response(updated)

    async def _watch(self, request: web.Request, res: Resource, info: RequestInfo,
                     namespace: str) -> web.StreamResponse:
        """The initial state (when asked for), then every change from the watch cache.

        Without sendInitialEvents, a watch from "" or "0" starts with the cache's current state, as
        kube's does; from "N" it replays the cache's window after N. With sendInitialEvents=true (a
        watch-list) the initial state is at least as new as the requested resourceVersion ("" = etcd's
        current revision), and a BOOKMARK annotated k8s.io/initial-events-end marks its end.
        """
        query = request.query
        options = listoptions.validate_watch(query)
        matches, pinned = build_filter(res, query)
        name = info.name or pinned
        cluster = None if info.wildcard else info.cluster
        rv = options.resource_version
        timeout = _int_param(query, "timeoutSeconds") or self.watch_settings.min_request_timeout * (1 + random.random())
        cache = await self.caches.get(res)
        send_initial = options.send_initial_events
        initial = rv in ("", "0") if send_initial is None else send_initial
        listed: ListResult | None = None  # the initial state when the cache is not fresh enough for it
        after = 0
        if initial:
            fresh_for = rv if send_initial else "0"  # kube serves the legacy watch from its cache's state
            if not await self.registry.cache_can_serve(res, cache, cluster, namespace, fresh_for):
                listed = await self.registry.list(res, cluster, namespace, matches=matches, resource_version=fresh_for)
                if name:
                    listed.items = [o for o in listed.items if o["metadata"]["name"] == name]
        elif rv == "0":
            after = cache.revision
        elif rv == "":
            after = await self.registry.current_revision(res)
        else:
            after = parse_resource_version(rv)
            if after > cache.revision:  # a watch from the future would silently skip what comes before it
                await self.registry.wait_for_revision(res, after)
        response = web.StreamResponse(headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b"")  # send the headers now: events are written to the transport directly
        encoder = TableEncoder(res, query.get("includeObject", "Metadata")) if wants_table(request) else None
        stream = ChunkedStream(request)
        show = self._presenter(res, info)
        sink = self._sink(res, info, stream, encoder)

        # from here to subscribing, no await: the initial state and the events after it join exactly
        if initial:
            if listed is None:
                listed = self.registry.list_cached(res, cache, cluster, namespace, matches=matches, name=name)
            after = listed.revision
            objs = [show(_cluster_of(o), o) for o in listed.items]
            if objs:
                stream.write(b"".join(encoder.event(ADDED, o) if encoder else watchframing.event(ADDED, o)
                                      for o in objs))
            if send_initial and options.allow_bookmarks:
                stream.write(watchframing.bookmark(res.kind, res.api_version, after, initial_events_end=True))
        try:
            watcher = cache.subscribe(cluster=cluster, namespace=namespace or None, name=name or None,
                                      matches=matches, after_revision=after, sink=sink)
        except TooOld as exc:
            stream.write(watchframing.error(st.gone(f"too old resource version: {exc.requested} ({exc.oldest})")
                                            .to_status()))
            return response
        await self._stream_until_done(res, cache, watcher, stream, timeout=timeout,
                                      bookmarks=options.allow_bookmarks)
        return response

    def _sink(self, res: Resource, info: RequestInfo, stream: ChunkedStream,
              encoder: TableEncoder | None) -> Callable[[str, WatchEvent], bool]:
        """How one watcher writes a cache event: the shared bytes, or a converted form encoded once per variant."""
        if encoder is not None:
            show = self._presenter(res, info)
            return lambda type_, event: stream.write(encoder.event(type_, show(event.key.cluster, event.obj)))
        if not res.converts:
            return lambda type_, event: stream.write(event.encoded(type_))
        if info.wildcard and res.is_custom:
            def per_cluster(type_: str, event: WatchEvent) -> bool:
                own = self.catalog.in_cluster(res, event.key.cluster)
                return stream.write(event.encoded_as(type_, (own.api_version, own.schema_digest),
                                                     lambda o: present(own, o)))
            return per_cluster
        variant = (res.api_version, res.schema_digest)
        return lambda type_, event: stream.write(event.encoded_as(type_, variant, lambda o: present(res, o)))

    async def _stream_until_done(self, res: Resource, cache: WatchCache, watcher: Watcher, stream: ChunkedStream, *,
                                 timeout: float, bookmarks: bool) -> None:
        """Keep the watch open until its timeout, the client leaving, or the cache closing it (410)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        interval = self.watch_settings.bookmark_interval
        last_bookmark, last_bookmark_at = watcher.after_revision, loop.time()
        try:
            while not watcher.done.is_set():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, interval if bookmarks else remaining, CLIENT_GONE_CHECK_SECONDS)
                try:
                    await asyncio.wait_for(watcher.done.wait(), wait)
                except TimeoutError:
                    if stream.gone():
                        break
                    due = loop.time() - last_bookmark_at >= interval
                    if bookmarks and due and cache.revision > last_bookmark and not watcher.closed:
                        last_bookmark, last_bookmark_at = cache.revision, loop.time()
                        if not stream.write(watchframing.bookmark(res.kind, res.api_version, cache.revision)):
                            watcher.close("watcher too slow; the client must watch again")
            if watcher.close_reason and not stream.broken:
                stream.write(watchframing.error(st.gone(watcher.close_reason).to_status()))
        except asyncio.CancelledError:
            pass
        finally:
            watcher.close()


def _cluster_of(obj: Obj) -> str:
    return str((obj.get("metadata", {}).get("annotations") or {}).get(CLUSTER_ANNOTATION, ""))


def _warning_headers(res: Resource, warnings: list[str] | None) -> dict[str, str] | None:
    if res.deprecation_warning:
        warnings = [res.deprecation_warning, *(warnings or [])]
    if not warnings:
        return None
    quoted = (w.replace("\\", "\\\\").replace('"', '\\"') for w in warnings)
    return {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)}
