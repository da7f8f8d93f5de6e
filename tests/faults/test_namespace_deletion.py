"""Deleting a namespace of thousands of objects (issue 29, item 6) while another tenant reads: every one of
that tenant's GETs is answered, every object goes, each watcher sees a DELETED for each, objects with a
finalizer hold the namespace until it is removed, and then the namespace goes. (The latency and memory
figures are bench/bench_nsdelete.py's.)"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from api import Api, configmap
from kcp_process import KcpServer, free_port

OBJECTS = 2000
HELD = ("cm-00000", "cm-01000", "cm-01999")  # a first, a middle and a last one keep a finalizer
FINALIZER = "faults.kcp.io/hold"
BULK = "/clusters/faults-ns-bulk"
TENANT = "/clusters/faults-ns-tenant"
NAMESPACE = "doomed"
ANSWERED_WITHIN = 10.0  # seconds: a generous bound that only a stalled server misses
PATIENCE = 180.0  # seconds the whole deletion may take on a loaded machine


class KeptAlive(KcpServer):
    """One TLS context for every request, so the client keeps its connections (aiohttp pools connections per
    context: a context per request is a TLS handshake per request, which here would cost more than the work)."""

    @functools.cached_property
    def _context(self) -> ssl.SSLContext:
        return super().ssl_context()

    def ssl_context(self) -> ssl.SSLContext:
        return self._context


@pytest.fixture
def kcp(tmp_path: Path) -> Iterator[KcpServer]:
    server = KeptAlive(tmp_path / "kcp", free_port(), ["--compaction-interval", "0"])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


async def fill(api: Api, collection: str) -> None:
    """OBJECTS ConfigMaps, 32 at a time; HELD ones carry a finalizer."""
    names = iter(range(OBJECTS))

    async def creator() -> None:
        for i in names:
            body = configmap(f"cm-{i:05d}", labels={"doomed": "yes"})
            if body["metadata"]["name"] in HELD:
                body["metadata"]["finalizers"] = [FINALIZER]
            reply = await api.post(collection, body)
            assert reply.status == 201, reply.body

    await asyncio.gather(*(creator() for _ in range(32)))


class DeletedSeen:
    """A watch that records the name of every DELETED ConfigMap in the doomed namespace."""

    def __init__(self, api: Api, path: str, params: dict[str, str]) -> None:
        self.api, self.path, self.params = api, path, params
        self.names: set[str] = set()
        self.opened = asyncio.Event()
        self.progress = asyncio.Event()  # set whenever a DELETED arrives

    async def run(self) -> None:
        async for event in self.api.watch(self.path, self.params, opened=self.opened):
            meta = event["object"]["metadata"]
            if event["type"] == "DELETED" and meta.get("namespace") == NAMESPACE:
                self.names.add(meta["name"])
                self.progress.set()

    async def until(self, count: int) -> None:
        while len(self.names) < count:
            self.progress.clear()
            await self.progress.wait()


class Reader:
    """The other tenant: one GET after another, every answer's status (or the failure) kept."""

    def __init__(self, api: Api, path: str) -> None:
        self.api, self.path = api, path
        self.answers: list[int | str] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            try:
                reply = await asyncio.wait_for(self.api.get(self.path), ANSWERED_WITHIN)
                self.answers.append(reply.status)
            except (TimeoutError, aiohttp.ClientError) as exc:
                self.answers.append(type(exc).__name__)


async def test_a_namespace_of_thousands_goes_while_another_tenant_is_served_and_watchers_see_each_delete(
        kcp: KcpServer) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        api = Api(kcp, session)
        ns = await api.post(f"{BULK}/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": NAMESPACE}})
        assert ns.status == 201, ns.body
        collection = f"{BULK}/api/v1/namespaces/{NAMESPACE}/configmaps"
        await fill(api, collection)
        assert (await api.post(f"{TENANT}/api/v1/namespaces/default/configmaps", configmap("read-me"))).status == 201
        listed = await api.get(collection)
        assert len(listed.body["items"]) == OBJECTS
        rv = listed.body["metadata"]["resourceVersion"]
        watchers = [DeletedSeen(api, collection, {"resourceVersion": rv}),  # the namespace
                    DeletedSeen(api, f"{BULK}/api/v1/configmaps", {"resourceVersion": rv}),  # the logical cluster
                    DeletedSeen(api, f"{BULK}/api/v1/configmaps", {"resourceVersion": rv,  # a selector's
                                                                   "labelSelector": "doomed=yes"})]
        namespace_deleted = asyncio.Event()

        async def watch_namespace() -> None:
            async for event in api.watch(f"{BULK}/api/v1/namespaces", {"resourceVersion": ns.body["metadata"][
                    "resourceVersion"], "fieldSelector": f"metadata.name={NAMESPACE}"}):
                if event["type"] == "DELETED":
                    namespace_deleted.set()
                    return

        reader = Reader(api, f"{TENANT}/api/v1/namespaces/default/configmaps/read-me")
        tasks = [asyncio.create_task(w.run()) for w in watchers]
        tasks += [asyncio.create_task(watch_namespace()), asyncio.create_task(reader.run())]
        try:
            await asyncio.wait_for(asyncio.gather(*(w.opened.wait() for w in watchers)), 30)
            deleting = await api.delete(f"{BULK}/api/v1/namespaces/{NAMESPACE}")
            assert deleting.status == 200 and deleting.body["status"]["phase"] == "Terminating", deleting.body

            # everything but the held objects goes; they and the namespace stay, marked deleting
            await asyncio.wait_for(asyncio.gather(*(w.until(OBJECTS - len(HELD)) for w in watchers)), PATIENCE)
            for name in HELD:
                held = await api.get(f"{collection}/{name}")
                assert held.status == 200 and held.body["metadata"].get("deletionTimestamp"), held.body
            assert (await api.get(f"{BULK}/api/v1/namespaces/{NAMESPACE}")).body["status"]["phase"] == "Terminating"
            assert not namespace_deleted.is_set()

            for name in HELD:
                reply = await api.patch(f"{collection}/{name}", {"metadata": {"finalizers": None}},
                                        "application/merge-patch+json")
                assert reply.status == 200, reply.body
            await asyncio.wait_for(namespace_deleted.wait(), PATIENCE)
            await asyncio.wait_for(asyncio.gather(*(w.until(OBJECTS) for w in watchers)), PATIENCE)
        finally:
            reader.stop.set()
            await asyncio.wait_for(tasks[-1], ANSWERED_WITHIN * 2)
            for task in tasks[:-1]:
                task.cancel()
            await asyncio.gather(*tasks[:-1], return_exceptions=True)

        expected = {f"cm-{i:05d}" for i in range(OBJECTS)}
        for watcher in watchers:
            assert watcher.names == expected, (watcher.path, watcher.params, len(watcher.names))
        assert (await api.get(f"{BULK}/api/v1/namespaces/{NAMESPACE}")).status == 404
        assert (await api.get(f"{BULK}/api/v1/configmaps")).body["items"] == []
    failed: list[Any] = [a for a in reader.answers if a != 200]
    assert reader.answers and not failed, f"{len(failed)} of {len(reader.answers)} GETs failed: {failed[:5]}"
    print(f"the other tenant's {len(reader.answers)} GETs during the deletion were all answered 200")
