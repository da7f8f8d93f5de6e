"""A list response written item by item, as kube-apiserver (1.33+) streams JSON lists.

Building the whole body first held every object twice (as dicts and as one JSON string): a list of
50,000 objects grew the process by hundreds of MB, and a few at once by GBs. Here the list's head
goes out first, then the items in chunks of about CHUNK bytes, each written once the client has
taken the previous ones (aiohttp's write waits for the transport to drain).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from aiohttp import web

from kcp_apiserver.endpoints.wire import indented, wants_pretty

CHUNK = 256 * 1024


async def stream_list(request: web.Request, head: dict[str, Any], items: Iterable[bytes],
                      headers: dict[str, str] | None = None) -> web.StreamResponse:
    """`head` (kind, apiVersion, metadata) and then `items` (each one object's JSON) as one JSON list.

    A pretty request (wants_pretty) gets the list built whole and indented: people ask for those, not
    controllers listing 50,000 objects."""
    if wants_pretty(request):
        body = orjson.dumps({**head, "items": [orjson.Fragment(item) for item in items]})
        return web.Response(body=indented(body), content_type="application/json", headers=headers)
    response = web.StreamResponse(headers=headers)
    response.content_type = "application/json"
    await response.prepare(request)
    opening = orjson.dumps({**head, "items": []})
    buffer = bytearray(opening[:-2])  # up to the items' "["
    first = True
    for item in items:
        if not first:
            buffer += b","
        buffer += item
        first = False
        if len(buffer) >= CHUNK:
            await response.write(bytes(buffer))
            buffer.clear()
    buffer += b"]}"
    await response.write(bytes(buffer))
    await response.write_eof()
    return response
