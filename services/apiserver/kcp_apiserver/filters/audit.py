"""Audit: one `audit.k8s.io/v1` Event per request, at kube's Metadata level (who, what, where, the
answer and the authorization decision; never a body, never a credential), as a JSON line in
--audit-log-path.

Events are queued as the request ends and written in batches by a background task: the request
pays for building a small dict, not for encoding it or for the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from typing import Any

import orjson
import structlog
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext
from kcp_apiserver.endpoints.wire import CONTEXT
from kcp_apiserver.filters import Handler
from kcpcommon.keys import CLUSTER_ANNOTATION  # the logical cluster the request addressed

log = structlog.get_logger("audit")

AUDIT_ID = "audit_id"  # the request's key for its audit ID, which kube returns in the Audit-Id header
FLUSH_SECONDS = 0.2
MAX_QUEUED = 100_000  # beyond this the disk cannot keep up: drop and count, never block requests


def micro_time(seconds: float) -> str:
    """kube's MicroTime: RFC 3339 in UTC with microseconds."""
    whole = int(seconds)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((seconds - whole) * 1e6):06d}Z"


def object_ref(ctx: RequestContext) -> dict[str, str] | None:
    info = ctx.info
    if not info.is_resource or not info.resource:
        return None
    ref = {"resource": info.resource, "namespace": info.namespace, "name": info.name, "apiGroup": info.group,
           "apiVersion": info.version, "subresource": info.subresource}
    return {key: value for key, value in ref.items() if value}


def response_status(code: int, error: st.APIError | None) -> dict[str, Any]:
    """metav1.Status as kube's audit records it: the code, and for a failure its status, reason, message."""
    if error is None:
        return {"metadata": {}, "code": code}
    status = error.to_status()
    out: dict[str, Any] = {"metadata": {}, "status": status["status"], "message": status["message"]}
    if "reason" in status:
        out["reason"] = status["reason"]
    out["code"] = code
    return out


def event(request: web.Request, ctx: RequestContext | None, received: float, code: int,
          error: st.APIError | None) -> dict[str, Any]:
    """The ResponseComplete Event of one request."""
    ev: dict[str, Any] = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
                          "auditID": request.get(AUDIT_ID) or audit_id(request),
                          "stage": "ResponseComplete", "requestURI": request.raw_path,
                          "verb": (ctx.info.verb if ctx is not None and ctx.info.verb else request.method.lower()),
                          "user": (ctx.impersonator or ctx.user).as_dict() if ctx is not None and code != 401 else {},
                          "sourceIPs": source_ips(request)}
    if ctx is not None and ctx.impersonator is not None:  # kube: `user` authenticated, acting as `impersonatedUser`
        ev["impersonatedUser"] = ctx.user.as_dict()
    user_agent = request.headers.get("User-Agent")
    if user_agent:
        ev["userAgent"] = user_agent
    ref = object_ref(ctx) if ctx is not None else None
    if ref:
        ev["objectRef"] = ref
    ev["responseStatus"] = response_status(code, error)
    ev["requestReceivedTimestamp"] = micro_time(received)
    ev["stageTimestamp"] = micro_time(time.time())
    annotations = dict(ctx.annotations) if ctx is not None else {}
    if ctx is not None:
        annotations[CLUSTER_ANNOTATION] = ctx.info.cluster
    if annotations:
        ev["annotations"] = dict(sorted(annotations.items()))  # Go writes a map's keys in order
    return ev


def audit_id(request: web.Request) -> str:
    """The caller's Audit-ID if it sent one (kube keeps it, to correlate), else a new UUID."""
    return request.headers.get("Audit-ID") or str(uuid.uuid4())


async def add_audit_id_header(request: web.Request, response: web.StreamResponse) -> None:
    """An `on_response_prepare` hook: every answer names its audit event, as kube's does."""
    if AUDIT_ID in request:
        response.headers["Audit-Id"] = request[AUDIT_ID]


def source_ips(request: web.Request) -> list[str]:
    """kube's: the X-Forwarded-For chain, then X-Real-Ip, then the peer, without repeats."""
    ips: list[str] = []
    for value in request.headers.get("X-Forwarded-For", "").split(","):
        if value.strip():
            ips.append(value.strip())
    real = request.headers.get("X-Real-Ip", "").strip()
    if real:
        ips.append(real)
    if request.remote and request.remote not in ips:
        ips.append(request.remote)
    return list(dict.fromkeys(ips))


class AuditLog:
    """A JSON-lines file (or `-`, standard output) written in batches off the request path.

    The file is opened in append mode and each batch is one write, so several serving processes can
    share it without tearing each other's lines.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._queue: list[dict[str, Any]] = []
        self._fd = -1
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.dropped = 0

    async def start(self) -> None:
        if self.path == "-":
            self._fd = os.dup(1)
        else:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._task = asyncio.create_task(self._run(), name="audit-log")

    def record(self, ev: dict[str, Any]) -> None:
        if len(self._queue) >= MAX_QUEUED:
            self.dropped += 1
            return
        self._queue.append(ev)

    async def _run(self) -> None:
        """Flush every FLUSH_SECONDS until stopped; the last flush happens after the stop request."""
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), FLUSH_SECONDS)
            await self.flush()

    async def flush(self) -> None:
        if not self._queue or self._fd < 0:
            return
        batch, self._queue = self._queue, []
        data = b"".join(orjson.dumps(ev) + b"\n" for ev in batch)
        try:
            await asyncio.to_thread(_write_all, self._fd, data)
        except OSError as exc:
            log.error("audit log not written", path=self.path, events=len(batch), error=str(exc))

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
        await self.flush()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def audit(sink: AuditLog) -> web.middleware:  # type: ignore[valid-type]
    """Records every request's Event once it has been answered (a watch when it ends)."""

    @web.middleware
    async def audited(request: web.Request, handler: Handler) -> web.StreamResponse:
        received = time.time()
        request[AUDIT_ID] = audit_id(request)
        code, error = 500, None
        try:
            response = await handler(request)
            code = response.status
            return response
        except st.APIError as exc:
            code, error = exc.code, exc
            raise
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            sink.record(event(request, request.get(CONTEXT), received, code, error))

    return audited
