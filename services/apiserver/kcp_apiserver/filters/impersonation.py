"""Impersonation, as kube's filter: `Impersonate-User`, `-Group`, `-Uid` and `-Extra-<key>` headers
(kubectl `--as`, `--as-group`, `--as-uid`) make the request act as another identity, if the requester
is authorized to `impersonate` each part of it (users, groups, serviceaccounts, uids, userextras).

It runs after authentication and before authorization, which then judges the impersonated identity.

Each check is made in the request's logical cluster (a grant there reaches no other cluster, nor
`/clusters/*`), but for the group `system:masters`: that group is kcp's superuser everywhere, not a tenant's
to hand out, so impersonating it needs `impersonate` on groups `system:masters` granted in `admin`.
"""

from __future__ import annotations

from urllib.parse import unquote

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import (
    ANONYMOUS,
    AUTHENTICATED,
    SYSTEM_MASTERS,
    UNAUTHENTICATED,
    RequestContext,
    RequestInfo,
    UserInfo,
)
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters import Handler
from kcp_apiserver.filters.authorization import Authorizer, forbidden_message
from kcp_apiserver.registry.clusters import DEFAULT_CLUSTER

USER, GROUP, UID, EXTRA = "Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-"
SERVICE_ACCOUNT = "system:serviceaccount:"
AUTHENTICATION_GROUP = "authentication.k8s.io"


def _check(cluster: str, resource: str, name: str, *, group: str = "", namespace: str = "",
           subresource: str = "") -> RequestInfo:
    return RequestInfo(cluster, "", True, "impersonate", "apis" if group else "api", group, "", namespace, resource,
                       name, subresource)


def requested(request: web.Request, cluster: str) -> tuple[UserInfo, list[RequestInfo]] | None:
    """The identity the headers ask for and the `impersonate` checks it needs; None when none is asked."""
    headers = request.headers
    name = headers.get(USER, "")
    groups = tuple(headers.getall(GROUP, ()))
    uid = headers.get(UID, "")
    extra: dict[str, list[str]] = {}
    for header, value in headers.items():
        if header.lower().startswith(EXTRA.lower()):
            extra.setdefault(unquote(header[len(EXTRA):]).lower(), []).append(value)
    if not name:
        if groups or uid or extra:
            asked = [f"{GROUP}={g}" for g in groups] + ([f"{UID}={uid}"] if uid else []) + sorted(extra)
            raise st.internal(f"requested {asked} without impersonating a user")
        return None
    checks: list[RequestInfo] = []
    if name.startswith(SERVICE_ACCOUNT) and name.count(":") == 3:
        _, _, sa_namespace, sa_name = name.split(":")
        checks.append(_check(cluster, "serviceaccounts", sa_name, namespace=sa_namespace))
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{sa_namespace}", *groups)
    else:
        checks.append(_check(cluster, "users", name))
    checks += [_check(DEFAULT_CLUSTER if g == SYSTEM_MASTERS else cluster, "groups", g)
               for g in headers.getall(GROUP, ())]
    checks += [_check(cluster, "userextras", v, group=AUTHENTICATION_GROUP, subresource=k)
               for k, values in extra.items() for v in values]
    if uid:
        checks.append(_check(cluster, "uids", uid, group=AUTHENTICATION_GROUP))
    if name == ANONYMOUS.name:
        groups = groups if UNAUTHENTICATED in groups else (*groups, UNAUTHENTICATED)
    elif AUTHENTICATED not in groups:
        groups = (*groups, AUTHENTICATED)
    user = UserInfo(name, uid=uid, groups=groups, extra=tuple((k, tuple(v)) for k, v in sorted(extra.items())))
    return user, checks


def impersonation(authorizer: Authorizer) -> web.middleware:  # type: ignore[valid-type]
    @web.middleware
    async def impersonate(request: web.Request, handler: Handler) -> web.StreamResponse:
        ctx = request_context(request)
        asked = requested(request, ctx.cluster)
        if asked is None:
            return await handler(request)
        user, checks = asked
        for info in checks:
            check = RequestContext(info, user=ctx.user)
            decision = await authorizer.authorize(check)
            if not decision.allowed:
                raise st.APIError(403, "Forbidden", forbidden_message(check, decision.reason),
                                  {k: v for k, v in (("name", info.name), ("group", info.group),
                                                     ("kind", info.resource)) if v})
        # the impersonated identity stays in the requester's logical cluster, if it has one
        ctx.impersonator = ctx.user
        ctx.user = UserInfo(user.name, uid=user.uid, groups=user.groups, extra=user.extra, cluster=ctx.user.cluster)
        return await handler(request)

    return impersonate
