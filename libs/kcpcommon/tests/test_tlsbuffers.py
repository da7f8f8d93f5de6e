"""asyncio's TLS read buffer: shrunk for the daemons' many watches, never grown."""

from __future__ import annotations

import asyncio.sslproto
from collections.abc import Iterator

import pytest

from kcpcommon.tlsbuffers import READ_BUFFER, shrink_tls_read_buffers


@pytest.fixture
def asyncio_default() -> Iterator[int]:
    before = asyncio.sslproto.SSLProtocol.max_size
    yield before
    asyncio.sslproto.SSLProtocol.max_size = before


def test_connections_opened_after_read_at_most_the_smaller_buffer_and_it_never_grows(asyncio_default: int) -> None:
    asyncio.sslproto.SSLProtocol.max_size = 256 * 1024  # asyncio's own
    shrink_tls_read_buffers()
    assert asyncio.sslproto.SSLProtocol.max_size == READ_BUFFER < 256 * 1024
    shrink_tls_read_buffers(1024 * 1024)
    assert asyncio.sslproto.SSLProtocol.max_size == READ_BUFFER
    shrink_tls_read_buffers(0)
    assert asyncio.sslproto.SSLProtocol.max_size == READ_BUFFER
