"""The control plane's event recorder (client-go's record.EventRecorder, simplified).

Events are written in the background by a few workers, so a controller never waits for them;
when the backlog is full, new events are dropped, as client-go's broadcaster drops them. A repeated
event (same object, reason and message) is counted into the first one instead of creating a new
object, and written at most every `AGGREGATE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict
from typing import Any

import structlog

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.store import Registry
from kcp_sim_cluster.controlplane.informer import cluster_of
from kcp_sim_cluster.controlplane.objects import Obj
from kcpcommon.kubetime import format_time as rfc3339
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("sim.events")

BACKLOG = 20_000
WORKERS = 8
AGGREGATE_SECONDS = 10.0
REMEMBERED = 10_000  # repeated-event keys kept (least recently used go first)

NORMAL, WARNING = "Normal", "Warning"


class EventRecorder:
    def __init__(self, registry: Registry, res: Resource) -> None:
        self.registry = registry
        self.res = res
        self._queue: asyncio.Queue[tuple[str, dict[str, Any], bool]] = asyncio.Queue(BACKLOG)
        self._repeats: OrderedDict[tuple[str, str, str, str], dict[str, Any]] = OrderedDict()
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0

    def start(self) -> None:
        self._tasks = [spawn(self._work(), name=f"sim:events:{i}") for i in range(WORKERS)]

    async def stop(self) -> None:
        await cancel_and_wait(*self._tasks)

    def record(self, obj: Obj, type_: str, reason: str, message: str, *, component: str, host: str = "",
               aggregate: bool = False) -> None:
        """Queue an event about `obj`; returns at once."""
        meta = obj["metadata"]
        cluster = cluster_of(obj)
        stamp = rfc3339()
        if aggregate:
            key = (cluster, meta.get("uid", ""), reason, message)
            seen = self._repeats.get(key)
            if seen is not None:
                self._repeats.move_to_end(key)
                seen["count"] += 1
                seen["lastTimestamp"] = stamp
                if time.monotonic() - seen["_written"] < AGGREGATE_SECONDS:
                    return
                seen["_written"] = time.monotonic()
                self._put(cluster, seen, True)
                return
        namespace = meta.get("namespace") or "default"
        source: dict[str, str] = {"component": component}
        if host:
            source["host"] = host
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns() + int.from_bytes(os.urandom(2)):x}",
                         "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
                               "name": meta["name"], "uid": meta.get("uid", ""),
                               "resourceVersion": meta.get("resourceVersion", ""),
                               **({"namespace": meta["namespace"]} if meta.get("namespace") else {})},
            "reason": reason, "message": message, "source": source, "type": type_, "count": 1,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "reportingComponent": component,
            "reportingInstance": host or component,
        }
        if aggregate:
            self._repeats[key] = {**event, "_written": time.monotonic()}
            while len(self._repeats) > REMEMBERED:
                self._repeats.popitem(last=False)
        self._put(cluster, event, False)

    def forget(self, cluster: str, uid: str) -> None:
        """The object is gone: its repeated events need no counting any more."""
        for key in [k for k in self._repeats if k[0] == cluster and k[1] == uid]:
            del self._repeats[key]

    def _put(self, cluster: str, event: dict[str, Any], update: bool) -> None:
        try:
            self._queue.put_nowait((cluster, event, update))
        except asyncio.QueueFull:
            self.dropped += 1

    async def _work(self) -> None:
        while True:
            cluster, event, update = await self._queue.get()
            body = {k: v for k, v in event.items() if not k.startswith("_")}
            meta = body["metadata"]
            try:
                if update:
                    def bump(current: dict[str, Any], body: dict[str, Any] = body) -> dict[str, Any]:
                        current["count"] = body["count"]
                        current["lastTimestamp"] = body["lastTimestamp"]
                        return current

                    await self.registry.patch(self.res, cluster, meta["namespace"], meta["name"], bump)
                else:
                    await self.registry.create(self.res, cluster, meta["namespace"], body)
            except st.APIError as exc:
                if exc.code not in (403, 404, 409):  # a namespace going away takes its events with it
                    log.warning("event not recorded", reason=body["reason"], code=exc.code)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("event not recorded", reason=body["reason"])
