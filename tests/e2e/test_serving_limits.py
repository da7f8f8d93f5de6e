"""What a server owes its other clients: connections that send nothing, or send slowly, are closed after
kube's timeouts, and past --max-requests-inflight / --max-mutating-requests-inflight a request is 429."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from api import Api, configmap
from kcp_process import KcpServer, free_port, run_kubectl

READ_HEADER_TIMEOUT = 1.0
IDLE_TIMEOUT = 4.0
REQUEST_TIMEOUT = 2.0


def _server(root: Path, *args: str) -> Iterator[KcpServer]:
    server = KcpServer(root, free_port(), ["--compaction-interval", "0", *args])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


@pytest.fixture(scope="module")
def short_timeouts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    yield from _server(tmp_path_factory.mktemp("timeouts"), "--read-header-timeout", str(READ_HEADER_TIMEOUT),
                       "--idle-connection-timeout", str(IDLE_TIMEOUT), "--request-timeout", str(REQUEST_TIMEOUT))


@pytest.fixture(scope="module")
def one_in_flight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    root = tmp_path_factory.mktemp("inflight")
    (root / "tokens.csv").write_text('alice-token,alice,1001,"developers,testers"\n')
    servers = _server(root, "--max-requests-inflight", "1", "--max-mutating-requests-inflight", "1",
                      "--token-auth-file", str(root / "tokens.csv"))
    server = next(servers)
    # alice may edit in default (what is judged here is the in-flight limits, not RBAC)
    run_kubectl(server, "-n", "default", "create", "rolebinding", "alice-edits", "--clusterrole=edit", "--user=alice")
    deadline = time.monotonic() + 30
    while run_kubectl(server, "-n", "default", "auth", "can-i", "create", "configmaps", "--as=alice",
                      check=False).stdout.strip() != "yes":
        assert time.monotonic() < deadline, "alice's binding never took effect"
        time.sleep(0.1)
    yield server
    next(servers, None)


async def _connect(server: KcpServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port, ssl=server.ssl_context(),
                                         server_hostname="127.0.0.1")


async def _closed_within(reader: asyncio.StreamReader, timeout: float) -> float:
    """Seconds until the server closes the connection (reading everything it sends meanwhile)."""
    started = time.monotonic()

    async def drain() -> None:
        while await reader.read(65536):
            pass

    try:
        await asyncio.wait_for(drain(), timeout)
    except (ConnectionResetError, BrokenPipeError):
        pass
    return time.monotonic() - started


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    return status, headers, await reader.readexactly(int(headers.get("content-length", "0")))


async def test_a_client_that_never_finishes_its_headers_is_disconnected(short_timeouts: KcpServer) -> None:
    reader, writer = await _connect(short_timeouts)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: kcp\r\n")

    async def trickle() -> None:  # a slow-loris: a header line now and then, never the blank line
        for i in range(1000):
            writer.write(f"X-Slow-{i}: x\r\n".encode())
            await writer.drain()
            await asyncio.sleep(0.2)

    trickling = asyncio.create_task(trickle())
    try:
        elapsed = await _closed_within(reader, READ_HEADER_TIMEOUT + 5)
    finally:
        trickling.cancel()
        writer.close()
    assert READ_HEADER_TIMEOUT * 0.9 <= elapsed < IDLE_TIMEOUT, elapsed  # the header deadline, not the idle one


async def test_a_connection_that_sends_nothing_is_closed(short_timeouts: KcpServer) -> None:
    reader, writer = await _connect(short_timeouts)
    try:
        elapsed = await _closed_within(reader, READ_HEADER_TIMEOUT + 5)
    finally:
        writer.close()
    assert elapsed < IDLE_TIMEOUT, elapsed


async def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(short_timeouts: KcpServer) -> None:
    reader, writer = await _connect(short_timeouts)
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: kcp\r\n\r\n")
        status, headers, body = await _response(reader)
        assert (status, body) == (200, b"ok")
        assert headers.get("connection", "keep-alive").lower() != "close"
        elapsed = await _closed_within(reader, IDLE_TIMEOUT + 5)
    finally:
        writer.close()
    assert IDLE_TIMEOUT * 0.9 <= elapsed < IDLE_TIMEOUT + 3, elapsed


async def test_a_request_whose_body_never_arrives_times_out_with_kubes_status(short_timeouts: KcpServer) -> None:
    reader, writer = await _connect(short_timeouts)
    try:
        writer.write(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: kcp\r\n"
                     b"Authorization: Bearer " + short_timeouts.token.encode() + b"\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"kind\":")
        await writer.drain()
        status, _, body = await asyncio.wait_for(_response(reader), REQUEST_TIMEOUT + 5)
    finally:
        writer.close()
    assert status == 504
    assert json.loads(body) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": "Timeout: request did not complete within the allotted timeout",
                                "reason": "Timeout", "details": {}, "code": 504}


async def test_a_watch_outlives_the_request_timeout(short_timeouts: KcpServer) -> None:
    async with aiohttp.ClientSession() as session:
        api = Api(short_timeouts, session)
        path = "/api/v1/namespaces/default/configmaps"
        rv = (await api.get(path)).body["metadata"]["resourceVersion"]
        lasts = REQUEST_TIMEOUT + 1
        started = time.monotonic()
        events = [e async for e in api.watch(path, {"resourceVersion": rv, "timeoutSeconds": str(int(lasts))})]
        assert events == [] and time.monotonic() - started >= lasts * 0.9  # ended by its own timeoutSeconds


@pytest.fixture
async def alice(one_in_flight: KcpServer) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(one_in_flight, session, token="alice-token")


async def _inflight(admin: Api, kind: str) -> float:
    text = (await admin.get("/metrics")).body
    match = re.search(rf'^apiserver_current_inflight_requests{{request_kind="{kind}"}} (\S+)$', text, re.MULTILINE)
    assert match, text
    return float(match.group(1))


async def _until_inflight(admin: Api, kind: str, value: float, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while (seen := await _inflight(admin, kind)) != value:
        assert time.monotonic() < deadline, f"{kind} in flight stayed {seen}, not {value}"
        await asyncio.sleep(0.05)


async def test_past_the_mutating_limit_a_request_is_429_and_a_watch_is_not_counted(
        one_in_flight: KcpServer, alice: Api) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    listed = await alice.get(path)
    assert listed.status == 200, listed.body  # the token file's user is known
    rv = listed.body["metadata"]["resourceVersion"]
    opened = asyncio.Event()

    async def watch() -> None:
        async for _ in alice.watch(path, {"resourceVersion": rv}, opened=opened):
            pass

    watcher = asyncio.create_task(watch())
    await asyncio.wait_for(opened.wait(), 10)
    _, writer = await _connect(one_in_flight)
    try:
        # with one read-only slot, alice's open watch takes none of it
        assert (await alice.get(path)).status == 200
        # a create whose body never comes holds the one mutating slot
        writer.write(f"POST {path} HTTP/1.1\r\nHost: kcp\r\nAuthorization: Bearer alice-token\r\n"
                     "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{".encode())
        await writer.drain()
        async with aiohttp.ClientSession() as session:
            admin = Api(one_in_flight, session)
            await _until_inflight(admin, "mutating", 1)
            refused = await alice.post(path, configmap("refused"))
            assert refused.status == 429
            assert refused.headers["Retry-After"] == "1"
            assert refused.body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Too many requests, please try again later.",
                                    "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1}, "code": 429}
            # a system:masters user always gets an answer, as in kube
            assert (await admin.post(path, configmap("by-admin"))).status == 201
            writer.close()
            await _until_inflight(admin, "mutating", 0)
        assert (await alice.post(path, configmap("after"))).status == 201
    finally:
        writer.close()
        watcher.cancel()
