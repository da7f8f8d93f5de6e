"""The client side of the fan-out benchmark: many watches in one process, cheap enough not to be the bottleneck.

Run by bench_apiserver.py as a child process. Each watch is a raw HTTP/1.1 connection over TLS on
uvloop (no HTTP client library: a chunk of bytes is scanned once for the names of the objects it
carries and every receipt is stamped with the monotonic clock, shared by every process of the
machine). Modes:

- `read`: read everything; on "count" on stdin, print the deliveries so far; on "done <acks file>",
  print delivery-latency figures as JSON.
- `idle`: never read after the response headers (the kernel's receive buffer is kept small); on
  "done", print how many of the watches the server closed.

Prints "ready" once every watch has its response headers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import ssl
import sys
import time
from array import array
from pathlib import Path

NAME = re.compile(rb'"name":"f-(\d+)"')
TAIL = 64  # bytes kept between two reads: a name split across them is still found


class Watch(asyncio.Protocol):
    def __init__(self, request: bytes, idle: bool, indexes: array[int], stamps: array[float],
                 headers: asyncio.Event, counter: list[int], total: int) -> None:
        self.request = request
        self.idle = idle
        self.indexes, self.stamps = indexes, stamps
        self.headers = headers
        self.counter, self.total = counter, total
        self.started = False
        self.buf = b""
        self.closed_by_server = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if not self.started:
            self.buf += data
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            if not self.buf.startswith(b"HTTP/1.1 200"):
                sys.stderr.write(self.buf[:300].decode(errors="replace") + "\n")
            self.started = True
            data, self.buf = self.buf[end + 4:], b""
            self.counter[0] += 1
            if self.counter[0] == self.total:
                self.headers.set()
            if self.idle:
                assert self.transport is not None
                self.transport.pause_reading()
                return
        text = self.buf + data
        for match in NAME.finditer(text):
            if match.end() > len(self.buf):  # not already counted in the previous read's tail
                self.indexes.append(int(match.group(1)))
                self.stamps.append(now)
        self.buf = text[-TAIL:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed_by_server = True


def cpu_seconds(pid: str = "self") -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks of 10 ms


async def main_async(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    ctx = ssl.create_default_context(cafile=args.cafile)
    host, port = args.host, args.port
    request = (f"GET {args.path}?watch=1&resourceVersion={args.rv}&timeoutSeconds=3600 HTTP/1.1\r\n"
               f"Host: {host}:{port}\r\nAuthorization: Bearer {args.token}\r\n"
               "Accept: application/json\r\n\r\n").encode()
    indexes: array[int] = array("q")
    stamps: array[float] = array("d")
    headers = asyncio.Event()
    counter = [0]
    watches: list[Watch] = []
    for _ in range(args.watchers):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if args.mode == "idle":  # keep what the kernel holds for a client that never reads small
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, port))
        _, proto = await loop.create_connection(
            lambda: Watch(request, args.mode == "idle", indexes, stamps, headers, counter, args.watchers),
            sock=sock, ssl=ctx, server_hostname=host)
        watches.append(proto)
    await asyncio.wait_for(headers.wait(), 120)
    print("ready", flush=True)
    cpu_start = cpu_seconds()
    while (line := await loop.run_in_executor(None, sys.stdin.readline)).startswith("count"):
        print(len(indexes), flush=True)  # deliveries so far
    cpu = cpu_seconds() - cpu_start
    closed = sum(w.closed_by_server for w in watches)
    if args.mode == "idle" or len(line.split()) < 2:
        print(json.dumps({"closed_by_server": closed, "cpu_s": cpu}), flush=True)
        return
    result = latency(Path(line.split(maxsplit=1)[1].strip()), indexes, stamps)
    print(json.dumps(dict(result, closed_by_server=closed, cpu_s=cpu)), flush=True)


def latency(acks_file: Path, indexes: array[int], stamps: array[float]) -> dict[str, float | None]:
    """From each write's acknowledgement (the writer's clock, the same monotonic clock) to each receipt."""
    acks = array("d")
    acks.frombytes(acks_file.read_bytes())
    latencies = sorted(stamps[i] - acks[indexes[i]] for i in range(len(indexes)) if indexes[i] < len(acks))
    n = len(latencies)
    return {"deliveries": n, "p50_ms": latencies[n // 2] * 1000 if n else None,
            "p99_ms": latencies[min(n - 1, int(n * 0.99))] * 1000 if n else None,
            "max_ms": latencies[-1] * 1000 if n else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("read", "idle"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--rv", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--watchers", type=int, default=1000)
    args = parser.parse_args()
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
