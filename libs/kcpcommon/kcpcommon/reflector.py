"""List, then watch, forever (client-go's Reflector).

The rules, as client-go settled them after years of production:
- list (paginated, `limit=500` + `continue`), then watch from the list's
  resourceVersion; every event and every bookmark advances that version, so a
  broken watch resumes exactly where it stopped, without a relist;
- ask for bookmarks, and a random watch timeout (5 to 10 min) so a fleet of
  clients does not reconnect in lockstep;
- `410 Gone/Expired` (as an HTTP answer or as a watch ERROR event) means the
  server no longer has the history we need: relist at once; the sink works out
  what changed, deletions included;
- a 504 naming `ResourceVersionTooLarge` (the server is behind this client,
  e.g. etcd restored from a backup) relists too, after the backoff;
- any other failure: wait, with exponential backoff and jitter (0.8 s → 30 s),
  at least as long as a 429's Retry-After asks, then try again;
- a list answered `404` means the type is not served (yet: kcp serves a type
  once a SyncTarget imports it): `served` turns False, and the retries follow
  the type until it appears, so a daemon need not wait for it to be ready; that
  is logged once (info), the retries only at debug level, as it is no failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from .backoff import Backoff
from .dynamic import DynamicResource
from .errors import APIClientError, APIGoneError, APINotFoundError, is_resource_version_too_large

Obj = dict[str, Any]

ADDED, MODIFIED, DELETED, BOOKMARK = "ADDED", "MODIFIED", "DELETED", "BOOKMARK"

log = structlog.get_logger("kcpcommon.reflector")


class ReflectorSink(Protocol):
    """Where a reflector puts what it learns (the informer)."""

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """The complete current state, from a (re)list."""

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """One watch event: ADDED, MODIFIED or DELETED."""


@dataclass(frozen=True)
class ReflectorOptions:
    """How a reflector lists, watches and backs off (the defaults are client-go's)."""

    page_size: int = 500  # objects per list page
    min_watch_timeout: float = 300.0  # each watch asks for a timeout in [min, 2*min) seconds
    backoff_initial: float = 0.8  # first retry delay after a failure, seconds
    backoff_cap: float = 30.0  # longest retry delay, seconds
    backoff_reset_after: float = 120.0  # failures further apart than this start the backoff over
    short_watch: float = 1.0  # a watch that ends this fast with no events counts as a failure


class Reflector:
    """Keeps a sink in step with one resource (in one logical cluster, or `*`)."""

    def __init__(self, resource: DynamicResource, sink: ReflectorSink, *, name: str,
                 namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, options: ReflectorOptions | None = None,
                 rng: random.Random | None = None) -> None:
        self.resource = resource
        self.sink = sink
        self.name = name
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.options = options or ReflectorOptions()
        self.last_sync_resource_version = ""
        self.lists = 0  # how many (re)lists ran: observable in tests and metrics
        self.served = True  # False while the last list was answered 404: the type is not served
        self._rng = rng or random.Random()
        self._log = log.bind(reflector=name)

    async def run(self) -> None:
        """List and watch until cancelled; never returns otherwise."""
        opts = self.options
        backoff = Backoff(initial=opts.backoff_initial, cap=opts.backoff_cap, reset_after=opts.backoff_reset_after,
                          rng=self._rng)
        must_list, gone_in_a_row = True, 0
        while True:
            delay = 0.0
            try:
                if must_list:
                    await self._list()
                    must_list = False
                events = await self._watch()
                if events:
                    gone_in_a_row = 0
                elif events is None:  # ended at once, with nothing: don't hammer the server
                    delay = backoff.next()
            except APIGoneError as exc:
                gone_in_a_row += 1
                must_list = True
                delay = 0.0 if gone_in_a_row == 1 else backoff.next()
                self._log.info("watch history is gone; relisting", reason=exc.reason, message=exc.message,
                               resource_version=self.last_sync_resource_version)
            except APIClientError as exc:
                delay = max(backoff.next(), exc.retry_after or 0.0)
                if must_list and isinstance(exc, APINotFoundError):
                    # not served (yet) is the normal state of an optional type: said once, not every retry
                    level = self._log.info if self.served else self._log.debug
                    self.served = False
                    level("type not served; following it until it is", retry_in=round(delay, 3))
                else:
                    if is_resource_version_too_large(exc):  # the server is behind us (etcd restored?): start over
                        must_list = True
                    self._log.warning("list/watch failed; retrying", status=exc.status, reason=exc.reason,
                                      message=exc.message, retry_in=round(delay, 3))
            except Exception:  # the sink failed: its state can't be trusted, rebuild it
                must_list = True
                delay = backoff.next()
                self._log.exception("applying list/watch results failed; relisting", retry_in=round(delay, 3))
            if delay:
                await asyncio.sleep(delay)

    async def _list(self) -> None:
        try:
            items, resource_version = await self._list_pages(self.options.page_size)
        except APIGoneError:  # the continue token expired mid-way: one unpaginated, consistent list
            self._log.info("list continue token expired; listing in one request")
            items, resource_version = await self._list_pages(None)
        self.sink.replace(items, resource_version)
        self.served = True
        self.last_sync_resource_version = resource_version
        self.lists += 1
        self._log.debug("listed", objects=len(items), resource_version=resource_version)

    async def _list_pages(self, limit: int | None) -> tuple[list[Obj], str]:
        items: list[Obj] = []
        token: str | None = None
        while True:
            page = await self.resource.list(namespace=self.namespace, label_selector=self.label_selector,
                                            field_selector=self.field_selector, limit=limit, continue_token=token)
            list_kind = str(page.get("kind") or "")
            item_kind = list_kind[:-4] if list_kind.endswith("List") else ""
            for item in page.get("items") or []:
                # list items may omit their type; handlers want complete objects
                item.setdefault("apiVersion", page.get("apiVersion") or self.resource.api_version)
                if item_kind:
                    item.setdefault("kind", item_kind)
                items.append(item)
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or None
            if token is None:
                return items, str(metadata.get("resourceVersion") or "")

    async def _watch(self) -> int | None:
        """One watch from the last synced version; the number of events seen, None if it was uselessly short."""
        timeout = max(1, int(self.options.min_watch_timeout * (1.0 + self._rng.random())))
        loop = asyncio.get_running_loop()
        started, seen = loop.time(), 0
        stream = self.resource.watch_stream(
            namespace=self.namespace, resource_version=self.last_sync_resource_version or None,
            timeout_seconds=timeout, allow_bookmarks=True, label_selector=self.label_selector,
            field_selector=self.field_selector)
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                event_type = event.get("type")
                obj = event.get("object") or {}
                if event_type in (ADDED, MODIFIED, DELETED):
                    self.sink.apply(event_type, obj)
                elif event_type != BOOKMARK:
                    self._log.warning("ignoring unknown watch event", type=event_type)
                    continue
                seen += 1
                resource_version = (obj.get("metadata") or {}).get("resourceVersion")
                if resource_version:
                    self.last_sync_resource_version = str(resource_version)
        if seen == 0 and loop.time() - started < self.options.short_watch:
            return None
        return seen
