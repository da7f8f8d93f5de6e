"""The cache of one resource and the handlers that watch it, whatever feeds them (client-go's
sharedIndexInformer without its reflector).

`SharedInformer` (informer.py) feeds one by list+watch over HTTP; the API server feeds its
in-process ones from its watch cache. Both call `replace` (a fresh list) and `apply` (one watch
event); this keeps the `Indexer` up to date and tells each handler what changed. A relist is
compared with the cache, so an object that vanished while we were not watching is still
reported: as a `DeletedFinalStateUnknown` tombstone carrying the last state we saw. A delete is
never lost.

Each handler has its own queue and task, so a slow handler delays only itself, and sees events
in order. Handlers get frozen objects (see `frozen.py`). A handler that ignores `on_update`'s old
state says so (`needs_old=False`): when no handler needs it, a cache that keeps a stored form of
its objects (the API server's keeps etcd's bytes) does not decode the previous state on every
update for nobody, and those handlers get None as old. An `inline` handler (a plain function
that only looks and enqueues, e.g. the simulator's controllers) is called by the feeder itself
as the cache changes instead: no queue and no task wake-up per event, and the indexes it reads
are exactly as of its event.

A `transform` (client-go's `SetTransform`) trims each object before it is cached, e.g.
`strip_managed_fields`: a cache holds every object for the life of the process, and what no
handler reads need not be kept, frozen, or indexed.

Unlike client-go, a relist does not report objects whose resourceVersion is unchanged as
updates: nothing happened to them, and level-based controllers resync on their own schedule if
they want to.

Apart from the task helpers it needs nothing but the store, so the API server can use it without
loading an HTTP client.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from .frozen import freeze
from .keys import ObjectKey
from .store import Indexer, IndexFunc, KeyFunc
from .tasks import cancel_and_wait, spawn

DELETED = "DELETED"  # the watch event type whose object is the final state

Obj = Mapping[str, Any]
Handler = Callable[..., Awaitable[None] | None]
Transform = Callable[[dict[str, Any]], dict[str, Any]]  # may replace top-level fields, not change nested values

_SYNCED = "synced"  # queued after the first list's adds: the handler has seen the initial state

log = structlog.get_logger("kcpcommon.informer")


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """An object that disappeared while we were not watching; `obj` is its last known state."""

    key: ObjectKey
    obj: Obj


def deleted_object(value: Obj | DeletedFinalStateUnknown) -> Obj:
    """What `on_delete` got, as an object: the event's final state or the tombstone's last known one."""
    return value.obj if isinstance(value, DeletedFinalStateUnknown) else value


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """A transform dropping `metadata.managedFields` (often a third of an object, and only a server reads it)."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return obj


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class HandlerRegistration:
    """One handler's queue and task; `has_synced` once it has seen every object of the first list."""

    def __init__(self, informer: SharedCache, name: str, *, on_add: Handler | None,
                 on_update: Handler | None, on_delete: Handler | None, inline: bool = False,
                 needs_old: bool = True) -> None:
        self.informer = informer
        self.name = name
        self.inline = inline
        self.needs_old = needs_old
        self._handlers: dict[str, Handler | None] = {"add": on_add, "update": on_update, "delete": on_delete}
        self._queue: asyncio.Queue[tuple[str, tuple[Any, ...]]] = asyncio.Queue()
        self._synced = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Until this handler has seen every object of the first list."""
        await self._synced.wait()

    def post(self, kind: str, *args: Any) -> None:
        if self.inline:
            self._call(kind, args)
        else:
            self._queue.put_nowait((kind, args))

    def start(self) -> None:
        if self.inline:
            return
        if self.task is None or self.task.done():
            self.task = spawn(self._run(), name=f"{self.informer.name}:{self.name}")

    def remove(self) -> None:
        """Stop receiving events."""
        self.informer.remove_handler(self)

    async def _run(self) -> None:
        while True:
            kind, args = await self._queue.get()
            result = self._call(kind, args)
            if result is not None:
                try:
                    await result
                except Exception:
                    self._failed(kind)

    def _call(self, kind: str, args: tuple[Any, ...]) -> Awaitable[None] | None:
        """Run the handler of one notification; an awaitable it returns is the caller's to await."""
        if kind == _SYNCED:
            self._synced.set()
            return None
        handler = self._handlers[kind]
        if handler is None:
            return None
        try:
            result = handler(*args)
        except Exception:  # one bad event must not stop the handler
            self._failed(kind)
            return None
        return result if inspect.isawaitable(result) else None

    def _failed(self, kind: str) -> None:
        # `event` is structlog's own key (the message): the notification's kind goes in `notification`
        log.exception("event handler failed", informer=self.informer.name, handler=self.name, notification=kind)


class SharedCache:
    """A cache of one resource and the handlers that watch it; what feeds it calls `replace` and `apply`.

    `load`: how the indexer reads back a stored form the feeder passes to `apply`/`replace` (see `Indexer`).
    """

    def __init__(self, name: str, key_func: KeyFunc, *, indexers: Mapping[str, IndexFunc] | None = None,
                 with_default_indexers: bool = True, transform: Transform | None = None,
                 load: Callable[[Any], Obj] | None = None) -> None:
        self.name = name
        self.transform = transform  # applied to the feeder's fresh (mutable) objects, before caching
        self.indexer = Indexer(key_func, indexers, with_defaults=with_default_indexers, load=load)
        self._registrations: list[HandlerRegistration] = []
        self._synced = asyncio.Event()
        self._handling = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def has_synced(self) -> bool:
        """The first list is in the cache."""
        return self._synced.is_set()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - False on timeout
        """Wait for the first list; False if `timeout` seconds passed first."""
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def add_indexers(self, indexers: Mapping[str, IndexFunc], *, skip_existing: bool = False) -> None:
        """Add cache indexes; `skip_existing` lets controllers sharing this informer each ask for theirs."""
        self.indexer.add_indexers(indexers, skip_existing=skip_existing)

    def add_handler(self, *, on_add: Handler | None = None, on_update: Handler | None = None,
                    on_delete: Handler | None = None, name: str = "handler",
                    inline: bool = False, needs_old: bool = True) -> HandlerRegistration:
        """Register callbacks (plain functions or coroutine functions; only plain ones when `inline`).

        `on_add(obj)`, `on_update(old, new)`, `on_delete(obj or DeletedFinalStateUnknown)`.
        A handler added after the first list first gets an `on_add` for every cached object.
        `needs_old=False`: the handler ignores `on_update`'s old, which may then be None.
        """
        registration = HandlerRegistration(self, name, on_add=on_add, on_update=on_update, on_delete=on_delete,
                                           inline=inline, needs_old=needs_old)
        if inline and any(inspect.iscoroutinefunction(h) for h in (on_add, on_update, on_delete)):
            raise TypeError(f"handler {name}: an inline handler is called by the feeder, so it cannot be async")
        self._registrations.append(registration)
        if self.has_synced:
            for obj in self.indexer.list():
                registration.post("add", obj)
            registration.post(_SYNCED)
        if self._handling:
            registration.start()
        return registration

    def remove_handler(self, registration: HandlerRegistration) -> None:
        if registration in self._registrations:
            self._registrations.remove(registration)
            if registration.task is not None:
                registration.task.cancel()

    def start_handlers(self) -> None:
        """Start every handler's task (and those added later): events flow from here on."""
        self._handling = True
        for registration in self._registrations:
            registration.start()

    async def stop_handlers(self) -> None:
        self._handling = False
        await cancel_and_wait(*(r.task for r in self._registrations if r.task is not None))

    # --- what the feeder calls ---

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        """A fresh list: add, update, and report as tombstones whatever vanished since."""
        self.replace_entries(((None, item, None) for item in items), resource_version)

    def replace_entries(self, entries: Iterable[tuple[ObjectKey | None, dict[str, Any], Any]],
                        resource_version: str) -> None:
        """`replace` for a feeder that knows each object's key and keeps its own stored form of it
        (`(key or None, object, stored form or None)`, see `Indexer.upsert`); read one by one, so
        a generator that decodes as it goes never holds the whole list decoded."""
        listed: set[ObjectKey] = set()
        for key, item, stored in entries:
            old, new = self.indexer.upsert(item if self.transform is None else self.transform(item),
                                           key=key, stored=stored)
            listed.add(self.indexer.key_func(new) if key is None else key)
            if old is None:
                self._distribute("add", new)
            elif _resource_version(old) != _resource_version(new):
                self._distribute("update", old, new)
        for key in self.indexer.keys():
            if key not in listed:
                last = self.indexer.remove(key)
                assert last is not None
                self._distribute("delete", DeletedFinalStateUnknown(key, last))
        if not self._synced.is_set():
            self._synced.set()
            self._distribute(_SYNCED)
        log.debug("cache replaced", informer=self.name, objects=len(self.indexer), resource_version=resource_version)

    def apply(self, event_type: str, obj: Mapping[str, Any], *, key: ObjectKey | None = None,
              stored: Any = None) -> None:
        """One watch event into the cache, then to the handlers."""
        if self.transform is not None:
            obj = self.transform(dict(obj))
        if event_type == DELETED:
            final: Obj = freeze(obj)  # the event carries the object's final state
            self.indexer.discard(self.indexer.key_func(final) if key is None else key)
            self._distribute("delete", final)
            return
        if key is None:
            key = self.indexer.key_func(obj)
        existed = key in self.indexer
        read_old = any(registration.needs_old for registration in self._registrations)
        old, new = self.indexer.upsert(obj, key=key, stored=stored, read_old=read_old)
        if existed:
            self._distribute("update", old, new)
        else:
            self._distribute("add", new)

    def _distribute(self, kind: str, *args: Any) -> None:
        for registration in self._registrations:
            registration.post(kind, *args)
