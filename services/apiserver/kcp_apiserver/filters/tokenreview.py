"""TokenReview (authentication.k8s.io/v1): who a bearer token proves to be, asked by a webhook or a client
such as kr8s' `whoami()`. Answered by the server's own token authenticators, never stored.

A token names an identity of one logical cluster at most (a service account's); asked about in another
logical cluster it is not authenticated there, as a request with it there would not be.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.filters.authentication import Authenticator, TokenAuthenticator

Obj = dict[str, Any]


class TokenReviewer:
    """Answers a TokenReview with the first token authenticator that knows the token."""

    def __init__(self, authenticators: Sequence[Authenticator], api_audiences: Sequence[str]) -> None:
        self.authenticators = authenticators  # read at each review: the server's list may grow after assembly
        self.api_audiences = tuple(api_audiences)

    async def __call__(self, ctx: RequestContext, review: Obj) -> Obj:
        spec = review.get("spec") or {}
        token = spec.get("token") or ""
        if not token:
            raise st.bad_request("token is required for TokenReview in authentication")
        wanted = [a for a in spec.get("audiences") or () if isinstance(a, str)]
        audiences = [a for a in wanted if a in self.api_audiences] if wanted else list(self.api_audiences)
        status: Obj = {"user": {}}
        if wanted and not audiences:
            status["error"] = f"token audiences {wanted} is invalid for the target audiences {list(self.api_audiences)}"
        else:
            user = await self._authenticate(token)
            if user is not None and user.cluster and user.cluster != ctx.cluster:
                status["error"] = f"the token names an identity of another logical cluster than {ctx.cluster}"
            elif user is not None:
                status = {"authenticated": True, "user": user.as_dict(), "audiences": audiences}
        return {**review, "metadata": {**(review.get("metadata") or {}), "creationTimestamp": None},
                "status": status}

    async def _authenticate(self, token: str) -> Any:
        for authenticator in self.authenticators:
            if isinstance(authenticator, TokenAuthenticator):
                user = await authenticator.authenticate_token(token)
                if user is not None:
                    return user
        return None
