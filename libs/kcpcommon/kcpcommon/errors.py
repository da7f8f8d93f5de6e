"""One error tree at the client boundary.

Code above the client boundary catches `APINotFoundError` or `APIConflictError`,
never kubernetes_asyncio's `ApiException` or aiohttp's errors: those are
translated here, from the server's `Status` body (its `reason` tells a 409
AlreadyExists from a 409 Conflict), and raised `from` the library error so the
original traceback is kept.

`InvalidKubeconfigError` stands apart: it is raised before any request, when a
kubeconfig gives no usable client configuration, and retrying will not fix it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException


class APIClientError(Exception):
    """A request to the API failed; `status` is the HTTP code (0 when none arrived)."""

    def __init__(self, message: str = "", *, status: int = 0, reason: str = "",
                 details: Mapping[str, Any] | None = None, retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message or reason or f"HTTP {status}"
        self.details: dict[str, Any] = dict(details or {})
        self.retry_after = retry_after  # seconds the server asked us to wait, if it did
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"({self.status} {self.reason}) {self.message}"


class APIBadRequestError(APIClientError):
    """400: the request itself is malformed."""


class APIUnauthorizedError(APIClientError):
    """401: no valid credentials."""


class APIForbiddenError(APIClientError):
    """403: authenticated, but not allowed."""


class APINotFoundError(APIClientError):
    """404: the object (or the resource type) does not exist."""


class APIMethodNotAllowedError(APIClientError):
    """405: e.g. a write under the `*` wildcard cluster."""


class APIConflictError(APIClientError):
    """409 Conflict: a stale resourceVersion; re-read and retry."""


class APIAlreadyExistsError(APIClientError):
    """409 AlreadyExists: a create of a name that is taken (not a conflict: retrying won't help)."""


class APIGoneError(APIClientError):
    """410 Expired/Gone: the resourceVersion or continue token is too old; relist."""


class APIInvalidError(APIClientError):
    """422: the object failed validation; `details["causes"]` says which fields."""


class APITooManyRequestsError(APIClientError):
    """429: throttled; wait `retry_after` seconds."""


class APIInternalError(APIClientError):
    """500: the server failed."""


class APIServiceUnavailableError(APIClientError):
    """503: the server (or its etcd) is unavailable for now."""


class APIServerTimeoutError(APIClientError):
    """504, or reason ServerTimeout/Timeout: the server gave up; retrying may succeed."""


class APITransportError(APIClientError):
    """No HTTP answer at all: connection refused or reset, TLS failure, client-side timeout."""


class InvalidKubeconfigError(ValueError):
    """A kubeconfig (file, text or in-cluster account) that yields no usable client configuration.

    Not an `APIClientError`: no request was made, and a retry cannot succeed until
    the kubeconfig changes. `reason` is the condition reason to report (kcp's).
    """

    reason = "InvalidKubeConfig"


# What `translate()` converts; anything else (a bug in our own code) passes through untouched.
LIBRARY_ERRORS: tuple[type[BaseException], ...] = (ApiException, aiohttp.ClientError, OSError)


def _class_for(status: int, reason: str) -> type[APIClientError]:
    """The reason decides where one code means two things (409, and timeouts reported as 500)."""
    if reason == "AlreadyExists":
        return APIAlreadyExistsError
    if reason in ("Expired", "Gone"):
        return APIGoneError
    if reason in ("ServerTimeout", "Timeout"):
        return APIServerTimeoutError
    match status:
        case 400:
            return APIBadRequestError
        case 401:
            return APIUnauthorizedError
        case 403:
            return APIForbiddenError
        case 404:
            return APINotFoundError
        case 405:
            return APIMethodNotAllowedError
        case 409:
            return APIConflictError
        case 410:
            return APIGoneError
        case 422:
            return APIInvalidError
        case 429:
            return APITooManyRequestsError
        case 500:
            return APIInternalError
        case 503:
            return APIServiceUnavailableError
        case 504:
            return APIServerTimeoutError
    return APIClientError


def _parse_status(body: Any) -> dict[str, Any]:
    """The server's Status object, or {} when the body is not one."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            body = json.loads(body) if body.strip() else {}
        except ValueError:
            return {"message": body.strip()[:500]}
    return dict(body) if isinstance(body, Mapping) else {}


def _retry_after(headers: Mapping[str, str] | None, details: Mapping[str, Any]) -> float | None:
    """Retry-After (seconds or an HTTP date), else the Status's details.retryAfterSeconds."""
    value = None
    if headers is not None:
        value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            with contextlib.suppress(TypeError, ValueError):
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    seconds = details.get("retryAfterSeconds")
    return float(seconds) if isinstance(seconds, (int, float)) else None


def error_for_status(status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> APIClientError:
    """The error for an HTTP answer (or a watch ERROR event) from its code and Status body."""
    parsed = _parse_status(body)
    code = parsed.get("code")
    status = status or (code if isinstance(code, int) else 0)
    reason = str(parsed.get("reason") or "")
    details = parsed.get("details")
    if not isinstance(details, Mapping):
        details = {}
    cls = _class_for(status, reason)
    return cls(str(parsed.get("message") or ""), status=status, reason=reason, details=details,
               retry_after=_retry_after(headers, details))


def error_from(exc: BaseException) -> APIClientError:
    """Translate a client library's exception into this tree (its `__cause__` is the original)."""
    if isinstance(exc, APIClientError):
        return exc
    error: APIClientError
    if isinstance(exc, ApiException):
        if exc.status:
            error = error_for_status(int(exc.status), exc.body, exc.headers)
        else:  # kubernetes_asyncio raises status 0 for requests it could not even build
            error = APIClientError(str(exc.reason or exc), reason="ClientError")
    elif isinstance(exc, aiohttp.ClientResponseError):
        error = error_for_status(exc.status, {"message": exc.message}, exc.headers)
    elif isinstance(exc, (aiohttp.ClientError, OSError, asyncio.TimeoutError)):
        error = APITransportError(str(exc) or type(exc).__name__, reason=type(exc).__name__)
    else:
        error = APIClientError(str(exc) or type(exc).__name__, reason=type(exc).__name__)
    error.__cause__ = exc
    return error


@contextlib.asynccontextmanager
async def translate() -> AsyncIterator[None]:
    """Re-raise client library errors as `APIClientError`s; usable as `async with` or as a decorator.

        async with translate():
            await core.read_namespaced_config_map(name, ns)   # typed API: raises APINotFoundError
    """
    try:
        yield
    except LIBRARY_ERRORS as exc:
        raise error_from(exc) from exc


def is_resource_version_too_large(exc: APIClientError) -> bool:
    """The server has not reached the resourceVersion asked for (kube's 504 ResourceVersionTooLarge)."""
    causes = exc.details.get("causes") or []
    return any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes)
