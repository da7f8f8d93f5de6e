"""A flood of idle connections (never starting TLS, or shaking hands and then sending nothing) cannot take
the descriptors an authenticated client needs: the server, under a low open-files limit that raising the soft
limit cannot lift, sheds the oldest idle ones and answers the client at once."""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcp_process import KcpServer, apiserver_binary, free_port

SOFT, HARD = 256, 512  # the server raises its soft limit to HARD, then has HARD - 256 descriptors for clients
RAW, SILENT_TLS = 400, 150  # together past what HARD leaves for connections
PATIENCE = 5.0  # seconds: "answered, not stalled"; without the bounds the client waits for the 32 s deadline
WITH_LIMITS = (f"import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({SOFT}, {HARD})); "
               "os.execv(sys.argv[1], sys.argv[1:])")


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("flood"), free_port(), ["--compaction-interval", "0"],
                       command=[sys.executable, "-c", WITH_LIMITS, apiserver_binary()])
    server.start()
    yield server
    assert server.stop() == 0, server.log_tail()


def open_files_limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-files limit in /proc/<pid>/limits")


async def authenticated_get(server: KcpServer) -> bytes:
    """A new connection's GET as the admin: the status line."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=server.ssl_context(),
                                                   server_hostname="127.0.0.1")
    try:
        writer.write(f"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: kcp\r\n"
                     f"Authorization: Bearer {server.token}\r\n\r\n".encode())
        return (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n", 1)[0]
    finally:
        writer.close()


async def open_idle(server: KcpServer, count: int, *, tls: bool) -> list[asyncio.StreamWriter]:
    """`count` connections that send nothing (a TLS handshake at most), opened 50 at a time."""
    context = server.ssl_context() if tls else None
    opened: list[asyncio.StreamWriter] = []

    async def one() -> None:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context,
                                                      server_hostname="127.0.0.1" if tls else None)
            opened.append(writer)
        except (OSError, ssl.SSLError):  # shed before its handshake finished: as a flood would see it
            pass

    for start in range(0, count, 50):
        await asyncio.gather(*(one() for _ in range(min(50, count - start))))
    return opened


def test_the_server_raises_its_soft_open_files_limit_to_the_hard_one(limited: KcpServer) -> None:
    assert limited.process is not None
    assert open_files_limits(limited.process.pid) == (HARD, HARD)


async def test_an_authenticated_client_is_served_past_a_flood_of_idle_connections(limited: KcpServer) -> None:
    flood = await open_idle(limited, SILENT_TLS, tls=True) + await open_idle(limited, RAW, tls=False)
    try:
        assert await asyncio.wait_for(authenticated_get(limited), PATIENCE) == b"HTTP/1.1 200 OK"
    finally:
        for writer in flood:
            writer.close()
