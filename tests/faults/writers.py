"""Writers that create, then keep updating, ConfigMaps with a sequence number, and log what was acknowledged.

A write is acknowledged only by a 2xx answer. A 5xx, a 429 or no answer at all (connection refused or
reset, timeout) is retried with the same content, as a client would; a retried create that meets
AlreadyExists counts once if the object holds exactly what was sent (the first attempt had landed).
Updates are unconditional PUTs, so a retry is idempotent in content.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
from ledger import Key, Ledger

from api import Api, Reply, configmap

WRITE_DEADLINE = 60.0  # one write may take this long to be acknowledged, outages included
RETRY_PAUSE = 0.1  # between attempts of one write (a client's retry pacing)


class Writer:
    """One writer: its own objects in one logical cluster, written one at a time, round-robin."""

    def __init__(self, api: Api, ledger: Ledger, *, cluster: str, index: int, objects: int, label: str) -> None:
        self.api = api
        self.ledger = ledger
        self.cluster = cluster
        self.index = index
        self.label = label
        self.names = [f"w{index}-{j}" for j in range(objects)]
        self.collection = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"

    async def run(self, stop: asyncio.Event) -> None:
        """Create every object, then update them all with seq 1, 2, ... until `stop`."""
        for name in self.names:
            await self._write(name, 0, create=True)
        seq = 0
        while not stop.is_set():
            seq += 1
            for name in self.names:
                await self._write(name, seq, create=False)

    def _body(self, name: str, seq: int) -> dict[str, Any]:
        return configmap(name, {"writer": str(self.index), "seq": str(seq)}, labels={"fault-suite": self.label})

    async def _write(self, name: str, seq: int, *, create: bool) -> None:
        body = self._body(name, seq)
        deadline = time.monotonic() + WRITE_DEADLINE
        while True:
            assert time.monotonic() < deadline, f"{self.cluster}/{name} seq {seq}: not acknowledged within " \
                                                f"{WRITE_DEADLINE}s"
            reply = await self._attempt(name, body, create=create)
            if reply is not None and 200 <= reply.status < 300:
                key: Key = (self.cluster, "default", name)
                self.ledger.ack(key, int(reply.body["metadata"]["resourceVersion"]), seq, body["data"])
                return
            self.ledger.failures += 1
            await asyncio.sleep(RETRY_PAUSE)

    async def _attempt(self, name: str, body: dict[str, Any], *, create: bool) -> Reply | None:
        """One try: the 2xx reply that acknowledges the write, or None (retry); anything else fails the test."""
        try:
            if create:
                reply = await self.api.post(self.collection, body)
                if reply.status == 409 and reply.body.get("reason") == "AlreadyExists":
                    reply = await self.api.get(f"{self.collection}/{name}")
                    if reply.status == 200:
                        assert reply.body["data"] == body["data"], \
                            f"{name} exists with {reply.body['data']}, this writer created {body['data']}"
            else:
                reply = await self.api.put(f"{self.collection}/{name}", body)
        except (aiohttp.ClientError, TimeoutError):
            return None
        if 200 <= reply.status < 300:
            return reply
        assert reply.status >= 500 or reply.status == 429, f"{name}: {reply.status} {reply.body}"
        return None
