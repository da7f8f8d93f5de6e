"""An HTTP/1.1 upgrade to a protocol aiohttp's client does not speak (SPDY/3.1, kube's streams before
WebSockets), with a client's own server, credentials and TLS: the answer's status, headers and body, and
after `101 Switching Protocols` the connection's bytes both ways.

aiohttp's client treats only `websocket` and `tcp` as upgrades, so the request is written on a socket of
our own; the TLS context is built from the kubeconfig's configuration as kubernetes_asyncio builds its own.
An HTTP proxy is not used here (a kubeconfig's `proxy-url` reaches the cluster's WebSockets, not this).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from yarl import URL

from .transport import AUTH_SETTINGS, ThrottledApiClient

HEAD_LIMIT = 64 * 1024
BODY_LIMIT = 1024 * 1024


@dataclass
class Upgraded:
    """The server's answer; `reader`/`writer` carry the upgraded connection when `status` is 101."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    reader: asyncio.StreamReader | None = field(default=None, repr=False)
    writer: asyncio.StreamWriter | None = field(default=None, repr=False)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _tls(client: ThrottledApiClient) -> ssl.SSLContext:
    configuration = client.configuration
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


async def _body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    """A refusal's body: by its length, chunked, or to the end of the connection."""
    if "content-length" in headers:
        return await reader.readexactly(min(int(headers["content-length"]), BODY_LIMIT))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
            chunks.append(await reader.readexactly(size))
            await reader.readline()
        return b"".join(chunks)
    return await reader.read(BODY_LIMIT)


async def upgrade(client: ThrottledApiClient, method: str, path: str, *, query: Sequence[tuple[str, str]],
                  headers: Sequence[tuple[str, str]], timeout: float = 30.0) -> Upgraded:  # noqa: ASYNC109
    """`method` on `path` below `client`'s base URL asking for an upgrade (`headers` name it; a name may
    repeat, as kube's X-Stream-Protocol-Version does)."""
    all_headers = dict(client.default_headers)
    params = list(query)
    await client.update_params_for_auth(all_headers, params, AUTH_SETTINGS)
    url = URL((client.configuration.host or "") + path)
    secure = url.scheme == "https"
    target = url.raw_path + ("?" + urlencode(params) if params else "")
    await client.bucket.acquire()
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(
            url.host, url.port, ssl=_tls(client) if secure else None,
            server_hostname=(client.configuration.tls_server_name or url.host) if secure else None,
            limit=HEAD_LIMIT)
        try:
            lines = [f"{method} {target} HTTP/1.1", f"Host: {url.raw_authority}", "Content-Length: 0",
                     *(f"{k}: {v}" for k, v in [*all_headers.items(), *headers])]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            await writer.drain()
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            status = int(head[0].split(" ", 2)[1])
            answer = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
            if status == 101:
                return Upgraded(status, answer, reader=reader, writer=writer)
            body = await _body(reader, answer)
        except BaseException:
            writer.close()
            raise
    writer.close()
    return Upgraded(status, answer, body)
