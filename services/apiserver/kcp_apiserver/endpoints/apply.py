"""PATCH with `application/apply-patch+yaml`: server-side apply, and the options every write checks."""

from __future__ import annotations

import orjson
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.apimachinery.validation import forbidden, required
from kcp_apiserver.endpoints.base import Endpoints, respond_object
from kcp_apiserver.endpoints.wire import YAML, decode_object
from kcp_apiserver.registry.managedfields import check_manager
from kcp_apiserver.registry.resource import Obj, Resource

APPLY_PATCH = "application/apply-patch+yaml"


def is_apply(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == APPLY_PATCH


def check_options(request: web.Request, ctx: RequestContext, options_kind: str, *, apply: bool = False) -> None:
    """kube's validation of Create/Update/PatchOptions: fieldManager (required to apply), force."""
    causes = []
    if options_kind == "PatchOptions":
        if apply and not ctx.field_manager:
            causes.append(required("fieldManager", "is required for apply patch"))
        if not apply and "force" in request.query:
            causes.append(forbidden("force", "may not be specified for non-apply patch"))
    if causes:
        raise st.invalid(options_kind, "", causes, "meta.k8s.io")
    check_manager(ctx.field_manager, options_kind)


def parse_config(body: bytes) -> Obj:
    """The applied configuration: YAML, of which JSON is a part (400 when it does not parse)."""
    if not body.strip():
        raise st.bad_request("the apply patch body is empty")
    try:
        config = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            config = decode_object(body, YAML)
        except st.APIError as exc:
            raise st.bad_request(f"error decoding YAML: {exc.message}") from None
    if not isinstance(config, dict):
        raise st.bad_request("error decoding YAML: the apply patch must be an object")
    return config


def check_config(config: Obj, name: str, api_version: str, kind: str) -> None:
    """An applied configuration names the URL's type (`api_version`, `kind`) and object, and never managedFields."""
    given_version, given_kind = config.get("apiVersion"), config.get("kind")
    if given_version != api_version:
        raise st.bad_request(f"Incorrect version specified in apply patch. Specified patch version: "
                             f"{given_version or ''}, expected: {api_version}")
    if given_kind != kind:
        raise st.bad_request(f"the kind in the apply patch ({given_kind or ''}) does not match the expected kind "
                             f"({kind})")
    meta = config.get("metadata")
    if meta is None:
        meta = config["metadata"] = {}
    if not isinstance(meta, dict):
        raise st.bad_request("metadata must be an object")
    if meta.get("managedFields") is not None:
        raise st.bad_request("metadata.managedFields must be nil")
    if meta.get("name") is None:
        meta["name"] = name
    elif meta["name"] != name:
        raise st.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")


def force_param(request: web.Request) -> bool:
    value = request.query.get("force")
    if value is None:
        return False
    return value.lower() in ("", "true", "1")


async def apply(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext, namespace: str,
                body: bytes) -> web.Response:
    info = ctx.info
    check_options(request, ctx, "PatchOptions", apply=True)
    config = parse_config(body)
    check_config(config, info.name, res.api_version, res.kind)
    checks_fields = info.subresource != "status" or res.is_custom
    mode = request.query.get("fieldValidation", "")
    warnings: list[str] = []
    if checks_fields:
        json_body = body if body.lstrip()[:1] == b"{" else None
        warnings = ep.fields.check(res, config, json_body, mode, default=False)

    def prepare(merged: Obj) -> Obj:
        if checks_fields:
            ep.fields.check(res, merged, None, "Ignore")
        return merged

    obj, created = await ep.registry.apply(res, info.cluster, namespace, info.name, config, prepare=prepare,
                                           force=force_param(request), subresource=info.subresource,
                                           dry_run=ctx.dry_run, ctx=ctx)
    return respond_object(request, res, obj, 201 if created else 200, warnings)
