"""SPDY/3.1 framing, the part a port-forward needs: what kubectl's port-forward speaks inside its WebSocket
tunnel (`SPDY/3.1+portforward.k8s.io`), as client-go's spdystream does.

Frames: a control frame is `1 | version(15) | type(16) | flags(8) | length(24) | payload`, a data frame
`0 | stream id(31) | flags(8) | length(24) | data`. Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are
`count(32)` then `len(32) name len(32) value` pairs, zlib-compressed with the spec's dictionary, one
compression context per direction for the whole connection. Pure: bytes in, frames out, and back.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
RST_CANCEL = 5

# The SPDY/3 header dictionary (draft 3, section 2.6.10.1): length-prefixed header names and values, then text.
_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status 200_OK version HTTP/1.1 url public set-cookie "
    "keep-alive origin").split()
_TEXT = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
         "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
         "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
         "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
         "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
         "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.replace("_", " ").encode() for w in _WORDS) + _TEXT.encode()


@dataclass(frozen=True)
class Frame:
    control: bool
    kind: int  # a control frame's type; 0 for data
    flags: int
    stream: int  # the stream a frame is about (SYN_*, RST, HEADERS, WINDOW_UPDATE, data); 0 otherwise
    payload: bytes  # after the stream id (and SYN_STREAM's associated id, priority and slot)


class Framer:
    """One connection's frames both ways, with its two header compression contexts."""

    def __init__(self) -> None:
        self._buffer = b""
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        """Bytes from the peer -> the frames they complete."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            first, second = struct.unpack(">II", self._buffer[:8])
            length = second & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            body, self._buffer = self._buffer[8:8 + length], self._buffer[8 + length:]
            flags = second >> 24
            if first & 0x80000000:
                kind = first & 0xFFFF
                stream = struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF if kind in (
                    SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE) and len(body) >= 4 else 0
                payload = body[10:] if kind == SYN_STREAM else body[4:] if stream else body
                frames.append(Frame(True, kind, flags, stream, payload))
            else:
                frames.append(Frame(False, 0, flags, first & 0x7FFFFFFF, body))
        return frames

    def headers(self, block: bytes) -> dict[str, str]:
        """A compressed header block -> its headers (names lowercase, as SPDY sends them)."""
        raw = self._inflate.decompress(block)
        count, offset, found = struct.unpack(">I", raw[:4])[0], 4, {}
        for _ in range(count):
            size = struct.unpack(">I", raw[offset:offset + 4])[0]
            name = raw[offset + 4:offset + 4 + size].decode()
            offset += 4 + size
            size = struct.unpack(">I", raw[offset:offset + 4])[0]
            found[name] = raw[offset + 4:offset + 4 + size].decode()
            offset += 4 + size
        return found

    def _block(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers)) + b"".join(
            struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode() for k, v in headers.items())
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_reply(self, stream: int, headers: dict[str, str]) -> bytes:
        return control(SYN_REPLY, 0, struct.pack(">I", stream) + self._block(headers))

    def syn_stream(self, stream: int, headers: dict[str, str]) -> bytes:
        """The client's side (kcp's proxy will open streams; tests play kubectl)."""
        return control(SYN_STREAM, 0, struct.pack(">IIH", stream, 0, 0) + self._block(headers))


def control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data(stream: int, payload: bytes, *, fin: bool = False) -> bytes:
    return struct.pack(">II", stream & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(payload)) + payload


def ping(ping_id: bytes) -> bytes:
    return control(PING, 0, ping_id)


def rst(stream: int, status: int = RST_CANCEL) -> bytes:
    return control(RST_STREAM, 0, struct.pack(">II", stream, status))
