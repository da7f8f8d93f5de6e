"""The garbage collector wired up on a real etcd: handlers on the shared informers, and supervised workers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from etcd3aio import Etcd3Client
from structlog.testing import capture_logs

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apimachinery.deleteoptions import Propagation
from kcp_apiserver.controllers.garbagecollector import GarbageCollector
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.catalog import Catalog, WatchCaches
from kcp_apiserver.registry.informers import Informers
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import KeyNotFound, Storage
from kcp_apiserver.storage.keys import object_key

CONFIGMAP = next(r for r in BUILTINS if r.kind == "ConfigMap")
DEADLINE = 10.0


async def _allow(*_: Any) -> None:
    return None


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = DEADLINE) -> None:
    """Poll `check` until it holds; fail loudly with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
async def running(etcd: Etcd3Client) -> AsyncIterator[tuple[GarbageCollector, Registry, Storage]]:
    storage = Storage(etcd)
    registry = Registry(storage, admit=_allow, ensure_cluster=_allow)
    caches = WatchCaches(etcd, storage, capacity=1000)
    informers = Informers(caches)
    gc = GarbageCollector(storage, informers, Catalog((*BUILTINS, CRD)), registry, workers=2)
    await gc.start()
    await eventually(lambda: _true(gc.builtins_synced()), "the built-in resources are listed into the graph")
    yield gc, registry, storage
    await gc.stop()
    await informers.stop()
    await caches.stop()


async def _true(value: bool) -> bool:
    return value


def configmap(name: str, *owners: Obj) -> Obj:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
                                    "uid": o["metadata"]["uid"], "blockOwnerDeletion": True} for o in owners]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


async def gone(storage: Storage, cluster: str, name: str) -> bool:
    try:
        await storage.get(object_key(CONFIGMAP.prefix, cluster, "ns", name))
    except KeyNotFound:
        return True
    return False


async def test_dependents_follow_their_owner_out(running: tuple[GarbageCollector, Registry, Storage]) -> None:
    gc, registry, storage = running
    cluster = f"gc-{uuid.uuid4().hex[:8]}"
    owner = await registry.create(CONFIGMAP, cluster, "ns", configmap("owner"))
    await registry.create(CONFIGMAP, cluster, "ns", configmap("dep", owner))
    await eventually(lambda: _true(gc.graph.node(cluster, owner["metadata"]["uid"]) is not None),
                     "the owner is in the graph")
    await registry.delete(CONFIGMAP, cluster, "ns", "owner", propagation=Propagation("Foreground"))
    await eventually(lambda: gone(storage, cluster, "owner"), "the foreground owner goes once its dependent has")
    assert await gone(storage, cluster, "dep")


async def test_a_handler_failing_on_one_object_is_logged_and_the_collector_goes_on(
        running: tuple[GarbageCollector, Registry, Storage]) -> None:
    gc, registry, storage = running
    cluster = f"gc-{uuid.uuid4().hex[:8]}"
    observe = gc.graph.observe
    failures: list[str] = []

    def fail_once(prefix: str, obj: Obj, deleted: bool) -> Any:
        if not failures and obj["metadata"].get("name") == "boom":
            failures.append(prefix)
            raise RuntimeError("injected")
        return observe(prefix, obj, deleted)

    gc.graph.observe = fail_once  # type: ignore[method-assign]
    with capture_logs() as logs:
        await registry.create(CONFIGMAP, cluster, "ns", configmap("boom"))
        await eventually(lambda: _true(bool(failures)), "the handler hits the injected failure")
        await registry.create(CONFIGMAP, cluster, "ns", configmap("dep", {"metadata": {
            "name": "ghost", "uid": str(uuid.uuid4())}}))
        await eventually(lambda: gone(storage, cluster, "dep"), "the handler feeds the collector again")
    assert any(e["event"] == "event handler failed" and e["log_level"] == "error" for e in logs)
