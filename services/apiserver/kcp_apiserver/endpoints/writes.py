"""CREATE, UPDATE (with /status and namespaces' /finalize) and PATCH."""

from __future__ import annotations

import re

from aiohttp import web

from kcp_apiserver.apimachinery import gojson
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.apimachinery.validation import go_format, render_value
from kcp_apiserver.endpoints.apply import apply as apply_config
from kcp_apiserver.endpoints.apply import check_options, is_apply
from kcp_apiserver.endpoints.base import Endpoints, decode_body, respond_object
from kcp_apiserver.endpoints.fieldvalidation import UndecodableObject
from kcp_apiserver.endpoints.wire import json_response, read_body
from kcp_apiserver.registry.patch import STRATEGIC_MERGE_PATCH, parse_patch, patcher
from kcp_apiserver.registry.resource import Obj, Resource


async def create(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                 namespace: str) -> web.Response:
    check_options(request, ctx, "CreateOptions")
    obj, warnings = await decode_body(ep, request, res)
    created = await ep.registry.create(res, ctx.cluster, namespace, obj, dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, created, 201, warnings)


async def update(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                 namespace: str) -> web.Response:
    info = ctx.info
    check_options(request, ctx, "UpdateOptions")
    obj, warnings = await decode_body(ep, request, res, check_fields=info.subresource != "status" or res.is_custom)
    if info.subresource == "finalize":
        return await _finalize(ep, res, ctx, obj)
    updated = await ep.registry.update(res, info.cluster, namespace, info.name, obj, subresource=info.subresource,
                                       dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, updated, 200, warnings)


async def patch(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                namespace: str) -> web.Response:
    info = ctx.info
    body = await read_body(request)
    if is_apply(request.content_type):
        return await apply_config(ep, request, res, ctx, namespace, body)
    check_options(request, ctx, "PatchOptions")
    apply = patcher(request.content_type, body, ep.fields.patch_meta(res))
    warnings: list[str] = []
    mode = request.query.get("fieldValidation", "")

    def apply_checked(doc: Obj) -> Obj:
        patched = apply(doc)
        if (info.subresource != "status" or res.is_custom) and isinstance(patched, dict):
            try:
                warnings.extend(ep.fields.check(res, patched, None, mode))
            except UndecodableObject as exc:
                raise undecodable_patch(request.content_type, body, patched, exc.problems) from None
        return patched

    obj = await ep.registry.patch(res, info.cluster, namespace, info.name, apply_checked,
                                  subresource=info.subresource, dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, obj, 200, warnings)


_UNMARSHAL = re.compile(r"json: cannot unmarshal (\w+) into Go struct field \S+ of type (\w+)")
_UNSTRUCTURED_KINDS = {"string": "string", "number": "float64", "bool": "bool", "array": "slice", "object": "map"}


def undecodable_patch(content_type: str, body: bytes, patched: Obj, problems: list[str]) -> st.APIError:
    """kube's 422 for a patch whose result does not decode as the kind: on the `patch` field, naming the
    patch (strategic merge: Go's `%v` of it, with the unstructured converter's words) or the patched
    object (JSON and merge patches, with the JSON decoder's words)."""
    if content_type.split(";", 1)[0].strip().lower() == STRATEGIC_MERGE_PATCH:
        value = go_format(parse_patch(content_type, body))
        wrong = _UNMARSHAL.match(problems[0])
        detail = problems[0]
        if wrong is not None and wrong.group(2) in ("map", "slice"):  # FromUnstructured's words
            detail = f"cannot restore {wrong.group(2)} from {_UNSTRUCTURED_KINDS.get(wrong.group(1), wrong.group(1))}"
    else:
        value, detail = gojson.marshal(patched), problems[0]
    message = f"Invalid value: {render_value(value)}: {detail}"
    return st.APIError(422, "Invalid", f' "" is invalid: patch: {message}',
                       {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]})


async def _finalize(ep: Endpoints, res: Resource, ctx: RequestContext, obj: Obj) -> web.Response:
    """PUT .../namespaces/NAME/finalize: only spec.finalizers changes."""
    finalizers = (obj.get("spec") or {}).get("finalizers") or []

    def apply(doc: Obj) -> Obj:
        doc.setdefault("spec", {})["finalizers"] = finalizers
        return doc

    updated = await ep.registry.patch(res, ctx.cluster, "", ctx.info.name, apply, dry_run=ctx.dry_run, ctx=ctx,
                                      manager_subresource="finalize")
    return json_response(updated)
