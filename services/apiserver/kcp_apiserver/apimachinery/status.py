"""Kubernetes `Status` errors: every failure leaves the server as one of these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Cause:
    """One field-level reason, as `details.causes[]` in a kube Status."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class APIError(Exception):
    """An error the API answers with: HTTP code, kube reason and message."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:  # StatusReasonUnknown is omitted, as kube encodes it
            del status["reason"]
        if self.details:
            status["details"] = self.details
        return status


def _details(kind: str, name: str, group: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": kind}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> APIError:
    return APIError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                    _details(resource, name, group))


def already_exists(resource: str, name: str, group: str = "") -> APIError:
    return APIError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                    _details(resource, name, group))


def conflict(resource: str, name: str, group: str = "", why: str = "") -> APIError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return APIError(409, "Conflict",
                    f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
                    _details(resource, name, group))


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> APIError:
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    details = _details(kind, name, group)
    details["causes"] = [c.to_dict() for c in causes]
    if len(causes) > 1:
        summary = f"[{summary}]"
    return APIError(422, "Invalid", f'{kind}.{group or ""}'.rstrip(".") + f' "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> APIError:
    return APIError(405, "MethodNotAllowed", message)


def gone(message: str) -> APIError:
    return APIError(410, "Expired", message)


def too_large(message: str = "Request entity too large: limit is 3145728") -> APIError:
    return APIError(413, "RequestEntityTooLarge", message)


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type})")


def resource_version_too_large(wanted: int, current: int) -> APIError:
    """kube's answer when a read asks for a revision the server has not reached (after waiting for it)."""
    return APIError(504, "Timeout", f"Too large resource version: {wanted}, current: {current}",
                     details={"causes": [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}], "retryAfterSeconds": 1},
                     headers={"Retry-After": "1"})


def unavailable(message: str = "etcd is unavailable; please try again") -> APIError:
    return APIError(503, "ServiceUnavailable", message, headers={"Retry-After": "1"})


def forbidden(message: str) -> APIError:
    return APIError(403, "Forbidden", message)


def internal(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}")


def success_status(details: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        status["details"] = details
    return status
