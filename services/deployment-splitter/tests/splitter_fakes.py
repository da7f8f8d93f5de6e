"""Fakes the splitter's reconciler tests share: SyncTargets as the cluster controller writes them, and a client
that applies the reconcilers' merge patches to the cache, as the informer would show them."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from kcpcommon.keys import CLUSTER_ANNOTATION, ObjectKey
from kcpcommon.store import Indexer

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
CLUSTER = "tenant"


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def sync_target(name: str, ready: str = "True", since: datetime = NOW - timedelta(hours=1),
                heartbeat: datetime = NOW) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {CLUSTER_ANNOTATION: CLUSTER}, "resourceVersion": "1",
                         "creationTimestamp": stamp(NOW - timedelta(hours=2))},
            "spec": {"kubeconfig": "x"},
            "status": {"lastSyncerHeartbeatTime": stamp(heartbeat), "allocatable": {"pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": stamp(since),
                                       "message": f"no syncer heartbeat for {(NOW - heartbeat).seconds}s"}]}}


class Writes:
    """A DynamicResource that records the splitter's patches and, as the informer would, caches their result."""

    def __init__(self, cache: Indexer) -> None:
        self.cache = cache
        self.log: list[tuple[str, dict[str, Any]]] = []  # (what, the patch) by object name and subresource
        self._rv = itertools.count(100)

    def resource(self, *args: Any, **kwargs: Any) -> Writes:
        return self

    def dynamic(self, cluster: str) -> Writes:
        return self

    async def patch(self, name: str, body: dict[str, Any], *, namespace: str | None = None,
                    subresource: str | None = None) -> dict[str, Any]:
        self.log.append((f"{name}/{subresource}" if subresource else name, body))
        obj = copy.deepcopy(self.cache.get(ObjectKey(CLUSTER, namespace or "", name)))
        assert obj is not None
        for field in ("labels", "annotations"):
            merged = {**(obj["metadata"].get(field) or {}), **(body.get("metadata") or {}).get(field, {})}
            obj["metadata"][field] = {k: v for k, v in merged.items() if v is not None}
        if "status" in body:
            obj["status"] = {k: v for k, v in {**(obj.get("status") or {}), **body["status"]}.items()
                             if v is not None}
        obj["metadata"]["resourceVersion"] = str(next(self._rv))
        self.cache.upsert(obj)
        return obj
