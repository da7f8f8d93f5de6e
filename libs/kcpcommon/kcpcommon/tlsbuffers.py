"""asyncio's TLS read buffer, sized for processes that hold many long-lived connections.

CPython's asyncio TLS transport (`asyncio.sslproto.SSLProtocol`) gives every connection a 256 KiB read buffer
(`max_size`) and keeps it for the connection's life. The daemons here hold or serve hundreds of watches, each a
connection for minutes: a syncer's engine per placed workspace opens ~50, the splitter one per type, kcp serves
them all. Measured with `bench/bench_tls_buffers.py`: 310 KiB of RSS per TLS watch with asyncio's buffer, 84 KiB
with 32 KiB reads. A 32 KiB read still takes a watch event, or a large list in a few more calls.
"""

from __future__ import annotations

import asyncio.sslproto

READ_BUFFER = 32 * 1024  # bytes read from a TLS connection at once


def shrink_tls_read_buffers(size: int | None = None) -> None:
    """Make every TLS connection opened from now on read at most `size` bytes at once (READ_BUFFER by default);
    never grows asyncio's own. Call once, before connecting or serving."""
    size = READ_BUFFER if size is None else size
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    if protocol is not None and 0 < size < int(getattr(protocol, "max_size", 0)):
        protocol.max_size = size
