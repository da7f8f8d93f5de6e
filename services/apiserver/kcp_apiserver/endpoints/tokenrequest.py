"""POST serviceaccounts/NAME/token: kube's TokenRequest API (`kubectl create token`).

The token names the service account's uid and logical cluster and lasts `expirationSeconds`
(kube's default an hour, at least ten minutes, at most 2^32 seconds); its audiences default to
the API server's own.
"""

from __future__ import annotations

import time

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.base import Endpoints
from kcp_apiserver.endpoints.wire import BUILTIN_BODY_TYPES, body_media_type, decode_object, json_response, read_body
from kcp_apiserver.registry.builtin.core import TOKEN_REQUEST
from kcp_apiserver.registry.resource import Obj, Resource

DEFAULT_SECONDS = 3600
MIN_SECONDS = 10 * 60
MAX_SECONDS = 1 << 32
API_VERSION = f"{TOKEN_REQUEST.group}/{TOKEN_REQUEST.version}"


def _invalid(name: str, field: str, value: object, why: str) -> st.APIError:
    return st.invalid(TOKEN_REQUEST.kind, name, [st.Cause("FieldValueInvalid", f"Invalid value: {value}: {why}",
                                                          field)], TOKEN_REQUEST.group)


def validate(request: Obj, name: str, namespace: str) -> tuple[list[str], int]:
    """The request's audiences and duration, or kube's 422 for a name, namespace or duration it refuses."""
    meta = request.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise _invalid(name, "metadata.name", f'"{meta["name"]}"', "must match the service account name if specified")
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise _invalid(name, "metadata.namespace", f'"{meta["namespace"]}"',
                       "must match the service account namespace if specified")
    spec = request.get("spec") or {}
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_SECONDS
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise st.bad_request("spec.expirationSeconds must be an integer")
    if seconds < MIN_SECONDS:
        raise _invalid(name, "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
    if seconds > MAX_SECONDS:
        raise _invalid(name, "spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds")
    if spec.get("boundObjectRef"):
        raise _invalid(name, "spec.boundObjectRef", "{...}", "binding a token to an object is not supported")
    audiences = spec.get("audiences") or []
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise st.bad_request("spec.audiences must be a list of strings")
    return audiences, seconds


async def create_token(ep: Endpoints, request: web.Request, res: Resource, ctx: RequestContext,
                       namespace: str) -> web.Response:
    if ep.tokens is None:  # this server issues no tokens
        raise st.APIError(404, "NotFound", "the server could not find the requested resource")
    if ctx.info.verb != "create":
        raise st.method_not_allowed()
    info = ctx.info
    body = await read_body(request)
    wanted = decode_object(body, body_media_type(request), TOKEN_REQUEST.kind, accept=BUILTIN_BODY_TYPES)
    if not isinstance(wanted, dict):
        raise st.bad_request("the body of the request must be a TokenRequest object")
    audiences, seconds = validate(wanted, info.name, namespace)
    audiences = audiences or list(ep.tokens.api_audiences)
    account = await ep.registry.get(res, info.cluster, namespace, info.name)
    if account["metadata"].get("deletionTimestamp"):
        raise st.forbidden(f'serviceaccounts "{info.name}" is forbidden: service account {namespace}/{info.name} '
                           "is being deleted")
    token, expires = ep.tokens.issue(info.cluster, account, audiences, seconds, now=time.time())
    out = {"kind": TOKEN_REQUEST.kind, "apiVersion": API_VERSION,
           "metadata": {"name": info.name, "namespace": namespace, "creationTimestamp": None},
           "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": None},
           "status": {"token": token,
                      "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires))}}
    return json_response(out, 201)
