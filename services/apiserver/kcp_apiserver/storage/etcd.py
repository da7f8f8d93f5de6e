"""etcd-backed object storage: keys and revisions, nothing of HTTP.

An object is stored as JSON without `metadata.resourceVersion`; on read the
key's mod_revision becomes the resourceVersion, as kube-apiserver does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import grpc
import orjson
from etcd3aio import Etcd3Client
from etcd3aio._protobuf import Compare
from etcd3aio.errors import EtcdError
from etcd3aio.kv import KVService, prefix_range_end

from kcp_apiserver.storage.turns import Turns, Written

RPC_TIMEOUT = 5.0
PAGE_KEYS = 1000  # most keys one range read asks for
FIRST_PAGE_KEYS = 100  # keys the first read of a scan asks for, before the objects' size is known
PAGE_BYTES = 2 * 1024 * 1024  # about how many bytes of values one range read aims at
RECENT_KEYS = 65_536  # keys whose newest revision known from this process's own writes Storage remembers
TOO_LARGE = "etcdserver: request is too large"  # etcd's answer to a write over --max-request-bytes
UPDATE_PATIENCE = 60.0  # seconds a write given no deadline retries conflicts: kube's default --request-timeout


class StorageError(Exception):
    """Base of the errors storage raises; the registry turns them into Status."""


class KeyNotFound(StorageError):
    pass


class KeyExists(StorageError):
    pass


class RevisionConflict(StorageError):
    """The key changed since the revision the caller read.

    `current` is the key's state as the failed transaction read it (etcd's answer to the txn's
    else-branch get), when known: a retry can start from it instead of reading the key again."""

    def __init__(self, key: str, current: Stored | None = None) -> None:
        super().__init__(key)
        self.current = current


class PreconditionFailed(StorageError):
    """The object is not the one the write was meant for (its uid or resourceVersion differ): kube's 409."""


class Compacted(StorageError):
    """The requested revision is older than etcd's compaction."""


class Unavailable(StorageError):
    """etcd did not answer."""


class RequestTooLarge(StorageError):
    """etcd refused a write bigger than its --max-request-bytes: retrying cannot help."""


class ResponseTooLarge(StorageError):
    """A read's answer exceeded the client's gRPC message limit: ask for fewer keys."""


@dataclass(slots=True)
class Stored:
    """One object as read from etcd."""

    key: str
    obj: dict[str, Any]
    mod_revision: int
    deleted: bool = False  # a guaranteed_update's last state, when what it did was delete the key


@dataclass(frozen=True, slots=True)
class Preconditions:
    """kube's storage.Preconditions: which object a write is for ("" = any); checked on every attempt."""

    uid: str = ""
    resource_version: str = ""

    def check(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if self.uid and self.uid != meta.get("uid"):
            raise PreconditionFailed(f"Precondition failed: UID in precondition: {self.uid}, UID in object meta: "
                                     f"{meta.get('uid')}")
        if self.resource_version and self.resource_version != meta.get("resourceVersion"):
            raise PreconditionFailed(f"Precondition failed: ResourceVersion in precondition: {self.resource_version}, "
                                     f"ResourceVersion in object meta: {meta.get('resourceVersion')}")


@dataclass(frozen=True, slots=True)
class Delete:
    """A try_update's answer that the key goes (at the revision it was read at); `obj` is what the caller gets
    back as the object's last state."""

    obj: dict[str, Any]


class Copy(Protocol):
    """A copy of a key's value kept elsewhere (the watch cache's `Cached`): etcd's bytes and their revision."""

    @property
    def raw(self) -> bytes: ...

    @property
    def revision(self) -> int: ...


TryUpdate = Callable[[Stored], Awaitable[dict[str, Any] | Delete | None]]


class Page(NamedTuple):
    """One range read: (key, etcd's bytes, mod_revision) items, the revision read at, how many keys the range
    held from its start (at that revision), and whether more follow this page."""

    items: list[tuple[str, bytes, int]]
    revision: int
    total: int  # not `count`: a tuple has a method of that name
    more: bool


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


def _failed(key: str, resp: Any) -> StorageError:
    """Why a revision-guarded txn failed, from its else-branch get: the key is gone, or it moved on (to the
    state returned with the conflict)."""
    kvs = resp.responses[0].response_range.kvs
    if not kvs:
        return KeyNotFound(key)
    kv = kvs[0]
    return RevisionConflict(key, Stored(key, decode(kv.value, kv.mod_revision), kv.mod_revision))


async def _call(coro: Awaitable[Any], *, read: bool = False) -> Any:
    """Run one etcd RPC, mapping transport failures to storage errors."""
    try:
        return await coro
    except grpc.aio.AioRpcError as exc:
        code, details = exc.code(), exc.details() or ""
        if code == grpc.StatusCode.OUT_OF_RANGE or "compacted" in details:
            raise Compacted(details or "compacted") from exc
        if TOO_LARGE in details:  # etcd's own check (InvalidArgument)
            raise RequestTooLarge(TOO_LARGE) from exc
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            # gRPC's message limits: a read's answer over our client's, a write over etcd's request limit plus
            # its gRPC overhead (etcd's server refuses it before its own check)
            if read:
                raise ResponseTooLarge(details) from exc
            raise RequestTooLarge(f"rpc error: code = ResourceExhausted desc = {details}") from exc
        raise Unavailable(details or str(code)) from exc
    except (EtcdError, TimeoutError, OSError) as exc:
        raise Unavailable(str(exc) or type(exc).__name__) from exc


class Storage:
    """Create/update/delete as etcd transactions guarded by revisions."""

    def __init__(self, client: Etcd3Client) -> None:
        self.client = client
        self.recent: dict[str, int] = {}  # key -> newest revision its writes here saw (oldest first)
        self.turns = Turns()  # this process's writers of one key, one at a time (guaranteed_update)

    def known_revision(self, key: str) -> int:
        """The newest revision of key this process has seen etcd give it (its writes, deletes, conflicts), or 0
        if it remembers none: a copy of the key older than this (a lagging watch cache's) is stale for sure."""
        return self.recent.get(key, 0)

    def _saw(self, key: str, revision: int) -> None:
        recent = self.recent
        recent[key] = max(revision, recent.pop(key, 0))  # answers may arrive out of order: keep the newest
        if len(recent) > RECENT_KEYS:
            del recent[next(iter(recent))]

    def _failed(self, key: str, resp: Any) -> StorageError:
        exc = _failed(key, resp)
        if isinstance(exc, RevisionConflict) and exc.current is not None:
            self._saw(key, exc.current.mod_revision)
        return exc

    @property
    def _kv(self) -> KVService:
        if self.client.kv is None:
            raise Unavailable("etcd client is not connected")
        return self.client.kv

    async def get(self, key: str) -> Stored:
        resp = await _call(self._kv.get(key, timeout=RPC_TIMEOUT, max_attempts=1), read=True)
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
        self._saw(key, rev)
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
            raise self._failed(key, resp)
        rev = int(resp.header.revision)
        self._saw(key, rev)
        return Stored(key, decode(value, rev), rev)

    async def delete(self, key: str, expected_revision: int) -> int:
        """Delete the key if it is still at expected_revision; return the new revision."""
        kv = self._kv
        resp = await _call(kv.txn(
            [_mod_revision_is(key, expected_revision)], [KVService.txn_op_delete(key)], [KVService.txn_op_get(key)],
            timeout=RPC_TIMEOUT, max_attempts=1,
        ))
        if not resp.succeeded:
            raise self._failed(key, resp)
        rev = int(resp.header.revision)
        self._saw(key, rev)
        return rev

    async def guaranteed_update(
        self,
        key: str,
        try_update: TryUpdate,
        *,
        preconditions: Preconditions | None = None,
        deadline: float | None = None,
        suggestion: Copy | None = None,
        if_absent: Callable[[], dict[str, Any] | None] | None = None,
        dry_run: bool = False,
    ) -> Stored:
        """kube's GuaranteedUpdate: read-modify-write of one key, retried on conflict until `deadline` (the
        event loop's clock; none: UPDATE_PATIENCE from now), then RevisionConflict.

        `try_update` gets the current state and answers the new object, `Delete`, or None (leave it as it
        is); it may raise. Each attempt checks `preconditions` first: a write meant for another object
        fails at once, never retried. The state starts as `suggestion` (the watch cache's copy: no read)
        unless this process has seen the key at a newer revision; a stale copy must not decide alone, so
        an error or a no-op decided on it is checked against etcd's state before it stands. After a
        conflict, the next attempt starts from the state the failed txn returned. A missing key reads as
        `if_absent()` (a logical cluster's view of a shared object, written with the compare on revision
        0 that an absent key passes) or raises KeyNotFound. `dry_run` decides without writing.
        This process's writers of one key take turns (turns.py), each starting from what the one before wrote.
        """
        deadline = asyncio.get_running_loop().time() + UPDATE_PATIENCE if deadline is None else deadline
        try:
            written = await self.turns.take(key, deadline)
        except TimeoutError:
            raise RevisionConflict(key) from None
        stored: Stored | None = None
        try:
            if written is not None and not dry_run and (suggestion is None or written.revision > suggestion.revision):
                suggestion = written
            stored = await self._update_until(key, try_update, preconditions, deadline, suggestion, if_absent, dry_run)
            return stored
        finally:
            if stored is not None and not dry_run and not stored.deleted and self.turns.wanted(key):
                written = Written(encode(stored.obj), stored.mod_revision)
            self.turns.give(key, written)

    async def _update_until(self, key: str, try_update: TryUpdate, preconditions: Preconditions | None,
                            deadline: float, suggestion: Copy | None,
                            if_absent: Callable[[], dict[str, Any] | None] | None, dry_run: bool) -> Stored:
        if suggestion is not None and suggestion.revision >= self.known_revision(key):
            current, is_current = Stored(key, decode(suggestion.raw, suggestion.revision), suggestion.revision), False
        else:
            current, is_current = await self._read_state(key, if_absent), True
        while True:
            try:
                if preconditions is not None:
                    preconditions.check(current.obj)
                updated = await try_update(current)
            except Exception:
                if is_current:
                    raise
                latest = await self._read_state(key, if_absent)
                if latest.mod_revision == current.mod_revision:
                    raise  # the copy was current: the error stands
                current, is_current = latest, True
                continue
            if updated is None:
                if is_current:
                    return current
                latest = await self._read_state(key, if_absent)
                if latest.mod_revision == current.mod_revision:
                    return current
                current, is_current = latest, True
                continue
            if dry_run:
                if isinstance(updated, Delete):
                    return Stored(key, updated.obj, current.mod_revision, deleted=True)
                return Stored(key, updated, current.mod_revision)
            try:
                if isinstance(updated, Delete):
                    return Stored(key, updated.obj, await self.delete(key, current.mod_revision), deleted=True)
                return await self.update(key, updated, current.mod_revision)
            except RevisionConflict as exc:
                current = exc.current if exc.current is not None else await self._read_state(key, if_absent)
            except KeyNotFound:
                current = await self._read_state(key, if_absent)  # gone: KeyNotFound, or what absence shows
            is_current = True
            if asyncio.get_running_loop().time() >= deadline:
                raise RevisionConflict(key, current)

    async def _read_state(self, key: str, if_absent: Callable[[], dict[str, Any] | None] | None) -> Stored:
        try:
            return await self.get(key)
        except KeyNotFound:
            shown = if_absent() if if_absent is not None else None
            if shown is None:
                raise
            return Stored(key, shown, 0)

    async def list_raw(
        self,
        prefix: str,
        *,
        revision: int = 0,
        limit: int = 0,
        start_key: str | None = None,
    ) -> tuple[list[tuple[str, bytes, int]], int, bool]:
        """One page of a range, undecoded: (key, etcd's bytes, mod_revision), the revision, and whether more follow."""
        page = await self._page(prefix, revision, limit, start_key)
        return page.items, page.revision, page.more

    async def _page(self, prefix: str, revision: int, limit: int, start_key: str | None) -> Page:
        """At most `limit` keys (0: PAGE_KEYS), fewer when so many would not fit in one gRPC message: an
        answer over the client's limit is asked again for half as many keys, down to one."""
        end = prefix_range_end(prefix.encode())
        limit = limit or PAGE_KEYS
        while True:
            try:
                resp = await _call(self._kv.get(
                    start_key or prefix, end, revision=revision, limit=limit,
                    timeout=RPC_TIMEOUT * 6, max_attempts=1,
                ), read=True)
                break
            except ResponseTooLarge:
                if limit == 1:
                    raise
                limit //= 2
        items = [(kv.key.decode(), kv.value, kv.mod_revision) for kv in resp.kvs]
        return Page(items, revision or int(resp.header.revision), int(resp.count), bool(resp.more))

    async def scan_raw(
        self, prefix: str, *, revision: int = 0, start_key: str | None = None, page: int = PAGE_KEYS,
    ) -> AsyncIterator[Page]:
        """Every key under prefix from start_key on, page after page at one revision (the first page's,
        unless given).

        Pages hold at most `page` keys and about PAGE_BYTES of values: each page's key count follows the
        sizes the last one had, so neither many small objects nor a few huge ones make one answer too big
        for a gRPC message, nor keep more than a few MiB in flight."""
        keys = min(page, FIRST_PAGE_KEYS)
        while True:
            current = await self._page(prefix, revision, keys, start_key)
            revision = current.revision
            yield current
            if not current.more or not current.items:
                return
            start_key = current.items[-1][0] + "\x00"
            size = sum(len(value) for _, value, _ in current.items)
            keys = max(1, min(page, len(current.items) * PAGE_BYTES // max(size, 1)))

    async def list(
        self,
        prefix: str,
        *,
        revision: int = 0,
        limit: int = 0,
        start_key: str | None = None,
    ) -> tuple[list[Stored], int, bool]:
        """One page of a range over a prefix at a revision; returns (items, revision, more)."""
        raw, rev, more = await self.list_raw(prefix, revision=revision, limit=limit, start_key=start_key)
        return [Stored(key, decode(value, mod), mod) for key, value, mod in raw], rev, more

    async def count(self, prefix: str) -> int:
        end = prefix_range_end(prefix.encode())
        resp = await _call(self._kv.get(prefix, end, count_only=True, timeout=RPC_TIMEOUT, max_attempts=1))
        return int(resp.count)

    async def compact(self, revision: int) -> None:
        await _call(self._kv.compact(revision, timeout=RPC_TIMEOUT * 6, max_attempts=1))
