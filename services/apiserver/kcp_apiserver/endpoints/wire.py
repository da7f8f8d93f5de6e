"""Bodies in and out: JSON/YAML decoding, JSON responses, Accept negotiation."""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext

MAX_BODY = 3 * 1024 * 1024
TABLE_MEDIA = "as=table"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json",
                        headers=headers)


def raw_json_response(body: bytes, status: int = 200) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json")


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "").lower().replace(" ", "")
    return TABLE_MEDIA in accept and "g=meta.k8s.io" in accept


def wants_aggregated_discovery(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "").replace(" ", "")
    return "as=APIGroupDiscoveryList" in accept and "g=apidiscovery.k8s.io" in accept


async def read_body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise st.too_large()
    body = bytearray()
    async for chunk in request.content.iter_chunked(65536):
        body.extend(chunk)
        if len(body) > MAX_BODY:
            raise st.too_large()
    return bytes(body)


def decode_object(body: bytes, content_type: str) -> Any:
    """Decode a JSON or YAML request body."""
    if not body.strip():
        raise st.bad_request("the body of the request was empty")
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == PROTOBUF:
        from kcp_apiserver.apimachinery import kubeproto

        return kubeproto.decode(body)
    if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise st.bad_request(f"error converting YAML to JSON: {exc}") from exc
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc


def duplicate_fields(body: bytes, parsed: Any = None) -> list[str]:
    """Names of fields repeated in one JSON object (orjson keeps the last silently).

    Fast path: if re-encoding the parsed object gives the body back byte for
    byte, no field was dropped, so there were no duplicates.
    """
    import json

    if parsed is not None and orjson.dumps(parsed) == body.strip():
        return []

    duplicates: list[str] = []

    def hook(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key, value in pairs:
            if key in seen:
                duplicates.append(str(key))
            seen[key] = value
        return seen

    try:
        json.loads(body, object_pairs_hook=hook)
    except ValueError:
        return []
    return duplicates


CONTEXT: web.RequestKey[RequestContext] = web.RequestKey("kcp_request_context", RequestContext)


def request_context(request: web.Request) -> RequestContext:
    """The context the filters built for this request."""
    return request[CONTEXT]
