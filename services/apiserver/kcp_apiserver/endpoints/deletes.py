"""DELETE of one object or of a collection, with kube's DeleteOptions (body, else query)."""

from __future__ import annotations

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.base import Endpoints, build_filter
from kcp_apiserver.endpoints.deleteoptions import read_delete_options
from kcp_apiserver.endpoints.wire import json_response, read_body
from kcp_apiserver.registry.conversion import present
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.store import strategy_of


async def delete(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                 namespace: str) -> web.Response:
    info = ctx.info
    options = read_delete_options(await read_body(request), request.content_type, request.query)
    ctx.dry_run = ctx.dry_run or options.dry_run
    ctx.delete_options = options
    if info.verb == "deletecollection":
        matches, _ = build_filter(res, request.query)
        deleted = await ep.registry.delete_collection(res, info.cluster, namespace, matches=matches,
                                                      dry_run=ctx.dry_run, propagation=options.propagation, ctx=ctx)
        return json_response({"kind": res.list_kind, "apiVersion": res.api_version, "metadata": {},
                              "items": [present(res, o) for o in deleted]})
    obj, deleted_now = await ep.registry.delete(res, info.cluster, namespace, info.name,
                                                preconditions=options.preconditions, dry_run=ctx.dry_run,
                                                propagation=options.propagation, ctx=ctx,
                                                grace_period=options.grace_period)
    if deleted_now and not strategy_of(res).return_deleted_object:
        return json_response(st.success_status({"name": info.name, "group": res.group, "kind": res.plural,
                                                "uid": obj["metadata"].get("uid", "")}))
    # kube answers 202 when a cascading delete asked for with orphanDependents=false is still under way
    code = 202 if not deleted_now and options.propagation.orphan_dependents is False else 200
    return json_response(present(res, obj), code)
