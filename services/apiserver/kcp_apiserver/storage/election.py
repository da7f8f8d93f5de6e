"""Leader election among API server replicas, on an etcd lease.

With several replicas against one etcd, only one may run the in-process
controllers and the compactor. kube's controllers elect through Lease objects;
the API server owns etcd, so it elects on etcd directly: the leader holds one
key bound to a lease it keeps renewing. A leader that cannot renew within the
renew deadline stops leading before the lease can expire, so two replicas never
lead at once (the same guarantee as client-go's renew deadline < lease duration).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
from etcd3aio import Etcd3Client
from etcd3aio.kv import KVService

from kcp_apiserver.storage.etcd import Unavailable, _call
from kcpcommon.tasks import cancel_and_wait, spawn

log = structlog.get_logger("election")

ELECTION_PREFIX = "/registry/kcp.io/leaderelection/"
RPC_TIMEOUT = 2.0


class LeaderElection:
    """`run(lead)` forever: win, `lead()` until leadership is lost or the run is cancelled, retry."""

    def __init__(self, client: Etcd3Client, name: str, identity: str, *, lease_seconds: int = 15,
                 renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        if renew_deadline >= lease_seconds:
            raise ValueError("the renew deadline must be shorter than the lease")
        self.client = client
        self.key = ELECTION_PREFIX + name
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.is_leader = False

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        while True:
            lease = await self._acquire()
            log.info("leading", key=self.key, identity=self.identity)
            self.is_leader = True
            leading = spawn(lead(), name=f"leader:{self.key}")
            try:
                await self._renew_until_lost(lease, leading)
            finally:
                self.is_leader = False
                await cancel_and_wait(leading)
                await self._release(lease)
            log.warning("leadership lost", key=self.key, identity=self.identity)
            await asyncio.sleep(self.retry_period)  # a leader that failed must not spin

    async def _acquire(self) -> int:
        """Block until this replica holds the key; returns the lease that binds it."""
        while True:
            try:
                lease = await self._grant()
                if await self._claim(lease):
                    return lease
                await self._release(lease)
            except Unavailable as exc:
                log.warning("election: etcd unavailable", key=self.key, error=str(exc))
            await asyncio.sleep(self.retry_period)

    async def _claim(self, lease: int) -> bool:
        """Take the key if it is free, or if it is this identity's own (a restarted replica takes its key back)."""
        kv = self._kv()
        put = [KVService.txn_op_put(self.key, self.identity.encode(), lease=lease)]
        free = await _call(kv.txn([KVService.txn_compare_create_revision(self.key, 0)], put,
                                  timeout=RPC_TIMEOUT, max_attempts=1))
        if free.succeeded:
            return True
        mine = await _call(kv.txn([KVService.txn_compare_value(self.key, self.identity.encode())], put,
                                  timeout=RPC_TIMEOUT, max_attempts=1))
        return bool(mine.succeeded)

    async def _renew_until_lost(self, lease: int, leading: asyncio.Task[None]) -> None:
        last_renewed = time.monotonic()
        interval = max(0.2, self.lease_seconds / 5)
        while not leading.done():
            await asyncio.wait([leading], timeout=interval)
            if leading.done():
                return
            try:
                if await self._keep_alive(lease):
                    last_renewed = time.monotonic()
                else:
                    return  # the lease is gone: someone else may hold the key now
            except Unavailable as exc:
                log.warning("election: renewal failed", key=self.key, error=str(exc))
            if time.monotonic() - last_renewed > self.renew_deadline:
                return

    def _kv(self) -> KVService:
        if self.client.kv is None:
            raise Unavailable("etcd client is not connected")
        return self.client.kv

    async def _grant(self) -> int:
        if self.client.lease is None:
            raise Unavailable("etcd client is not connected")
        granted = await _call(self.client.lease.grant(ttl=self.lease_seconds, timeout=RPC_TIMEOUT, max_attempts=1))
        return int(granted.ID)

    async def _keep_alive(self, lease: int) -> bool:
        if self.client.lease is None:
            raise Unavailable("etcd client is not connected")
        stream = self.client.lease.keep_alive(lease)
        try:
            async with asyncio.timeout(RPC_TIMEOUT):
                async for response in stream:
                    return int(response.TTL) > 0
        except TimeoutError as exc:
            raise Unavailable("lease keep-alive timed out") from exc
        except Exception as exc:
            raise Unavailable(str(exc)) from exc
        finally:
            stream.cancel()
        return False

    async def _release(self, lease: int) -> None:
        """Revoking the lease deletes the key: a standby takes over at once, not after the TTL."""
        if self.client.lease is None:
            return
        try:
            await _call(self.client.lease.revoke(lease, timeout=RPC_TIMEOUT, max_attempts=1))
        except Unavailable:
            pass  # it expires by itself
