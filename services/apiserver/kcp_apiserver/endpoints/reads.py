"""GET and LIST."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.endpoints import listoptions
from kcp_apiserver.endpoints.base import Endpoints, build_filter, int_param, respond_object, warning_headers
from kcp_apiserver.endpoints.liststream import stream_list
from kcp_apiserver.endpoints.wire import json_response, wants_table
from kcp_apiserver.registry.conversion import cluster_of, presenter
from kcp_apiserver.registry.listing import Entry, decoded, items_json
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.shared import SharedObjects
from kcp_apiserver.registry.store import parse_resource_version
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
    matches, _ = build_filter(res, query)
    cluster = None if info.wildcard else info.cluster
    result = await ep.registry.list(res, cluster, namespace, matches=matches, limit=int_param(query, "limit"),
                                    continue_token=query.get("continue", ""),
                                    resource_version=query.get("resourceVersion", ""),
                                    exact=query.get("resourceVersionMatch", "") == listoptions.EXACT,
                                    cache=await ep.caches.get(res))
    shared = ep.registry.shared.get(res.prefix)
    if shared is not None and not info.wildcard and not query.get("continue"):
        result.entries = with_shared(result.entries, shared, info.cluster, matches)
    list_meta: dict[str, Any] = {"resourceVersion": str(result.revision)}
    if result.continue_token:
        list_meta["continue"] = result.continue_token
        if result.remaining is not None:
            list_meta["remainingItemCount"] = result.remaining
    headers = warning_headers(res, None)
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


def with_shared(entries: list[Entry], shared: SharedObjects, cluster: str,
                matches: Callable[[Obj], bool] | None) -> list[Entry]:
    """A cluster's stored objects and the shared ones it does not shadow, in name order as etcd's keys."""
    stored = {decoded(e)["metadata"]["name"]: e for e in entries}
    for name in shared.names():
        if name not in stored:
            obj = shared.get(cluster, name)
            if obj is not None and (matches is None or matches(obj)):
                stored[name] = obj
    return [stored[name] for name in sorted(stored)]
