"""Service-account bearer tokens: verified offline against the signing key, then the service account
must still exist with the uid the token names (a deleted or recreated one's tokens are refused).

A verified token is remembered briefly by its hash, so a busy client pays for the RSA check once per
few seconds; the service account's uid is still checked on every request (a watch-cache lookup).
"""

from __future__ import annotations

import hashlib
import time

from aiohttp import web

from kcp_apiserver.apimachinery.jwt import looks_like_jwt
from kcp_apiserver.apimachinery.request import AUTHENTICATED, CREDENTIAL_ID, UserInfo
from kcp_apiserver.filters.authentication import bearer_token
from kcp_apiserver.registry.serviceaccounts import (
    LEEWAY_SECONDS,
    ServiceAccountLookup,
    ServiceAccountTokens,
    TokenSubject,
    service_account_groups,
    service_account_username,
)

CACHE_SECONDS = 10.0
CACHE_ENTRIES = 4096


def service_account_user(subject: TokenSubject) -> UserInfo:
    """kube's identity of a service account, plus the logical cluster it belongs to."""
    extra = ((CREDENTIAL_ID, (f"JTI={subject.jti}",)),) if subject.jti else ()
    return UserInfo(service_account_username(subject.namespace, subject.name), uid=subject.uid,
                    groups=(*service_account_groups(subject.namespace), AUTHENTICATED), extra=extra,
                    cluster=subject.cluster)


class ServiceAccountAuthenticator:
    """Recognises the tokens `tokens` issued; needs `bind()` (the service-account lookup) before it answers."""

    def __init__(self, tokens: ServiceAccountTokens) -> None:
        self.tokens = tokens
        self.lookup: ServiceAccountLookup | None = None
        self._verified: dict[bytes, tuple[float, TokenSubject, UserInfo]] = {}

    def bind(self, lookup: ServiceAccountLookup) -> None:
        self.lookup = lookup

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        return await self.authenticate_token(bearer_token(request))

    async def authenticate_token(self, token: str) -> UserInfo | None:
        if not token or self.lookup is None or not looks_like_jwt(token):
            return None
        now = time.time()
        digest = hashlib.sha256(token.encode()).digest()
        hit = self._verified.get(digest)
        if hit is not None and hit[0] > now:
            subject, user = hit[1], hit[2]
        else:
            verified = self.tokens.verify(token, now)
            if verified is None:
                return None
            subject, user = verified, service_account_user(verified)
            if len(self._verified) >= CACHE_ENTRIES:
                self._forget_expired(now)
            self._verified[digest] = (min(now + CACHE_SECONDS, verified.expires + LEEWAY_SECONDS), subject, user)
        if not await self.lookup.alive(subject.cluster, subject.namespace, subject.name, subject.uid):
            return None
        return user

    def _forget_expired(self, now: float) -> None:
        self._verified = {k: v for k, v in self._verified.items() if v[0] > now}
        while len(self._verified) >= CACHE_ENTRIES:  # all fresh: drop the oldest half
            for key in list(self._verified)[: CACHE_ENTRIES // 2]:
                del self._verified[key]
