"""One etcd Watch RPC over a key range, without hidden reconnects.

etcd3aio's `watch()` reconnects by itself and resumes from the last response's header revision.
That revision is etcd's newest, not the last event sent: a response to a watch that is catching
up, or the "created" response of a new watch, names a revision whose events are still on the way,
so resuming there silently skips them. The watch cache must resume from the last revision it
dispatched, so it drives the stream itself: any error or end of stream reaches the caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from etcd3aio import Etcd3Client
from etcd3aio._protobuf import WatchCreateRequest, WatchRequest

from kcp_apiserver.storage.etcd import Unavailable


def is_progress_notify(resp: Any) -> bool:
    """A genuine progress notification: etcd has sent every event up to header.revision.

    Neither the "created" response of a new watch (its header is etcd's head while older events
    are still to come), nor a cancellation or compaction notice, says that.
    """
    return (not resp.events and not resp.created and not resp.canceled and not resp.compact_revision
            and resp.header.revision > 0)


async def watch_range(client: Etcd3Client, key: bytes, range_end: bytes, *,
                      start_revision: int) -> AsyncIterator[Any]:
    """Yield WatchResponses of one Watch RPC from start_revision, with previous values and progress notifies."""
    service = client.watch
    if service is None:
        raise Unavailable("etcd client is not connected")
    create = WatchCreateRequest(key=key, range_end=range_end, start_revision=start_revision, prev_kv=True,
                                progress_notify=True)

    async def requests() -> AsyncIterator[WatchRequest]:
        yield WatchRequest(create_request=create)
        await asyncio.Future()  # the request side stays open as long as the watch

    # etcd3aio has no public way to open a Watch stream without its reconnecting wrapper
    call = service._stub.Watch(requests(), metadata=service._metadata or None)
    try:
        async for resp in call:
            yield resp
    finally:
        call.cancel()
