"""The fan-out benchmark: many watches in one process, cheap enough not to be the bottleneck.

Run without a mode (`python bench/fanout_watchers.py`), it is the benchmark: a kcp-apiserver, 1,000 watchers
of one namespace and a writer, first at a low rate (20 writes/s: what latency batching adds when there is
little to batch), then at a high one (200 writes/s: what a delivery costs the server); both are printed and
written to bench/results/fanout-<time>.json. Each phase runs this file as a child process in `read` mode,
as bench_apiserver.py's fan-out section does. Each watch is a raw HTTP/1.1 connection over TLS on
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
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

import aiohttp

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


async def bench(args: argparse.Namespace) -> None:
    """Both rates against one server, back to back (the machines are shared and noisy)."""
    from bench_apiserver import Bench, KcpServer, free_port, tree_cpu_seconds, write_at_rate

    server = KcpServer(Path(tempfile.mkdtemp(prefix="kcp-fanout-")), free_port(), ["--log-level", "warning"])
    server.start()
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "watchers": args.watchers, "seconds": args.seconds, "payload": args.payload}
    try:
        assert server.process is not None
        pid = server.process.pid
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            client = Bench(server, session)
            await client.namespace("fanout-base")  # the writes alone, without watchers: what a write costs
            base = int(max(args.rates) * 5)
            cpu = tree_cpu_seconds(pid)
            await write_at_rate(client, "/api/v1/namespaces/fanout-base/configmaps", base, max(args.rates),
                                "x" * args.payload)
            cpu_per_write = (tree_cpu_seconds(pid) - cpu) / base
            for rate in args.rates:
                results[f"{rate:g}_per_s"] = await phase(client, pid, args, rate, cpu_per_write)
    finally:
        server.stop()
    out = args.out / f"fanout-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"fan-out to {args.watchers} watchers ({args.payload}-byte ConfigMaps, {args.seconds:g} s per rate)")
    for rate in args.rates:
        row = results[f"{rate:g}_per_s"]
        print(f"  {rate:>5g} writes/s: delivery p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, "
              f"max {row['max_ms']:.1f} ms; server {row['server_us_per_delivery_net_of_writes']:.2f} us per "
              f"delivery net of writes ({row['server_us_per_delivery']:.2f} us gross); "
              f"{row['deliveries']}/{row['expected']} delivered")
    print(f"written to {out}")


async def phase(client: Any, pid: int, args: argparse.Namespace, rate: float, cpu_per_write: float) -> dict[str, Any]:
    """One rate: a namespace of its own, `args.watchers` watches of it in a child process, then the writer."""
    from bench_apiserver import WatcherProcess, tree_cpu_seconds, write_at_rate

    namespace = f"fanout-{rate:g}".replace(".", "-")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await client.namespace(namespace)
    rv = json.loads(await client.get(path))["metadata"]["resourceVersion"]
    readers = WatcherProcess(client, "read", path, rv, args.watchers)
    await readers.ready()
    count = int(rate * args.seconds)
    cpu = tree_cpu_seconds(pid)
    acks = await write_at_rate(client, path, count, rate, "x" * args.payload)
    await readers.delivered(count * args.watchers)  # the CPU is counted until the last delivery
    server_cpu = tree_cpu_seconds(pid) - cpu
    args.out.mkdir(parents=True, exist_ok=True)
    acks_file = args.out / f"fanout-acks-{namespace}.bin"
    acks_file.write_bytes(memoryview(array("d", acks)).tobytes())
    got = await readers.finish(f"done {acks_file}")
    acks_file.unlink()
    deliveries = max(1, got["deliveries"])
    return {"rate_per_s": rate, "writes": count, "deliveries": got["deliveries"], "expected": count * args.watchers,
            "p50_ms": round(got["p50_ms"] or 0.0, 1), "p99_ms": round(got["p99_ms"] or 0.0, 1),
            "max_ms": round(got["max_ms"] or 0.0, 1), "server_cpu_s": round(server_cpu, 2),
            "server_us_per_delivery": round(server_cpu / deliveries * 1e6, 2),
            "server_us_per_delivery_net_of_writes": round((server_cpu - cpu_per_write * count) / deliveries * 1e6, 2),
            "client_cpu_s": round(got["cpu_s"], 2), "readers_closed": got["closed_by_server"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", nargs="?", default="bench", choices=("bench", "read", "idle"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    parser.add_argument("--path")
    parser.add_argument("--rv")
    parser.add_argument("--token")
    parser.add_argument("--cafile")
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--rates", type=float, nargs="+", default=[20.0, 200.0], help="bench: writes/s of each phase")
    parser.add_argument("--seconds", type=float, default=15.0, help="bench: seconds each phase writes")
    parser.add_argument("--payload", type=int, default=256, help="bench: bytes of data per ConfigMap")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    if args.mode == "bench":
        asyncio.run(bench(args))
        return
    if None in (args.port, args.path, args.rv, args.token, args.cafile):
        parser.error("read and idle need --port, --path, --rv, --token and --cafile")
    try:
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
