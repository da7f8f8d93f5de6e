"""etcd-backed object storage: keys and revisions, nothing of HTTP.

An object is stored as JSON without `metadata.resourceVersion`; on read the
key's mod_revision becomes the resourceVersion, as kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import orjson
from etcd3aio import Etcd3Client
from etcd3aio._protobuf import Compare
from etcd3aio.errors import EtcdError
from etcd3aio.kv import KVService, prefix_range_end

RPC_TIMEOUT = 5.0


class StorageError(Exception):
    """Base of the errors storage raises; the registry turns them into Status."""


class KeyNotFound(StorageError):
    pass


class KeyExists(StorageError):
    pass


class RevisionConflict(StorageError):
    """The key changed since the revision the caller read."""


class Compacted(StorageError):
    """The requested revision is older than etcd's compaction."""


class Unavailable(StorageError):
    """etcd did not answer."""


@dataclass(slots=True)
class Stored:
    """One object as read from etcd."""

    key: str
    obj: dict[str, Any]
    mod_revision: int


def decode(value: bytes, mod_revision: int) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(mod_revision)
    return obj


def encode(obj: dict[str, Any]) -> bytes:
    meta = obj.get("metadata") or {}
    if "resourceVersion" in meta:
        meta = dict(meta)
        del meta["resourceVersion"]
        obj = {**obj, "metadata": meta}
    return orjson.dumps(obj)


def _mod_revision_is(key: str, revision: int) -> Compare:
    return Compare(result=Compare.EQUAL, target=Compare.MOD, key=key.encode(), mod_revision=revision)


async def _call(coro: Awaitable[Any]) -> Any:
    """Run one etcd RPC, mapping transport failures to storage errors."""
    try:
        return await coro
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.OUT_OF_RANGE or "compacted" in (exc.details() or ""):
            raise Compacted(exc.details() or "compacted") from exc
        raise Unavailable(exc.details() or str(exc.code())) from exc
    except (EtcdError, TimeoutError, OSError) as exc:
        raise Unavailable(str(exc) or type(exc).__name__) from exc


class Storage:
    """Create/update/delete as etcd transactions guarded by revisions."""

    def __init__(self, client: Etcd3Client) -> None:
        self.client = client

    @property
    def _kv(self) -> KVService:
        if self.client.kv is None:
            raise Unavailable("etcd client is not connected")
        return self.client.kv

    async def get(self, key: str) -> Stored:
        resp = await _call(self._kv.get(key, timeout=RPC_TIMEOUT, max_attempts=1))
        if not resp.kvs:
            raise KeyNotFound(key)
        kv = resp.kvs[0]
        return Stored(key, decode(kv.value, kv.mod_revision), kv.mod_revision)

    async def exists(self, key: str) -> bool:
        resp = await _call(self._kv.get(key, count_only=True, timeout=RPC_TIMEOUT, max_attempts=1))
        return bool(resp.count)

    async def current_revision(self) -> int:
        resp = await _call(self._kv.get("/", count_only=True, timeout=RPC_TIMEOUT, max_attempts=1))
        return int(resp.header.revision)

    async def create(self, key: str, obj: dict[str, Any]) -> Stored:
        kv = self._kv
        value = encode(obj)
        resp = await _call(kv.txn(
            [KVService.txn_compare_create_revision(key, 0)],
            [KVService.txn_op_put(key, value)],
            timeout=RPC_TIMEOUT, max_attempts=1,
        ))
        if not resp.succeeded:
            raise KeyExists(key)
        rev = int(resp.header.revision)
        return Stored(key, decode(value, rev), rev)

    async def create_many(self, items: list[tuple[str, dict[str, Any]]]) -> bool:
        """Create several keys atomically if none exists; False if any did."""
        kv = self._kv
        resp = await _call(kv.txn(
            [KVService.txn_compare_create_revision(k, 0) for k, _ in items],
            [KVService.txn_op_put(k, encode(o)) for k, o in items],
            timeout=RPC_TIMEOUT, max_attempts=1,
        ))
        return bool(resp.succeeded)

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int) -> Stored:
        kv = self._kv
        value = encode(obj)
        resp = await _call(kv.txn(
            [_mod_revision_is(key, expected_revision)], [KVService.txn_op_put(key, value)], [KVService.txn_op_get(key)],
            timeout=RPC_TIMEOUT, max_attempts=1,
        ))
        if not resp.succeeded:
            current = resp.responses[0].response_range.kvs
            if not current:
                raise KeyNotFound(key)
            raise RevisionConflict(key)
        rev = int(resp.header.revision)
        return Stored(key, decode(value, rev), rev)

    async def delete(self, key: str, expected_revision: int) -> int:
        """Delete the key if it is still at expected_revision; return the new revision."""
        kv = self._kv
        resp = await _call(kv.txn(
            [_mod_revision_is(key, expected_revision)], [KVService.txn_op_delete(key)], [KVService.txn_op_get(key)],
            timeout=RPC_TIMEOUT, max_attempts=1,
        ))
        if not resp.succeeded:
            if not resp.responses[0].response_range.kvs:
                raise KeyNotFound(key)
            raise RevisionConflict(key)
        return int(resp.header.revision)

    async def guaranteed_update(
        self,
        key: str,
        mutate: Callable[[Stored], Awaitable[dict[str, Any] | None]],
        *,
        attempts: int = 16,
    ) -> Stored:
        """Read-modify-write with retry on conflict; `mutate` returning None leaves it as is."""
        for _ in range(attempts):
            current = await self.get(key)
            updated = await mutate(current)
            if updated is None:
                return current
            try:
                return await self.update(key, updated, current.mod_revision)
            except RevisionConflict:
                continue
        raise RevisionConflict(key)

    async def list_raw(
        self,
        prefix: str,
        *,
        revision: int = 0,
        limit: int = 0,
        start_key: str | None = None,
    ) -> tuple[list[tuple[str, bytes, int]], int, bool]:
        """As `list`, undecoded: (key, etcd's bytes, mod_revision) for callers that keep bytes (the watch cache)."""
        end = prefix_range_end(prefix.encode())
        resp = await _call(self._kv.get(
            start_key or prefix, end, revision=revision, limit=limit,
            timeout=RPC_TIMEOUT * 6, max_attempts=1,
        ))
        items = [(kv.key.decode(), kv.value, kv.mod_revision) for kv in resp.kvs]
        rev = revision or int(resp.header.revision)
        return items, rev, bool(resp.more)

    async def list(
        self,
        prefix: str,
        *,
        revision: int = 0,
        limit: int = 0,
        start_key: str | None = None,
    ) -> tuple[list[Stored], int, bool]:
        """Range over a prefix at a revision; returns (items, revision, more)."""
        raw, rev, more = await self.list_raw(prefix, revision=revision, limit=limit, start_key=start_key)
        return [Stored(key, decode(value, mod), mod) for key, value, mod in raw], rev, more

    async def count(self, prefix: str) -> int:
        end = prefix_range_end(prefix.encode())
        resp = await _call(self._kv.get(prefix, end, count_only=True, timeout=RPC_TIMEOUT, max_attempts=1))
        return int(resp.count)

    async def compact(self, revision: int) -> None:
        await _call(self._kv.compact(revision, timeout=RPC_TIMEOUT * 6, max_attempts=1))
