"""An HTTP upgrade aiohttp's client does not make (SPDY/3.1): the request as kube reads it (credentials,
repeated X-Stream-Protocol-Version), a refusal's body whatever its framing, and the bytes after a 101."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import yaml

from kcpcommon.clients import KubeClientFactory
from kcpcommon.upgrade import upgrade

OPTIONS = {"component": "upgrade-tests", "version": "0.1.0", "qps": 0, "burst": 0}
Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter, list[str]], Awaitable[None]]


async def _switch(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: list[str]) -> None:
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                 b"X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\nhello")
    writer.write(b"echo " + await reader.read(100))
    await writer.drain()


async def _refuse_by_length(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: list[str]) -> None:
    writer.write(b'HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"code": 403}')


async def _refuse_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: list[str]) -> None:
    writer.write(b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"4\r\ncont\r\nf\r\nainer not found\r\n0\r\n\r\n")


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[list[str]], list[Answer]]]:
    heads: list[list[str]] = []
    answers: list[Answer] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
        heads.append(head)
        await answers.pop(0)(reader, writer, head)
        await writer.drain()
        writer.close()

    listening = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/clusters/sim-1", heads, answers
    finally:
        listening.close()
        await listening.wait_closed()


def _kubeconfig(server: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                           "clusters": [{"name": "c", "cluster": {"server": server}}],
                           "users": [{"name": "u", "user": {"token": "s3cret"}}],
                           "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]})


async def test_an_upgrade_carries_the_credentials_and_then_the_bytes(
        server: tuple[str, list[list[str]], list[Answer]]) -> None:
    url, heads, answers = server
    answers.append(_switch)
    async with await KubeClientFactory.from_text(_kubeconfig(url), name="sim-1", **OPTIONS) as factory:
        answer = await upgrade(factory.api_client(), "POST", "/api/v1/namespaces/n/pods/p/exec",
                               query=[("command", "env"), ("stdout", "true")],
                               headers=[("Upgrade", "SPDY/3.1"), ("X-Stream-Protocol-Version", "v4.channel.k8s.io"),
                                        ("X-Stream-Protocol-Version", "v3.channel.k8s.io")])
    assert answer.status == 101 and answer.headers["x-stream-protocol-version"] == "v4.channel.k8s.io"
    assert heads[0][0] == "POST /clusters/sim-1/api/v1/namespaces/n/pods/p/exec?command=env&stdout=true HTTP/1.1"
    assert "authorization: bearer s3cret" in [h.lower() for h in heads[0]]
    assert [h for h in heads[0] if h.startswith("X-Stream-Protocol-Version")] == [
        "X-Stream-Protocol-Version: v4.channel.k8s.io", "X-Stream-Protocol-Version: v3.channel.k8s.io"]
    assert answer.reader is not None and answer.writer is not None
    assert await answer.reader.readexactly(5) == b"hello"
    answer.writer.write(b"ping")
    assert await answer.reader.read() == b"echo ping"
    answer.close()


@pytest.mark.parametrize(("answer", "status", "body"), [(_refuse_by_length, 403, b'{"code": 403}'),
                                                         (_refuse_chunked, 400, b"container not found")])
async def test_a_refusal_is_its_status_and_whole_body(server: tuple[str, list[list[str]], list[Answer]],
                                                      answer: Answer, status: int, body: bytes) -> None:
    url, _, answers = server
    answers.append(answer)
    async with await KubeClientFactory.from_text(_kubeconfig(url), name="sim-1", **OPTIONS) as factory:
        refused = await upgrade(factory.api_client(), "POST", "/x", query=[], headers=[("Upgrade", "SPDY/3.1")])
    assert (refused.status, refused.body, refused.reader) == (status, body, None)
