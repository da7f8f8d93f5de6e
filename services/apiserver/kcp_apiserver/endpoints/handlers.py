"""HTTP verbs on resources: turns RequestInfo + query into registry calls and responses."""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from multidict import MultiMapping

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.apimachinery.selectors import FieldSelector, LabelSelector
from kcp_apiserver.endpoints.deleteoptions import read_delete_options
from kcp_apiserver.endpoints.fieldvalidation import FieldValidator
from kcp_apiserver.endpoints.wire import (
    BUILTIN_BODY_TYPES,
    CUSTOM_BODY_TYPES,
    PROTOBUF,
    body_media_type,
    decode_object,
    json_response,
    read_body,
    request_context,
    wants_table,
)
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.patch import patcher
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry, parse_resource_version
from kcp_apiserver.registry.tables import to_table
from kcp_apiserver.storage.watchcache import ADDED, TooOld, WatchEvent

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
    defaults = res.compiled is not None and res.compiled.has_defaults
    if obj.get("apiVersion") == res.api_version and not defaults:
        return obj
    out = copy.deepcopy(obj) if defaults else dict(obj)
    out["apiVersion"] = res.api_version
    if defaults:
        res.compiled.apply_defaults(out)
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
        obj = decode_object(body, body_media_type(request), res.kind,
                            accept=CUSTOM_BODY_TYPES if res.is_custom else BUILTIN_BODY_TYPES)
        if not isinstance(obj, dict):
            raise st.bad_request("the body of the request must be an object")
        warnings: list[str] = []
        if check_fields:
            json_body = None if request.content_type == PROTOBUF else body
            warnings = self.fields.check(res, obj, json_body, request.query.get("fieldValidation", ""))
        return obj, warnings

    async def _list(self, request: web.Request, res: Resource, info: RequestInfo, namespace: str) -> web.Response:
        query = request.query
        matches, pinned = build_filter(res, query)
        cluster = None if info.wildcard else info.cluster
        rv = query.get("resourceVersion", "")
        exact = query.get("resourceVersionMatch", "") == "Exact"
        result = await self.registry.list(res, cluster, namespace, matches=matches, limit=_int_param(query, "limit"),
                                          continue_token=query.get("continue", ""), resource_version=rv, exact=exact)
        list_meta: dict[str, Any] = {"resourceVersion": str(result.revision)}
        if result.continue_token:
            list_meta["continue"] = result.continue_token
        items = [present(res, o) for o in result.items] if res.converts else result.items
        headers = _warning_headers(res, None)
        if wants_table(request):
            return json_response(to_table(res, items, list_meta, query.get("includeObject", "Metadata")),
                                 headers=headers)
        return json_response({"kind": res.list_kind, "apiVersion": res.api_version, "metadata": list_meta,
                              "items": items}, headers=headers)

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
        if deleted_now and res.group != "apiextensions.k8s.io":
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
            wanted = decode_object(body, body_media_type(request), "Scale", accept=BUILTIN_BODY_TYPES)
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
        query = request.query
        matches, pinned = build_filter(res, query)
        name = info.name or pinned
        cluster = None if info.wildcard else info.cluster
        rv = query.get("resourceVersion", "")
        timeout = _int_param(query, "timeoutSeconds") or self.watch_settings.min_request_timeout * (1 + random.random())
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        table = wants_table(request)
        cache = await self.caches.get(res)
        listed = None
        after = 0
        if rv in ("", "0"):  # the current state first, then the changes after it
            listed = await self.registry.list(res, cluster, namespace, matches=matches)
            after = listed.revision
        else:
            after = parse_resource_version(rv)
            if after > cache.revision:  # a watch from the future would silently skip what comes before it
                await self.registry.wait_for_revision(res, after)
        response = web.StreamResponse(headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b"")  # send the headers now: events are written to the transport directly
        encoder = _TableEncoder(res, query.get("includeObject", "Metadata")) if table else None
        stream = _ChunkedStream(request)

        variant = (res.api_version, res.schema_digest)
        transform = res.converts and encoder is None

        def sink(type_: str, event: WatchEvent) -> bool:
            if encoder is not None:
                return stream.write(encoder.event(type_, present(res, event.obj)))
            if transform:
                return stream.write(event.encoded_as(type_, variant, lambda o: present(res, o)))
            return stream.write(event.encoded(type_))

        if listed is not None:
            initial = [present(res, o) for o in listed.items if not name or o["metadata"]["name"] == name]
            if initial:  # no await between these writes and subscribing: nothing can slip in between
                stream.write(b"".join(encoder.event(ADDED, o) if encoder else _event_bytes(ADDED, o)
                                      for o in initial))
        try:
            watcher = cache.subscribe(cluster=cluster, namespace=namespace or None, name=name or None,
                                      matches=matches, after_revision=after, sink=sink)
        except TooOld as exc:
            stream.write(_error_event(st.gone(f"too old resource version: {exc.requested} ({exc.oldest})")))
            return response
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last_bookmark, last_bookmark_at = watcher.after_revision, loop.time()
        try:
            while not watcher.done.is_set():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, self.watch_settings.bookmark_interval if bookmarks else remaining,
                           CLIENT_GONE_CHECK_SECONDS)
                try:
                    await asyncio.wait_for(watcher.done.wait(), wait)
                except TimeoutError:
                    if stream.gone():
                        break
                    due = loop.time() - last_bookmark_at >= self.watch_settings.bookmark_interval
                    if bookmarks and due and cache.revision > last_bookmark and not watcher.closed:
                        last_bookmark, last_bookmark_at = cache.revision, loop.time()
                        if not stream.write(_bookmark(res, cache.revision)):
                            watcher.close("watcher too slow; the client must watch again")
            if watcher.close_reason and not stream.broken:
                stream.write(_error_event(st.gone(watcher.close_reason)))
        except asyncio.CancelledError:
            pass
        finally:
            watcher.close()
        return response


class _ChunkedStream:
    """Writes HTTP chunks straight to the connection's transport, synchronously.

    The watch cache calls this from its dispatch loop; a client whose unsent
    data passes MAX_PENDING cannot keep up and is cut off, as kube does.
    """

    MAX_PENDING = 32 * 1024 * 1024

    def __init__(self, request: web.Request) -> None:
        self.transport = request.transport
        self.broken = False

    def gone(self) -> bool:
        return self.broken or self.transport is None or self.transport.is_closing()

    def write(self, data: bytes) -> bool:
        transport = self.transport
        if self.broken or transport is None or transport.is_closing():
            self.broken = True
            return False
        transport.write(b"%x\r\n%b\r\n" % (len(data), data))
        return transport.get_write_buffer_size() < self.MAX_PENDING


class _TableEncoder:
    """Watch events as one-row Tables (kubectl get -w); columns only in the first."""

    def __init__(self, res: Resource, include_object: str) -> None:
        self.res = res
        self.include_object = include_object
        self.first = True

    def event(self, type_: str, obj: Obj) -> bytes:
        table = to_table(self.res, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
                         self.include_object)
        if not self.first:
            table["columnDefinitions"] = []
        self.first = False
        return orjson.dumps({"type": type_, "object": table}) + b"\n"


def _event_bytes(type_: str, obj: Obj) -> bytes:
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


def _error_event(error: st.APIError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": error.to_status()}) + b"\n"


def _bookmark(res: Resource, revision: int) -> bytes:
    return orjson.dumps({"type": "BOOKMARK", "object": {"kind": res.kind, "apiVersion": res.api_version,
                                                        "metadata": {"resourceVersion": str(revision)}}}) + b"\n"


def _warning_headers(res: Resource, warnings: list[str] | None) -> dict[str, str] | None:
    if res.deprecation_warning:
        warnings = [res.deprecation_warning, *(warnings or [])]
    if not warnings:
        return None
    quoted = (w.replace("\\", "\\\\").replace('"', '\\"') for w in warnings)
    return {"Warning": ", ".join(f'299 - "{w}"' for w in quoted)}
