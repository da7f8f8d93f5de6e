"""Benchmark of kcp-apiserver against raw etcd in the same run (not a test).

Prints a summary and writes bench/results/apiserver-<time>.json. Figures that
compare (API vs raw etcd puts) are measured in one run, back to back, because
the machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

import aiohttp
import orjson

REPO = Path(__file__).resolve().parents[1]
SECTIONS = ("create", "managed-fields", "apply", "patch", "get", "rbac", "list", "watch-start", "watch", "list-big", "fanout")
RBAC_TOKEN = "bench-rbac-token"  # a user of the --token-auth-file the benchmark gives the server
RBAC_CLUSTER = "/clusters/rbac-bench"
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from kcp_process import KcpServer, free_port  # noqa: E402

WATCHERS_CLIENT = Path(__file__).resolve().parent / "fanout_watchers.py"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_children(pid: int) -> list[int]:
    """A server's child processes that are not etcd (its worker processes)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = []
    for child in children.read_text().split() if children.exists() else []:
        try:
            if b"etcd" not in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0]:
                found.append(int(child))
        except FileNotFoundError:  # exited in between
            pass
    return found


def tree_rss_kib(pid: int) -> int:
    """RSS of a process and its worker processes."""
    return rss_kib(pid) + sum(rss_kib(child) for child in server_children(pid))


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and its worker processes (with --workers, watchers are spread over all of them)."""
    return cpu_seconds(pid) + sum(cpu_seconds(child) for child in server_children(pid))


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def cm(name: str, payload: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"bench": "yes"}},
            "data": {"payload": payload, "owner": "bench"}}


async def run_concurrent(count: int, concurrency: int, op) -> float:  # type: ignore[no-untyped-def]
    """Run op(i) for i in range(count) with `concurrency` in flight; returns ops/s."""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            i = next_index
            next_index += 1
            await op(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - started)


APPLY_FIELDS = 30  # fields of the custom resource the apply section applies


class Bench:
    def __init__(self, server: KcpServer, session: aiohttp.ClientSession, token: str | None = None) -> None:
        self.server = server
        self.session = session
        self.ssl = server.ssl_context()
        self.headers = {"Authorization": f"Bearer {token or server.token}", "Content-Type": "application/json",
                        "Accept": "application/json"}

    async def post(self, path: str, body: dict[str, Any]) -> None:
        async with self.session.post(self.server.url + path, data=orjson.dumps(body), headers=self.headers,
                                     ssl=self.ssl) as resp:
            if resp.status != 201:
                raise RuntimeError(f"create failed: {resp.status} {await resp.text()}")
            await resp.read()

    async def get(self, path: str) -> bytes:
        async with self.session.get(self.server.url + path, headers=self.headers, ssl=self.ssl) as resp:
            body = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"get failed: {resp.status} {body[:200]!r}")
            return body

    async def namespace(self, name: str) -> None:
        await self.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def patch(self, path: str, body: dict[str, Any], expect: int | None = 200) -> int:
        """A JSON merge patch; its status code (anything but `expect` raises, unless expect is None)."""
        headers = {**self.headers, "Content-Type": "application/merge-patch+json"}
        async with self.session.patch(self.server.url + path, data=orjson.dumps(body), headers=headers,
                                      ssl=self.ssl) as resp:
            await resp.read()
            if expect is not None and resp.status != expect:
                raise RuntimeError(f"patch failed: {resp.status}")
            return resp.status

    async def apply(self, path: str, body: dict[str, Any], manager: str) -> None:
        headers = {**self.headers, "Content-Type": "application/apply-patch+yaml"}
        async with self.session.patch(self.server.url + path, data=orjson.dumps(body), headers=headers,
                                      params={"fieldManager": manager}, ssl=self.ssl) as resp:
            if resp.status not in (200, 201):
                raise RuntimeError(f"apply failed: {resp.status} {await resp.text()}")
            await resp.read()


async def count_added(bench: Bench, path: str, count: int, watching: asyncio.Event, done: asyncio.Event) -> None:
    """Watch `path` from now until `count` ADDED events have arrived."""
    seen = 0
    async with bench.session.get(bench.server.url + path, params={"watch": "1"}, headers=bench.headers,
                                 ssl=bench.ssl, timeout=aiohttp.ClientTimeout(total=None)) as resp:
        watching.set()
        async for line in resp.content:
            if line.startswith(b'{"type":"ADDED"'):
                seen += 1
                if seen >= count:
                    done.set()
                    return


async def managed_fields_cost(bench: Bench, untracked: Bench, count: int, payload: str,
                              rounds: int = 5) -> dict[str, Any]:
    """Create throughput at c=32 with managedFields tracking (`bench`) and without (`untracked`, a server
    started with --no-track-managed-fields), in alternating rounds so drift hits both alike."""
    rates: dict[str, list[float]] = {"tracked": [], "untracked": []}
    for round_ in range(rounds):
        for label, target in (("tracked", bench), ("untracked", untracked)):
            ns = f"mf-{label}-{round_}"
            await target.namespace(ns)

            async def op(i: int, ns: str = ns, target: Bench = target) -> None:
                await target.post(f"/api/v1/namespaces/{ns}/configmaps", cm(f"cm-{i}", payload))

            rates[label].append(await run_concurrent(count, 32, op))
    tracked, untracked_rate = max(rates["tracked"]), max(rates["untracked"])
    medians = {k: statistics.median(v) for k, v in rates.items()}
    return {"tracked_per_s": round(tracked, 1), "untracked_per_s": round(untracked_rate, 1),
            "ratio": round(tracked / untracked_rate, 3),
            "median_ratio": round(medians["tracked"] / medians["untracked"], 3), "count": count, "rounds": rounds,
            "all": {k: [round(v, 1) for v in vs] for k, vs in rates.items()}}


def gadget_crd() -> dict[str, Any]:
    fields = {f"f{i:02d}": {"type": "integer"} if i % 2 else {"type": "string"} for i in range(APPLY_FIELDS)}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.bench.example.com"},
            "spec": {"group": "bench.example.com", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": fields}}}}}]}}


def gadget(name: str, generation: int) -> dict[str, Any]:
    spec = {f"f{i:02d}": generation + i if i % 2 else f"value-{generation}-{i}" for i in range(APPLY_FIELDS)}
    return {"apiVersion": "bench.example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


async def apply_throughput(bench: Bench, count: int) -> dict[str, Any]:
    """Server-side apply of a 30-field custom resource at c=32: creating by apply, then changing every field."""
    await bench.apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.bench.example.com",
                      gadget_crd(), "bench")
    await bench.namespace("apply")
    path = "/apis/bench.example.com/v1/namespaces/apply/gadgets/"
    for _ in range(300):  # the CRD is served once established
        async with bench.session.get(bench.server.url + path[:-1], headers=bench.headers, ssl=bench.ssl) as resp:
            await resp.read()
            if resp.status == 200:
                break
        await asyncio.sleep(0.1)
    created = await run_concurrent(count, 32, lambda i: bench.apply(path + f"g-{i}", gadget(f"g-{i}", 0), "bench"))
    changed = await run_concurrent(count, 32, lambda i: bench.apply(path + f"g-{i}", gadget(f"g-{i}", 1), "bench"))
    unchanged = await run_concurrent(count, 32, lambda i: bench.apply(path + f"g-{i}", gadget(f"g-{i}", 1), "bench"))
    return {"fields": APPLY_FIELDS, "count": count, "create_per_s": round(created, 1),
            "change_per_s": round(changed, 1), "unchanged_per_s": round(unchanged, 1)}


async def patch_throughput(bench: Bench, count: int, contended_clients: int = 32,
                           contended_patches: int = 20) -> dict[str, Any]:
    """Blind JSON merge patches at c=32: of `count` distinct ConfigMaps (each patched once), then of one
    ConfigMap by `contended_clients` clients at once (each patch adds its own key: none may be lost)."""
    await bench.namespace("patch")
    path = "/api/v1/namespaces/patch/configmaps"
    await run_concurrent(count, 32, lambda i: bench.post(path, cm(f"cm-{i}", "x")))
    distinct = await run_concurrent(count, 32, lambda i: bench.patch(f"{path}/cm-{i}", {"data": {"n": "1"}}))
    await bench.post(path, cm("contended", "x"))
    codes: dict[int, int] = {}

    async def client(c: int) -> None:
        for j in range(contended_patches):
            code = await bench.patch(f"{path}/contended", {"data": {f"c{c}-{j}": "1"}}, expect=None)
            codes[code] = codes.get(code, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in range(contended_clients)))
    contended = contended_clients * contended_patches / (time.perf_counter() - started)
    return {"count": count, "distinct_per_s": round(distinct, 1), "contended_per_s": round(contended, 1),
            "contended_clients": contended_clients, "contended_patches": contended_patches,
            "contended_codes": {str(k): v for k, v in sorted(codes.items())}}


async def etcd_puts(endpoint: str, objects: list[tuple[str, bytes]], concurrency: int) -> float:
    from etcd3aio import Etcd3Client

    client = Etcd3Client([endpoint])
    await client.connect()
    try:
        assert client.kv is not None
        kv = client.kv

        async def op(i: int) -> None:
            await kv.put(objects[i][0], objects[i][1])

        return await run_concurrent(len(objects), concurrency, op)
    finally:
        await client.close()


async def watch_latency(bench: Bench, ns: str, watchers: int, events: int) -> dict[str, float]:
    """Open many watches, write objects stamped with the send time, measure delivery."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    rv = orjson.loads(await bench.get(path))["metadata"]["resourceVersion"]
    latencies: list[float] = []
    ready = 0
    all_ready = asyncio.Event()
    sent: dict[str, float] = {}

    async def watch_one() -> None:
        nonlocal ready
        url = f"{bench.server.url}{path}?watch=1&resourceVersion={rv}&timeoutSeconds=300"
        async with bench.session.get(url, headers=bench.headers, ssl=bench.ssl,
                                     timeout=aiohttp.ClientTimeout(total=None)) as resp:
            ready += 1
            if ready == watchers:
                all_ready.set()
            seen = 0
            async for line in resp.content:
                now = time.perf_counter()
                marker = line.find(b'"name":"lat-')
                if marker < 0:
                    continue
                name = line[marker + 8: line.index(b'"', marker + 8)].decode()
                latencies.append(now - sent[name])
                seen += 1
                if seen == events:
                    return

    tasks = [asyncio.create_task(watch_one()) for _ in range(watchers)]
    await asyncio.wait_for(all_ready.wait(), 120)
    await asyncio.sleep(1.0)
    rss_with_watchers = tree_rss_kib(bench.server.process.pid)  # type: ignore[union-attr]
    for i in range(events):
        name = f"lat-{i}"
        sent[name] = time.perf_counter()
        await bench.post(path, cm(name, "x"))
        await asyncio.sleep(0.2)
    await asyncio.wait_for(asyncio.gather(*tasks), 120)
    return {"watchers": watchers, "events": events, "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000, "samples": len(latencies), "rss_kib": rss_with_watchers}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (clock ticks of 10 ms)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


async def write_at_rate(bench: Bench, path: str, count: int, rate: float, payload: str,
                        prefix: str = "f") -> list[float]:
    """Create `count` objects at `rate`/s on a fixed schedule; returns each write's acknowledgement time."""
    loop = asyncio.get_running_loop()
    acks = [0.0] * count
    in_flight = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with in_flight:
            await bench.post(path, cm(f"{prefix}-{i}", payload))
            acks[i] = time.monotonic()

    tasks = []
    start = loop.time()
    for i in range(count):
        delay = start + i / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    return acks


async def registered_watchers(bench: Bench) -> int:
    """The server's open watch requests, from its /metrics."""
    for line in (await bench.get("/metrics")).decode().splitlines():
        if line.startswith("apiserver_registered_watchers "):
            return int(float(line.split()[1]))
    raise RuntimeError("apiserver_registered_watchers not in /metrics")


class WatcherProcess:
    """fanout_watchers.py in a process of its own: `watchers` watches, reading or never reading."""

    def __init__(self, bench: Bench, mode: str, path: str, rv: str, watchers: int) -> None:
        server = bench.server
        self.proc = subprocess.Popen(
            [sys.executable, str(WATCHERS_CLIENT), mode, "--port", str(server.port), "--path", path, "--rv", rv,
             "--token", server.token, "--cafile", str(server.root / "ca.crt"), "--watchers", str(watchers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    async def ready(self) -> None:
        assert self.proc.stdout is not None
        line = await asyncio.get_running_loop().run_in_executor(None, self.proc.stdout.readline)
        if line.strip() != "ready":
            raise RuntimeError(f"watcher process failed: {line!r}")

    async def ask(self, message: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(message + "\n")
        self.proc.stdin.flush()
        return await asyncio.get_running_loop().run_in_executor(None, self.proc.stdout.readline)

    async def delivered(self, expected: int, patience: float = 20.0, most: float = 60.0) -> int:
        """Wait until `expected` deliveries, none for `patience` seconds, or `most` seconds; returns the count."""
        last, last_change = -1, time.monotonic()
        give_up = last_change + most
        while True:
            count = int(await self.ask("count"))
            if count != last:
                last, last_change = count, time.monotonic()
            if count >= expected or time.monotonic() - last_change > patience or time.monotonic() > give_up:
                return count
            await asyncio.sleep(0.5)

    async def finish(self, message: str = "done") -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(message + "\n")
        self.proc.stdin.flush()
        line = await asyncio.get_running_loop().run_in_executor(None, self.proc.stdout.readline)
        self.proc.wait(60)
        return json.loads(line)


async def fanout(bench: Bench, args: argparse.Namespace, out_dir: Path) -> dict[str, Any]:
    """1,000 watchers of one namespace and a writer at a fixed rate: delivery latency, server CPU per delivery,
    RSS; then the RSS of as many watchers that never read while the writer goes on."""
    assert bench.server.process is not None
    pid = bench.server.process.pid
    count = int(args.fanout_rate * args.fanout_seconds)
    payload = "x" * args.payload
    await bench.namespace("fanout-base")
    base_count = int(args.fanout_rate * 10)  # the writes alone, without watchers: what a write costs the server
    cpu_before = tree_cpu_seconds(pid)
    await write_at_rate(bench, "/api/v1/namespaces/fanout-base/configmaps", base_count, args.fanout_rate, payload)
    cpu_per_write = (tree_cpu_seconds(pid) - cpu_before) / base_count

    await bench.namespace("fanout")
    path = "/api/v1/namespaces/fanout/configmaps"
    rv = orjson.loads(await bench.get(path))["metadata"]["resourceVersion"]
    readers = WatcherProcess(bench, "read", path, rv, args.fanout_watchers)
    await readers.ready()
    rss_watching = tree_rss_kib(pid)
    cpu_before = tree_cpu_seconds(pid)
    started = time.monotonic()
    acks = await write_at_rate(bench, path, count, args.fanout_rate, payload)
    write_seconds = time.monotonic() - started
    await readers.delivered(count * args.fanout_watchers)  # the CPU is counted until the last delivery
    drain_seconds = time.monotonic() - started - write_seconds
    server_cpu = tree_cpu_seconds(pid) - cpu_before
    rss_after = tree_rss_kib(pid)
    acks_file = out_dir / "fanout-acks.bin"
    acks_file.write_bytes(memoryview(array("d", acks)).tobytes())
    got = await readers.finish(f"done {acks_file}")
    acks_file.unlink()
    deliveries = got["deliveries"]

    await bench.namespace("fanout-idle")
    idle_path = "/api/v1/namespaces/fanout-idle/configmaps"
    rv = orjson.loads(await bench.get(idle_path))["metadata"]["resourceVersion"]
    rss_before_idle = tree_rss_kib(pid)
    idle = WatcherProcess(bench, "idle", idle_path, rv, args.fanout_watchers)
    await idle.ready()
    probe = WatcherProcess(bench, "read", idle_path, rv, 1)  # tells when every event has been dispatched
    await probe.ready()
    peaks = [tree_rss_kib(pid)]

    async def sample() -> None:
        while True:
            peaks.append(tree_rss_kib(pid))
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    await write_at_rate(bench, idle_path, args.idle_events, args.fanout_rate * 5, "y" * args.idle_payload)
    await probe.delivered(args.idle_events, patience=60.0)
    await asyncio.sleep(1.0)
    sampler.cancel()
    peak, rss_end = max(peaks), tree_rss_kib(pid)
    open_watches = await registered_watchers(bench)  # the probe's and any never-reading watch not closed
    idle_got = await idle.finish()
    await probe.finish()
    return {"watchers": args.fanout_watchers, "rate_per_s": args.fanout_rate, "seconds": args.fanout_seconds,
            "writes": count, "deliveries": deliveries, "expected": count * args.fanout_watchers,
            "p50_ms": round(got["p50_ms"], 1), "p99_ms": round(got["p99_ms"], 1), "max_ms": round(got["max_ms"], 1),
            "write_s": round(write_seconds, 1), "drain_s": round(drain_seconds, 1),
            "server_cpu_s": round(server_cpu, 2),
            "server_us_per_delivery": round(server_cpu / deliveries * 1e6, 2),
            "server_us_per_delivery_net_of_writes": round((server_cpu - cpu_per_write * count) / deliveries * 1e6, 2),
            "client_cpu_s": round(got["cpu_s"], 2), "rss_watching_kib": rss_watching, "rss_after_kib": rss_after,
            "readers_closed": got["closed_by_server"],
            "idle": {"watchers": args.fanout_watchers, "events": args.idle_events, "payload": args.idle_payload,
                     "rss_before_kib": rss_before_idle, "rss_peak_kib": peak, "rss_end_kib": rss_end,
                     "closed_by_server": args.fanout_watchers + 1 - open_watches,
                     "seen_closed_by_client": idle_got["closed_by_server"]}}


async def watch_start(bench: Bench, path: str, objects: int, repeats: int) -> dict[str, Any]:
    """A watch without resourceVersion: time to the first event and to the whole initial state."""
    first, whole = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        seen = 0
        async with bench.session.get(f"{bench.server.url}{path}?watch=1&timeoutSeconds=60", headers=bench.headers,
                                     ssl=bench.ssl, timeout=aiohttp.ClientTimeout(total=120)) as resp:
            async for _line in resp.content:
                seen += 1
                if seen == 1:
                    first.append(time.perf_counter() - started)
                if seen == objects:
                    whole.append(time.perf_counter() - started)
                    break
    return {"objects": objects, "first_event_best_ms": round(min(first) * 1000, 1),
            "initial_state_best_s": round(min(whole), 3), "initial_state_median_s": round(statistics.median(whole), 3)}


def rbac_object(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, **fields}


async def get_latencies(bench: Bench, path: str, count: int) -> dict[str, float]:
    for _ in range(50):
        await bench.get(path)
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        await bench.get(path)
        samples.append(time.perf_counter() - started)
    return {"p50_ms": round(percentile(samples, 50) * 1000, 3), "p99_ms": round(percentile(samples, 99) * 1000, 3)}


async def rbac_cost(admin: Bench, user: Bench, args: argparse.Namespace, payload: str) -> dict[str, Any]:
    """GET p50/p99 and create throughput at c=32 as a non-admin user whose rights come from a RoleBinding, in a
    logical cluster holding `--rbac-roles` Roles and RoleBindings, against the admin token, back to back."""
    base = f"{RBAC_CLUSTER}/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create"]}

    async def fill(i: int) -> None:
        await admin.post(f"{base}/roles", rbac_object("Role", f"role-{i}", rules=[{**rule, "resourceNames": [f"x{i}"]}]))
        await admin.post(f"{base}/rolebindings", rbac_object(
            "RoleBinding", f"binding-{i}", roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                    "name": f"role-{i}"},
            subjects=[{"kind": "User", "name": f"user-{i}"}, {"kind": "Group", "name": f"group-{i}"}]))

    await run_concurrent(args.rbac_roles, 32, fill)
    await admin.post(f"{base}/roles", rbac_object("Role", "bench", rules=[rule]))
    await admin.post(f"{base}/rolebindings", rbac_object(
        "RoleBinding", "bench", roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bench"},
        subjects=[{"kind": "User", "name": "bench-user"}]))
    cms = f"{RBAC_CLUSTER}/api/v1/namespaces/default/configmaps"
    await admin.post(cms, cm("cm-0", payload))
    for _ in range(200):  # the binding reaches the authorizer through a watch
        try:
            await user.get(f"{cms}/cm-0")
            break
        except RuntimeError:
            await asyncio.sleep(0.05)
    out: dict[str, Any] = {"roles_and_bindings": args.rbac_roles}
    whos = {"admin": admin, "rbac_user": user}
    for round_ in range(2):  # both orders, best of each kept: the shared machine's drift favours neither
        for label in (("admin", "rbac_user") if round_ == 0 else ("rbac_user", "admin")):
            who = whos[label]
            gets = await get_latencies(who, f"{cms}/cm-0", args.gets)

            async def op(i: int, who: Bench = who, name: str = f"{label.replace('_', '-')}-{round_}") -> None:
                await who.post(cms, cm(f"{name}-{i}", payload))

            rate = round(await run_concurrent(args.creates, 32, op), 1)
            best = out.setdefault(label, {"p50_ms": gets["p50_ms"], "p99_ms": gets["p99_ms"], "create_c32_per_s": 0})
            best["p50_ms"] = min(best["p50_ms"], gets["p50_ms"])
            best["p99_ms"] = min(best["p99_ms"], gets["p99_ms"])
            best["create_c32_per_s"] = max(best["create_c32_per_s"], rate)
    out["create_ratio"] = round(out["rbac_user"]["create_c32_per_s"] / out["admin"]["create_c32_per_s"], 3)
    out["get_p99_ratio"] = round(out["rbac_user"]["p99_ms"] / out["admin"]["p99_ms"], 3)
    return out


async def peak_rss_growth(pid: int, work) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    """Run `work()` while sampling the server's RSS every 5 ms: (peak growth over the start in KiB, seconds)."""
    before = peak = tree_rss_kib(pid)
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss_kib(pid))
            await asyncio.sleep(0.005)

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    try:
        await work()
    finally:
        elapsed = time.perf_counter() - started
        done.set()
        await sampler
    return max(peak, tree_rss_kib(pid)) - before, elapsed


async def list_big(bench: Bench, pid: int, objects: int, payload: str) -> dict[str, Any]:
    """An unpaged LIST of `objects` ConfigMaps, once and then 4 at once: the server's peak RSS growth and time."""
    await bench.namespace("list-big")
    path = "/api/v1/namespaces/list-big/configmaps"
    await run_concurrent(objects, 64, lambda i: bench.post(path, cm(f"item-{i}", payload)))
    for _ in range(300):  # every object written is in the watch cache: what a consistent list serves
        if len(orjson.loads(await bench.get(path + "?resourceVersion=0"))["items"]) == objects:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # let the fill's garbage settle before the baseline
    sizes: list[int] = []

    async def one() -> None:
        body = await bench.get(path)
        sizes.append(len(body))
        assert len(orjson.loads(body)["items"]) == objects

    async def four() -> None:
        await asyncio.gather(*(one() for _ in range(4)))

    single_kib, single_s = await peak_rss_growth(pid, one)
    await asyncio.sleep(1.0)
    four_kib, four_s = await peak_rss_growth(pid, four)
    return {"objects": objects, "body_bytes": sizes[0], "peak_rss_growth_mib": round(single_kib / 1024, 1),
            "time_s": round(single_s, 3), "four_at_once_peak_rss_growth_mib": round(four_kib / 1024, 1),
            "four_at_once_time_s": round(four_s, 3)}


async def main_async(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    from kcp_apiserver.storage.embedded_etcd import EmbeddedEtcd

    wanted = set(args.only)

    root = Path(tempfile.mkdtemp(prefix="kcp-bench-"))
    etcd = EmbeddedEtcd(root / "external")  # one etcd for the API server and the raw puts alike
    (root / "external").mkdir()
    await etcd.start()
    etcd_endpoint = etcd.endpoint
    assert etcd.process is not None
    etcd_pid = etcd.process.pid
    tokens = root / "tokens.csv"
    tokens.write_text(f"{RBAC_TOKEN},bench-user,bench-user-uid\n")
    server = KcpServer(root / "kcp", free_port(),
                       ["--log-level", args.log_level, "--etcd-servers", etcd_endpoint, "--workers", str(workers),
                        "--token-auth-file", str(tokens), *args.server_args])
    server.start()
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "server_args": args.server_args, "log_level": args.log_level,
                               "workers": workers}
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            bench = Bench(server, session)
            assert server.process is not None
            results["rss_idle_kib"] = tree_rss_kib(server.process.pid)
            payload = "x" * args.payload
            create: dict[str, Any] = {}
            for concurrency in (1, 32, 128) if "create" in wanted else ():
                ns = f"create-c{concurrency}"
                await bench.namespace(ns)
                count = args.creates if concurrency > 1 else max(args.creates // 4, 200)

                async def op(i: int, ns: str = ns) -> None:
                    await bench.post(f"/api/v1/namespaces/{ns}/configmaps", cm(f"cm-{i}", payload))

                # CPU per create, kcp's and etcd's, counted until a watch has received every create: the
                # watch cache's share of the work is then in, however far behind etcd it ran
                added = asyncio.Event()
                watching = asyncio.Event()
                watch = asyncio.ensure_future(count_added(bench, f"/api/v1/namespaces/{ns}/configmaps", count,
                                                          watching, added))
                await watching.wait()
                kcp_cpu, etcd_cpu = tree_cpu_seconds(server.process.pid), tree_cpu_seconds(etcd_pid)
                api_rate = await run_concurrent(count, concurrency, op)
                await asyncio.wait_for(added.wait(), 120)
                await watch
                kcp_cpu = tree_cpu_seconds(server.process.pid) - kcp_cpu
                etcd_cpu = tree_cpu_seconds(etcd_pid) - etcd_cpu
                objects = [(f"/bench-raw/c{concurrency}/cm-{i}", orjson.dumps(cm(f"cm-{i}", payload)))
                           for i in range(count)]
                etcd_rate = await etcd_puts(etcd_endpoint, objects, concurrency)
                create[str(concurrency)] = {"api_per_s": round(api_rate, 1), "etcd_put_per_s": round(etcd_rate, 1),
                                            "ratio": round(api_rate / etcd_rate, 3), "count": count,
                                            "kcp_cpu_us": round(kcp_cpu * 1e6 / count),
                                            "etcd_cpu_us": round(etcd_cpu * 1e6 / count)}
            if create:
                results["create"] = create

            if "managed-fields" in wanted:
                # two more servers on the same etcd, neither leading the controllers (the first one does):
                # the same work but for tracking, so the ratio is what tracking costs
                pair = [KcpServer(root / f"kcp-{label}", free_port(),
                                  ["--log-level", args.log_level, "--etcd-servers", etcd_endpoint, flag,
                                   *args.server_args])
                        for label, flag in (("tracked", "--track-managed-fields"),
                                            ("untracked", "--no-track-managed-fields"))]
                try:
                    for extra in pair:
                        extra.start()
                    results["managed_fields"] = await managed_fields_cost(
                        Bench(pair[0], session), Bench(pair[1], session), args.creates, payload)
                finally:
                    for extra in pair:
                        extra.stop()
            if "apply" in wanted:
                results["apply"] = await apply_throughput(bench, args.applies)

            if "patch" in wanted:
                results["patch"] = await patch_throughput(bench, args.patches)

            if "get" in wanted:
                await bench.namespace("get")
                await bench.post("/api/v1/namespaces/get/configmaps", cm("cm-0", payload))
                path = "/api/v1/namespaces/get/configmaps/cm-0"
                for _ in range(50):
                    await bench.get(path)
                samples = []
                for _ in range(args.gets):
                    started = time.perf_counter()
                    await bench.get(path)
                    samples.append(time.perf_counter() - started)
                results["get"] = {"p50_ms": round(percentile(samples, 50) * 1000, 3),
                                  "p99_ms": round(percentile(samples, 99) * 1000, 3), "count": len(samples)}

            if "rbac" in wanted:
                results["rbac"] = await rbac_cost(bench, Bench(server, session, RBAC_TOKEN), args, payload)

            if {"list", "watch-start"} & wanted:
                await bench.namespace("list10k")
                filled = await run_concurrent(args.list_objects, 64, lambda i: bench.post(
                    "/api/v1/namespaces/list10k/configmaps", cm(f"item-{i}", payload)))
                path = "/api/v1/namespaces/list10k/configmaps"
                for _ in range(100):  # measure the steady state: every object written is in the watch cache
                    if len(orjson.loads(await bench.get(path + "?resourceVersion=0"))["items"]) == args.list_objects:
                        break
                    await asyncio.sleep(0.1)
            if "list" in wanted:
                results["list"] = {"fill_per_s": round(filled, 1)}
                for label, query in (("consistent", ""), ("rv0", "?resourceVersion=0")):
                    list_times = []
                    for _ in range(args.repeats):
                        started = time.perf_counter()
                        body = await bench.get(path + query)
                        list_times.append(time.perf_counter() - started)
                    prefix = "" if label == "consistent" else "rv0_"
                    results["list"].update({"objects": len(orjson.loads(body)["items"]),
                                            f"{prefix}best_s": round(min(list_times), 3),
                                            f"{prefix}median_s": round(statistics.median(list_times), 3)})
            if "watch-start" in wanted:
                results["watch_start"] = await watch_start(bench, path, args.list_objects, args.repeats)
            results["rss_after_objects_kib"] = tree_rss_kib(server.process.pid)

            if "watch" in wanted:
                await bench.namespace("watch")
                results["watch"] = await watch_latency(bench, "watch", args.watchers, args.watch_events)

            if "list-big" in wanted:
                results["list_big"] = await list_big(bench, server.process.pid, args.big_list_objects, payload)
            if "fanout" in wanted:
                args.out.mkdir(parents=True, exist_ok=True)
                results["fanout"] = await fanout(bench, args, args.out)
    finally:
        server.stop()
        await etcd.stop()
    return results


def summary(results: dict[str, Any]) -> str:
    lines = [f"kcp-apiserver benchmark, {results['workers']} worker(s)", ""]
    for conc, row in results.get("create", {}).items():
        lines.append(f"create c={conc:>3}: {row['api_per_s']:>8.1f}/s   raw etcd put {row['etcd_put_per_s']:>8.1f}/s"
                     f"   ratio {row['ratio']:.2f}   CPU per create: kcp {row.get('kcp_cpu_us')} us, "
                     f"etcd {row.get('etcd_cpu_us')} us")
    mf = results.get("managed_fields")
    if mf is not None:
        lines.append(f"create c= 32 with managedFields {mf['tracked_per_s']:>8.1f}/s, without "
                     f"{mf['untracked_per_s']:>8.1f}/s   ratio {mf['ratio']:.2f} (best of {mf['rounds']} rounds; "
                     f"of the medians {mf['median_ratio']:.2f})")
    ap = results.get("apply")
    if ap is not None:
        lines.append(f"apply c=32, {ap['fields']}-field custom resource: create {ap['create_per_s']:.1f}/s, "
                     f"change {ap['change_per_s']:.1f}/s, unchanged {ap['unchanged_per_s']:.1f}/s")
    if "patch" in results:
        pt = results["patch"]
        lines.append(f"JSON merge patch c=32: {pt['distinct_per_s']:.1f}/s over {pt['count']} objects; one object "
                     f"patched by {pt['contended_clients']} clients x {pt['contended_patches']}: "
                     f"{pt['contended_per_s']:.1f}/s, answers {pt['contended_codes']}")
    if "get" in results:
        lines.append(f"GET unloaded: p50 {results['get']['p50_ms']:.2f} ms, p99 {results['get']['p99_ms']:.2f} ms")
    if "rbac" in results:
        r = results["rbac"]
        for label in ("admin", "rbac_user"):
            lines.append(f"RBAC ({r['roles_and_bindings']} Roles and RoleBindings), {label:>9}: GET p50 "
                         f"{r[label]['p50_ms']:.2f} ms, p99 {r[label]['p99_ms']:.2f} ms, create c=32 "
                         f"{r[label]['create_c32_per_s']:.1f}/s")
        lines.append(f"  RBAC user vs admin: create {r['create_ratio']:.2f}x, GET p99 {r['get_p99_ratio']:.2f}x")
    if "list" in results:
        row = results["list"]
        lines.append(f"LIST {row['objects']} objects: best {row['best_s']:.3f} s (consistent), "
                     f"{row['rv0_best_s']:.3f} s (resourceVersion=0)")
    if "watch_start" in results:
        row = results["watch_start"]
        lines.append(f"watch start without resourceVersion, {row['objects']} objects: first event "
                     f"{row['first_event_best_ms']:.1f} ms, whole initial state best {row['initial_state_best_s']:.3f} s")
    w = results.get("watch")
    if w is not None:
        lines.append(f"watch delivery, {w['watchers']} watchers: p50 {w['p50_ms']:.1f} ms, p99 {w['p99_ms']:.1f} ms")
    big = results.get("list_big")
    if big is not None:
        lines.append(f"LIST {big['objects'] // 1000}k unpaged: peak RSS growth {big['peak_rss_growth_mib']:.0f} MiB, "
                     f"{big['time_s']:.2f} s; 4 at once {big['four_at_once_peak_rss_growth_mib']:.0f} MiB, "
                     f"{big['four_at_once_time_s']:.2f} s ({big['body_bytes'] / 2**20:.0f} MiB each)")
    f = results.get("fanout")
    if f is not None:
        lines.append(f"fan-out, {f['watchers']} watchers, {f['rate_per_s']:.0f} writes/s for {f['seconds']:.0f} s: "
                     f"delivered {f['deliveries']}/{f['expected']} ({f['drain_s']:.1f} s after the last write), "
                     f"p50 {f['p50_ms']:.1f} ms, p99 {f['p99_ms']:.1f} ms")
        lines.append(f"  server CPU {f['server_us_per_delivery']:.2f} us/delivery "
                     f"({f['server_us_per_delivery_net_of_writes']:.2f} net of the writes), "
                     f"{f['server_cpu_s']:.1f} s server CPU, {f['client_cpu_s']:.1f} s client CPU; "
                     f"RSS {f['rss_watching_kib'] / 1024:.0f} MiB watching, {f['rss_after_kib'] / 1024:.0f} MiB after")
        i = f["idle"]
        lines.append(f"  {i['watchers']} never-reading watchers, {i['events']} events of {i['payload']} B: RSS peak "
                     f"{i['rss_peak_kib'] / 1024:.0f} MiB (before {i['rss_before_kib'] / 1024:.0f} MiB, "
                     f"after {i['rss_end_kib'] / 1024:.0f} MiB), "
                     f"{i['closed_by_server']} closed by the server")
    rss = f"RSS: idle {results['rss_idle_kib'] / 1024:.0f} MiB, after objects {results['rss_after_objects_kib'] / 1024:.0f} MiB"
    lines.append(rss + (f", with watchers {w['rss_kib'] / 1024:.0f} MiB" if w is not None else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--creates", type=int, default=3000)
    parser.add_argument("--applies", type=int, default=2000, help="custom resources applied in the apply section")
    parser.add_argument("--patches", type=int, default=2000, help="ConfigMaps patched once each in the patch section")
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--rbac-roles", type=int, default=1000, help="Roles and RoleBindings in the RBAC section's "
                                                                       "logical cluster")
    parser.add_argument("--list-objects", type=int, default=10_000)
    parser.add_argument("--big-list-objects", type=int, default=50_000, help="ConfigMaps in the unpaged LIST")
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--watch-events", type=int, default=100,
                        help="objects written while watched; p99 is over every delivery of every one")
    parser.add_argument("--fanout-watchers", type=int, default=1000)
    parser.add_argument("--fanout-rate", type=float, default=200.0, help="writes/s while the fan-out is measured")
    parser.add_argument("--fanout-seconds", type=float, default=30.0)
    parser.add_argument("--idle-events", type=int, default=2500,
                        help="objects written (at 5x the fan-out rate) while the never-reading watchers are open")
    parser.add_argument("--idle-payload", type=int, default=1500, help="bytes of data per object of that phase")
    parser.add_argument("--payload", type=int, default=256, help="bytes of data per ConfigMap")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--workers", type=int, nargs="+", default=[1],
                        help="worker counts to measure, one after the other in this run")
    parser.add_argument("--server-args", nargs="*", default=[], help="extra kcp-apiserver flags")
    parser.add_argument("--only", nargs="+", default=[s for s in SECTIONS if s != "list-big"], choices=SECTIONS,
                        help="measure only these sections")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each LIST and watch start; best is kept")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    try:  # the client side of 1,000 watches is measured too: keep its own event loop overhead small
        import uvloop  # type: ignore[import-not-found]

        uvloop.install()
    except ImportError:
        pass
    runs = [asyncio.run(main_async(args, workers)) for workers in args.workers]
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"apiserver-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(runs, indent=2))
    for results in runs:
        print(summary(results) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
