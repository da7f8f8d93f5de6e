"""List items kept as etcd's bytes until they are written out.

A list of tens of thousands of objects decoded into dicts, then encoded again, cost hundreds of MB
and most of the time of the request. Items that need no filtering nor conversion stay etcd's bytes
(the watch cache's own), and leave as those bytes with the resourceVersion spliced into their
metadata: nothing is decoded, and the response is written item after item.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from kcp_apiserver.storage.cachestate import Cached

Obj = dict[str, Any]
Entry = Obj | Cached  # a decoded object, or etcd's bytes and mod_revision

_METADATA = b'"metadata":{'
_RV = b'"resourceVersion":'


def decoded(entry: Entry) -> Obj:
    return entry.decode() if isinstance(entry, Cached) else entry


def item_json(entry: Entry) -> bytes:
    """The item's JSON as a decoded-then-encoded object would be, with resourceVersion set."""
    if not isinstance(entry, Cached):
        return orjson.dumps(entry)
    raw = entry.raw
    at = raw.find(_METADATA)
    # the splice is safe only into the top-level metadata: no object nor array may open before it (a
    # string holding braces makes this fall back too, harmlessly); an object that names a resourceVersion
    # anywhere (an Event's involvedObject) is decoded, so no key is ever written twice
    if at < 1 or b"{" in raw[1:at] or b"[" in raw[1:at] or _RV in raw:
        return orjson.dumps(entry.decode())
    cut = at + len(_METADATA)
    rv = b'"resourceVersion":"%d"' % entry.revision
    if raw[cut:cut + 1] != b"}":
        rv += b","
    return raw[:cut] + rv + raw[cut:]


def items_json(entries: list[Entry]) -> Iterator[bytes]:
    return (item_json(entry) for entry in entries)
