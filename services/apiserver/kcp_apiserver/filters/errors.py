"""Every failure leaves the server as a kube `Status`, never as a traceback."""

from __future__ import annotations

import asyncio

import structlog
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.endpoints.wire import json_response
from kcp_apiserver.filters import Handler

log = structlog.get_logger("apiserver")


@web.middleware
async def errors_to_status(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except st.APIError as exc:
        return json_response(exc.to_status(), exc.code, exc.headers or None)
    except web.HTTPException:
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception as exc:
        log.exception("unhandled error", path=request.path)
        error = st.internal(type(exc).__name__)
        return json_response(error.to_status(), 500)
