"""Benchmark (not a test): what one long-lived TLS watch costs a client process, with asyncio's TLS read buffer
and with kcpcommon.tlsbuffers' smaller one, in one run on the same kcp.

Each variant runs in a fresh process (the buffer size is process-wide): it lists ConfigMaps once, then holds N
watches open through kcpcommon's client (as a syncer's informers do) and reports the RSS they added per watch and
the time a 5,000-object list takes to read (the larger reads the buffer size could slow down).

    python bench/bench_tls_buffers.py [--watches 200] [--objects 5000]

Prints a summary and writes bench/results/tls-buffers-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from kcp_process import KcpServer, free_port  # noqa: E402

DEFAULT_BUFFER = 256 * 1024  # asyncio's own (sslproto.SSLProtocol.max_size in CPython 3.11+)


def rss_mib() -> float:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure(kubeconfig: str, watches: int, buffer: int) -> dict[str, float]:
    from kcpcommon.clients import ClientFactory
    from kcpcommon.tlsbuffers import shrink_tls_read_buffers

    shrink_tls_read_buffers(buffer)
    async with await ClientFactory.load(kubeconfig, component="bench-tls", version="0", qps=0) as factory:
        configmaps = factory.dynamic("bench").resource("v1", "configmaps", namespaced=True)
        started = time.perf_counter()
        listed = await configmaps.list(namespace="default")
        list_seconds = time.perf_counter() - started
        before = rss_mib()

        async def hold() -> None:
            async for _ in configmaps.watch_stream(namespace="default", timeout_seconds=120,
                                                   resource_version=listed["metadata"]["resourceVersion"]):
                pass

        tasks = [asyncio.create_task(hold()) for _ in range(watches)]
        await asyncio.sleep(5)  # every watch open and idle
        added = rss_mib() - before
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"buffer_bytes": buffer, "watches": watches, "rss_added_mib": round(added, 1),
            "kib_per_watch": round(added * 1024 / watches, 1), "list_seconds": round(list_seconds, 3),
            "listed": len(listed.get("items") or [])}


def variant(kubeconfig: Path, watches: int, buffer: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", str(kubeconfig), "--watches", str(watches),
                          "--buffer", str(buffer)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fill(kcp: KcpServer, objects: int) -> None:
    """`objects` ConfigMaps of ~1 KiB in logical cluster `bench`, from a child process (kubectl-free)."""
    code = f"""
import asyncio
from kcpcommon.clients import ClientFactory
async def main():
    async with await ClientFactory.load({str(kcp.kubeconfig)!r}, component="bench-tls", version="0", qps=0) as f:
        cms = f.dynamic("bench").resource("v1", "configmaps", namespaced=True)
        sem = asyncio.Semaphore(32)
        async def one(i):
            async with sem:
                await cms.create({{"metadata": {{"name": f"cm-{{i}}"}}, "data": {{"v": "x" * 1000}}}}, namespace="default")
        await asyncio.gather(*(one(i) for i in range({objects})))
asyncio.run(main())
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--child", default="")
    parser.add_argument("--buffer", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure(args.child, args.watches, args.buffer))))
        return
    from kcpcommon.tlsbuffers import READ_BUFFER

    with tempfile.TemporaryDirectory(prefix="bench-tls-") as tmp:
        kcp = KcpServer(Path(tmp) / "kcp", free_port())
        kcp.start()
        try:
            fill(kcp, args.objects)
            runs = [variant(kcp.kubeconfig, args.watches, size)
                    for size in (DEFAULT_BUFFER, READ_BUFFER, DEFAULT_BUFFER, READ_BUFFER)]
        finally:
            kcp.stop()
    result = {"watches": args.watches, "objects": args.objects, "runs": runs,
              "ratio_kib_per_watch": round(min(r["kib_per_watch"] for r in runs if r["buffer_bytes"] == READ_BUFFER)
                                           / min(r["kib_per_watch"] for r in runs
                                                 if r["buffer_bytes"] == DEFAULT_BUFFER), 3)}
    out = REPO / "bench" / "results" / f"tls-buffers-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"{'buffer':>8} {'KiB/watch':>10} {'list s':>8}")
    for run in runs:
        print(f"{run['buffer_bytes'] // 1024:>7}K {run['kib_per_watch']:>10} {run['list_seconds']:>8}")
    print(f"RSS per watch, {READ_BUFFER // 1024} KiB buffer / asyncio's: {result['ratio_kib_per_watch']}  ({out})")


if __name__ == "__main__":
    main()
