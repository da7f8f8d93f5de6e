"""WATCH over HTTP: a chunked stream of events, bookmarks, and the end of the stream.

Where the watch starts and what it sees first is the registry's (registry/watch.py); this module
frames events for the wire (JSON or one-row Tables), sends bookmarks, and ends the stream at its
timeout, when the client leaves, or with a 410 ERROR when the cache closes the watcher.
"""

from __future__ import annotations

import asyncio
import random

from aiohttp import web

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.endpoints import listoptions
from kcp_apiserver.endpoints.base import Endpoints, build_filter, int_param
from kcp_apiserver.endpoints.watchstream import ChunkedStream, EventSink, TableEncoder
from kcp_apiserver.endpoints.wire import request_context, wants_table
from kcp_apiserver.registry.conversion import cluster_of, present, presenter, variant
from kcp_apiserver.registry.listing import decoded
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.shared import with_shared
from kcp_apiserver.registry.watch import (
    ADDED,
    TOO_SLOW,
    WatchCache,
    Watcher,
    WatchEvent,
    prepare_watch,
    watchframing,
)

CLIENT_GONE_CHECK_SECONDS = 5.0


async def watch(ep: Endpoints, request: web.Request, res: Resource, info: RequestInfo,
                namespace: str) -> web.StreamResponse:
    query = request.query
    options = listoptions.validate_watch(query)
    matches, pinned = build_filter(res, query)
    matches = ep.shown(res, request_context(request), matches)
    timeout = int_param(query, "timeoutSeconds") or ep.watch.min_request_timeout * (1 + random.random())
    cache = await ep.caches.get(res)
    prepared = await prepare_watch(ep.registry, res, cache, None if info.wildcard else info.cluster, namespace,
                                   name=info.name or pinned, matches=matches,
                                   resource_version=options.resource_version,
                                   send_initial_events=options.send_initial_events)
    response = web.StreamResponse(headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(b"")  # send the headers now: events are written to the transport directly
    encoder = TableEncoder(res, query.get("includeObject", "Metadata")) if wants_table(request) else None
    stream = ChunkedStream(request, too_slow=watchframing.error(st.gone(TOO_SLOW).to_status()))
    show = presenter(ep.catalog, res, info.wildcard)
    end_bookmark = bool(options.send_initial_events) and options.allow_bookmarks
    shared = None if info.wildcard else ep.registry.shared.get(res.prefix)
    only = info.name or pinned

    def emit_initial(objs: list[Obj], revision: int) -> None:
        if shared is not None:  # the shared defaults are part of every cluster's current state
            objs = [decoded(e) for e in with_shared(list(objs), shared, info.cluster, matches)
                    if not only or decoded(e)["metadata"]["name"] == only]
        shown = [show(cluster_of(o), o) for o in objs]
        if shown:
            stream.write_initial(b"".join(encoder.event(ADDED, o) if encoder else watchframing.event(ADDED, o)
                                  for o in shown))
        if end_bookmark:
            stream.write(watchframing.bookmark(res.kind, res.api_version, revision, initial_events_end=True))

    try:
        watcher = prepared.start(emit_initial, _sink(ep, res, info, stream, encoder))
    except st.APIError as exc:
        stream.write(watchframing.error(exc.to_status()))
        return response
    await _stream_until_done(ep, res, cache, watcher, stream, duration=timeout, bookmarks=options.allow_bookmarks)
    return response


def _sink(ep: Endpoints, res: Resource, info: RequestInfo, stream: ChunkedStream,
          encoder: TableEncoder | None) -> EventSink:
    """How one watcher encodes a cache event: the shared bytes, or a converted form encoded once per variant.

    The encoding key says which watchers get the same bytes (Tables are each watcher's own).
    """
    if encoder is not None:
        show = presenter(ep.catalog, res, info.wildcard)
        return EventSink(stream, lambda type_, event: encoder.event(type_, show(event.key.cluster, event.obj)), None)
    if not res.converts:
        return EventSink(stream, lambda type_, event: event.encoded(type_), "stored")
    if info.wildcard and res.is_custom:
        def per_cluster(type_: str, event: WatchEvent) -> bytes:
            own = ep.catalog.in_cluster(res, event.key.cluster)
            return event.encoded_as(type_, variant(own), lambda o: present(own, o))
        return EventSink(stream, per_cluster, ("per-cluster", variant(res)))
    shown = variant(res)
    return EventSink(stream, lambda type_, event: event.encoded_as(type_, shown, lambda o: present(res, o)),
                     ("as", shown))


async def _stream_until_done(ep: Endpoints, res: Resource, cache: WatchCache, watcher: Watcher,
                             stream: ChunkedStream, *, duration: float, bookmarks: bool) -> None:
    """Keep the watch open until its timeout, the client leaving, or the cache closing it (410)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + duration
    interval = ep.watch.bookmark_interval
    last_bookmark, last_bookmark_at = watcher.after_revision, loop.time()
    try:
        while not watcher.done.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = min(remaining, interval if bookmarks else remaining, CLIENT_GONE_CHECK_SECONDS)
            try:
                await asyncio.wait_for(watcher.done.wait(), wait)
            except TimeoutError:
                if stream.gone():
                    break
                if stream.behind():  # no event came to find it: free its buffer now all the same
                    stream.cut()
                    watcher.close(TOO_SLOW)
                    break
                due = loop.time() - last_bookmark_at >= interval
                delivered = cache.delivered_revision  # never ahead of an event still in a batch
                if bookmarks and due and delivered > last_bookmark and not watcher.closed:
                    last_bookmark, last_bookmark_at = delivered, loop.time()
                    if not stream.write(watchframing.bookmark(res.kind, res.api_version, delivered)):
                        watcher.close(TOO_SLOW)
        if watcher.close_reason and not stream.broken:
            stream.write(watchframing.error(st.gone(watcher.close_reason).to_status()))
        watcher.close()
        await stream.flushed(CLIENT_GONE_CHECK_SECONDS)  # what waits for the client goes before the last chunk
    except asyncio.CancelledError:
        pass
    finally:
        watcher.close()
