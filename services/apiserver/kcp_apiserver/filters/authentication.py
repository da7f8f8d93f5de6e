"""Authentication: who is asking. Authenticators are tried in order; the first that
recognises the credentials names the user, and a request no one recognises is 401."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import Protocol

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import AUTHENTICATED, SYSTEM_MASTERS, UserInfo
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters import Handler

# kube lets anyone read these (the system:public-info-viewer role); kcp serves them in every logical cluster
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/", "/metrics"})
PUBLIC_PREFIXES = ("/healthz/", "/livez/", "/readyz/")


class Authenticator(Protocol):
    """Returns the user the request proves to be, or None when its credentials are not this one's kind."""

    async def authenticate(self, request: web.Request) -> UserInfo | None: ...


def bearer_token(request: web.Request) -> str:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header[:7].lower() == "bearer " else ""


class StaticTokenAuthenticator:
    """Bearer tokens known in advance (the admin token is `kcp-admin` in `system:masters`)."""

    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self._tokens = [(token.encode(), user) for token, user in tokens.items()]

    @classmethod
    def admin(cls, token: str) -> StaticTokenAuthenticator:
        return cls({token: UserInfo("kcp-admin", groups=(SYSTEM_MASTERS, AUTHENTICATED))})

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        token = bearer_token(request).encode()
        if not token:
            return None
        for known, user in self._tokens:  # compare with every token: the time taken tells nothing
            if hmac.compare_digest(token, known):
                return user
        return None


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def authentication(authenticators: Sequence[Authenticator]) -> web.middleware:  # type: ignore[valid-type]
    """The middleware: the context gets the first authenticator's answer; none at all is 401."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        ctx = request_context(request)
        for authenticator in authenticators:
            user = await authenticator.authenticate(request)
            if user is not None:
                ctx.user = user
                break
        else:
            if not is_public(ctx.info.path):
                raise st.unauthorized()
        return await handler(request)

    return authenticate
