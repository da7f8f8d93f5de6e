"""Authentication: who is asking. Authenticators are tried in order; the first that
recognises the credentials names the user, and a request no one recognises is 401."""

from __future__ import annotations

import csv
import hmac
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import structlog
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import AUTHENTICATED, SYSTEM_MASTERS, UserInfo
from kcp_apiserver.endpoints.wire import request_context
from kcp_apiserver.filters import Handler

log = structlog.get_logger("apiserver")

# kube lets anyone read these (the system:public-info-viewer role); kcp serves them in every logical cluster.
# /metrics is not among them: kube serves it only to a caller authorized for it (system:monitoring).
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
# a single check reaches authorization as system:anonymous, which kube's RBAC answers with 403 (not 401)
PUBLIC_PREFIXES = ("/healthz/", "/livez/", "/readyz/")


class Authenticator(Protocol):
    """Returns the user the request proves to be, or None when its credentials are not this one's kind."""

    async def authenticate(self, request: web.Request) -> UserInfo | None: ...


@runtime_checkable
class TokenAuthenticator(Protocol):
    """An authenticator of bearer tokens alone: what a TokenReview asks about (kube's authenticator.Token)."""

    async def authenticate_token(self, token: str) -> UserInfo | None: ...


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

    @classmethod
    def from_file(cls, path: str | Path) -> StaticTokenAuthenticator:
        """kube's --token-auth-file: CSV lines `token,user,uid[,"group1,group2"]`; the last line of a token wins."""
        tokens: dict[str, UserInfo] = {}
        with open(path, newline="") as file:
            for number, record in enumerate(csv.reader(file), start=1):
                if not record:
                    continue
                if len(record) < 3:
                    raise ValueError(f"token file '{path}' must have at least 3 columns (token, user name, user "
                                     f"uid), found {len(record)}")
                token, name, uid = record[:3]
                if not token:
                    log.warning("empty token in token file", path=str(path), record=number)
                    continue
                if token in tokens:
                    log.warning("duplicate token in token file", path=str(path), record=number)
                groups = tuple(record[3].split(",")) if len(record) > 3 else ()
                if AUTHENTICATED not in groups:
                    groups += (AUTHENTICATED,)
                tokens[token] = UserInfo(name, uid=uid, groups=groups)
        return cls(tokens)

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        return await self.authenticate_token(bearer_token(request))

    async def authenticate_token(self, token_text: str) -> UserInfo | None:
        token = token_text.encode()
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
