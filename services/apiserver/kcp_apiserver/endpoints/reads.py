"""GET and LIST."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.endpoints import listoptions
from kcp_apiserver.endpoints.base import Endpoints, build_filter, int_param, respond_object, warning_headers
from kcp_apiserver.endpoints.liststream import stream_list
from kcp_apiserver.endpoints.wire import json_response, request_context, wants_table
from kcp_apiserver.registry.continuetoken import decode_continue
from kcp_apiserver.registry.conversion import cluster_of, presenter
from kcp_apiserver.registry.listing import Entry, items_json, presented_json
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.shared import SharedObjects, page, with_shared
from kcp_apiserver.registry.store import ListResult, parse_resource_version
from kcp_apiserver.registry.tables import to_table


async def get(ep: Endpoints, request: web.Request, res: Resource, info: RequestInfo,
              namespace: str) -> web.Response:
    rv = request.query.get("resourceVersion", "")
    if rv not in ("", "0"):  # NotOlderThan: the latest will do, once reached
        await ep.registry.wait_for_revision(res, parse_resource_version(rv))
    return respond_object(request, res, await ep.registry.get(res, info.cluster, namespace, info.name))


async def list_(ep: Endpoints, request: web.Request, res: Resource, info: RequestInfo,
                namespace: str) -> web.StreamResponse:
    query = request.query
    listoptions.validate_list(query)
    matches = ep.shown(res, request_context(request), build_filter(res, query)[0])
    cluster = None if info.wildcard else info.cluster
    shared = None if info.wildcard else ep.registry.shared.get(res.prefix)
    if shared is not None:
        result = await list_with_shared(ep, res, info.cluster, shared, query, matches)
    else:
        result = await ep.registry.list(res, cluster, namespace, matches=matches, limit=int_param(query, "limit"),
                                        continue_token=query.get("continue", ""),
                                        resource_version=query.get("resourceVersion", ""),
                                        exact=query.get("resourceVersionMatch", "") == listoptions.EXACT,
                                        cache=await ep.caches.get(res))
    list_meta: dict[str, Any] = {"resourceVersion": str(result.revision)}
    if result.continue_token:
        list_meta["continue"] = result.continue_token
        if result.remaining is not None:
            list_meta["remainingItemCount"] = result.remaining
    headers = warning_headers(res, None)
    encoded = presented_json(res, result.entries) if res.converts and not info.wildcard else None
    if encoded is not None:  # each item defaulted and encoded once per revision, not on every list
        if wants_table(request):
            return json_response(to_table(res, [orjson.loads(b) for b in encoded], list_meta,
                                          query.get("includeObject", "Metadata")), headers=headers)
        head = {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": list_meta}
        return await stream_list(request, head, encoded, headers)
    if res.converts or wants_table(request):
        items = result.items
        if res.converts:
            show = presenter(ep.catalog, res, info.wildcard)
            items = [show(cluster_of(o), o) for o in items]
        if wants_table(request):
            return json_response(to_table(res, items, list_meta, query.get("includeObject", "Metadata")),
                                 headers=headers)
        entries: list[Entry] = list(items)
    else:
        entries = result.entries
    head = {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": list_meta}
    return await stream_list(request, head, items_json(entries), headers)


async def list_with_shared(ep: Endpoints, res: Resource, cluster: str, shared: SharedObjects, query: Any,
                           matches: Callable[[Obj], bool] | None) -> ListResult:
    """A list of a resource with shared objects (kube's default ClusterRoles): the cluster's stored objects
    merged with the shared ones, then paged. A continuation reads the stored ones again at the first
    page's revision, so every page comes from one state, as etcd's pages do."""
    token = query.get("continue", "")
    revision, start = decode_continue(token) if token else (0, "")
    if revision:
        stored = await ep.registry.list(res, cluster, "", matches=matches, resource_version=str(revision), exact=True)
    else:
        stored = await ep.registry.list(res, cluster, "", matches=matches,
                                        resource_version=query.get("resourceVersion", ""),
                                        exact=query.get("resourceVersionMatch", "") == listoptions.EXACT,
                                        cache=await ep.caches.get(res))
    merged = with_shared(stored.entries, shared, cluster, matches)
    entries, next_token, remaining = page(merged, res.prefix, cluster, stored.revision,
                                         limit=int_param(query, "limit"), start=start, exact=matches is None)
    return ListResult(entries, stored.revision, next_token, remaining)
