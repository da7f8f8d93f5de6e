"""Authorization: may this user do this verb on this resource (or path) here."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.apis.exportview import content_request
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters import Handler
from kcp_apiserver.rbac.authorizer import Decision
from kcp_apiserver.tenancy.access import initialize_request
from kcp_apiserver.tenancy.syncerview import sync_request

__all__ = ["AlwaysAllow", "Authorizer", "Decision", "authorization", "forbidden_message"]

DECISION_ANNOTATION = "authorization.k8s.io/decision"  # kube's audit annotations of the authorizer's answer
REASON_ANNOTATION = "authorization.k8s.io/reason"


class Authorizer(Protocol):
    async def authorize(self, ctx: RequestContext) -> Decision: ...


class AlwaysAllow:
    """Every authenticated request may do anything (until RBAC arrives)."""

    async def authorize(self, ctx: RequestContext) -> Decision:
        return Decision(True)


def forbidden_message(ctx: RequestContext, reason: str = "") -> str:
    """kube's wording: `configmaps is forbidden: User "u" cannot list resource "configmaps" in API group ""...`."""
    info = ctx.info
    user = ctx.user.name
    if not info.is_resource:
        message = f'forbidden: User "{user}" cannot {info.verb or "get"} path "{info.path}"'
    else:
        resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        subject = f'{info.resource}.{info.group}' if info.group else info.resource
        if info.name:
            subject += f' "{info.name}"'
        scope = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
        message = (f'{subject} is forbidden: User "{user}" cannot {info.verb} resource "{resource}" in API group '
                   f'"{info.group}" {scope}')
    return f"{message}: {reason}" if reason else message


def judged(ctx: RequestContext) -> RequestContext:
    """What the authorizer is asked about: the request itself, or, through an APIExport's virtual workspace,
    its verb on the export's content in the provider's logical cluster (kcp's rule; the consumers' own RBAC is
    not consulted, as kcp's view reaches them with an identity of its own); through an initializing virtual
    workspace, `initialize` on the initializer's WorkspaceType (the workspace's owner acts inside it); through a
    syncer virtual workspace, `sync` on the SyncTarget in its workspace (the view narrows what it reaches)."""
    if ctx.syncer is not None:
        return replace(ctx, info=sync_request(ctx.syncer))
    if ctx.initializer:
        request = initialize_request(ctx.initializer)
        if request is None:
            raise st.APIError(404, "NotFound", "the server could not find the requested resource")
        return replace(ctx, info=request)
    if ctx.export is None:
        return ctx
    return replace(ctx, info=content_request(ctx.export.cluster, ctx.export.name, ctx.info.verb or "get"))


def authorization(authorizer: Authorizer) -> web.middleware:  # type: ignore[valid-type]
    @web.middleware
    async def authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
        ctx = request_context(request)
        # /healthz, /version...: kube's system:public-info-viewer binding is what lets anyone read them; a single
        # check (/readyz/etcd) needs a grant such as system:monitoring's, so anyone else gets kube's 403
        checked = judged(ctx)
        decision = await authorizer.authorize(checked)
        ctx.annotations[DECISION_ANNOTATION] = "allow" if decision.allowed else "forbid"
        ctx.annotations[REASON_ANNOTATION] = decision.reason
        if not decision.allowed:
            info = checked.info
            details = {"name": info.name, "group": info.group, "kind": info.resource} if info.is_resource else {}
            raise st.APIError(403, "Forbidden", forbidden_message(checked, decision.reason),
                              {k: v for k, v in details.items() if v})
        return await handler(request)

    return authorize
