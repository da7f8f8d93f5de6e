"""Storage with values near etcd's limits: range reads stay under gRPC's message size, too-large writes say so.

gRPC refuses an answer over 4 MiB unless the client raises its receive limit; etcd answers any size.
Six values of about 900 KiB (over 5 MiB together) are read through a client with gRPC's default limit,
so only paging by size can read them, and through the apiserver's client, which must read them at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest
from etcd3aio import Etcd3Client

from kcp_apiserver.registry.listing import item_json
from kcp_apiserver.storage.cachestate import Cached
from kcp_apiserver.storage.etcd import RequestTooLarge, Storage, decode
from kcp_apiserver.storage.etcd_client import etcd_client
from kcp_apiserver.storage.watchcache import WatchCache

BIG = 900 * 1024
GRPC_DEFAULT_LIMIT = 4 * 1024 * 1024


def big_object(i: int) -> dict:  # type: ignore[type-arg]
    return {"metadata": {"name": f"o{i}"}, "data": {"payload": f"{i}" * BIG}}


@pytest.fixture
async def big(etcd: Etcd3Client, prefix: str) -> AsyncIterator[Storage]:
    storage = Storage(etcd)
    for i in range(6):
        await storage.create(f"{prefix}o{i}", big_object(i))
    yield storage


async def test_a_scan_over_more_than_the_grpc_limit_reads_every_value(big: Storage, prefix: str) -> None:
    seen = []
    async for page in big.scan_raw(prefix):
        assert sum(len(v) for _, v, _ in page.items) < GRPC_DEFAULT_LIMIT
        seen += [key for key, _, _ in page.items]
    assert seen == [f"{prefix}o{i}" for i in range(6)]


async def test_one_page_asked_for_more_than_fits_comes_back_shorter(big: Storage, prefix: str) -> None:
    items, revision, more = await big.list_raw(prefix, limit=1000)
    assert 0 < len(items) < 6 and more and revision > 0
    rest, _, more = await big.list_raw(prefix, revision=revision, start_key=items[-1][0] + "\x00")
    assert len(items) + len(rest) == 6 or more


async def test_the_watch_cache_loads_more_than_the_grpc_limit(etcd: Etcd3Client, big: Storage, prefix: str) -> None:
    cache = WatchCache(etcd, big, prefix, namespaced=False)
    await cache.start()
    try:
        assert len(cache.state) == 6
        assert cache.state.get(f"{prefix}o5").decode()["data"]["payload"] == "5" * BIG  # type: ignore[union-attr]
    finally:
        await cache.stop()


async def test_the_apiservers_client_reads_more_than_4_mib_in_one_answer(etcd_endpoint: str, big: Storage,
                                                                         prefix: str) -> None:
    client = etcd_client([etcd_endpoint])
    await client.connect()
    try:
        items, _, more = await Storage(client).list_raw(prefix, limit=1000)
        assert len(items) == 6 and not more
    finally:
        await client.close()


async def test_a_write_over_etcds_request_limit_is_too_large_not_unavailable(etcd: Etcd3Client, prefix: str) -> None:
    storage = Storage(etcd)
    for size in (1700 * 1024, 3 * 1024 * 1024):  # over etcd's 1.5 MiB; over that plus gRPC's overhead
        with pytest.raises(RequestTooLarge):
            await storage.create(prefix + "huge", {"metadata": {}, "data": {"x": "y" * size}})
    stored = await storage.create(prefix + "small", {"metadata": {}, "data": {"x": "y"}})
    with pytest.raises(RequestTooLarge):
        await storage.update(prefix + "small", {"metadata": {}, "data": {"x": "y" * 1700 * 1024}}, stored.mod_revision)


@pytest.mark.parametrize("obj", [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
    {"spec": {"template": {"metadata": {"name": "inner"}}}, "metadata": {"name": "outer"}},
    {"kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"resourceVersion": "7"}},
    {"kind": "X", "data": {"s": "\"metadata\":{"}, "metadata": {"name": "n"}},
    {"kind": "X"},
])
def test_list_items_from_etcds_bytes_are_the_decoded_objects(obj: dict) -> None:  # type: ignore[type-arg]
    raw = orjson.dumps(obj)
    assert orjson.loads(item_json(Cached(raw, 42))) == decode(raw, 42)
