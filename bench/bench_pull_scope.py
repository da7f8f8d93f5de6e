"""Benchmark of a pull-mode syncer confined to its own namespaces (not a test): a kcp-apiserver, one
kcp-sim-cluster (RBAC on), `python -m kcp_cluster_controller --syncer-mode pull`, and the syncer it installs,
run as a process with the installed flags and credentials.

1. Bind delay: `--namespaces` upstream namespaces, one ConfigMap each, made one after the other. For each,
   the time from just before the upstream ConfigMap's create to its ADDED in an admin watch on the physical
   cluster: the syncer makes the namespace, its writes there are refused (403) and retried until the
   controller's RoleBinding lands. The first namespace shows that alone; the others also wait for the
   namespaces before them (a namespaced type's cache counts as listed only once every namespace of the
   syncer's has listed, and a new namespace's first lists are refused until bound). The syncer's own log
   timestamps are not used: under a burst of refusals they lag by tenths of a second.
2. Watches: the physical cluster's `apiserver_registered_watchers` with the syncer synced, before and
   after those namespaces exist (per-namespace reflectors: namespaces x namespaced types, plus Events).

Prints a summary and writes bench/results/pull-scope-<time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "bench"))

from bench_apiserver import percentile  # noqa: E402
from bench_sync import Side, configmap  # noqa: E402
from daemon_process import ClusterControllerProcess  # noqa: E402
from syncer_fixtures import Rest, eventually, sim_cluster, syncer_env  # noqa: E402
from test_cluster_controller import CRD_FILE, installed_syncer, sync_target  # noqa: E402

from kcp_process import KcpServer, cluster_kubeconfig, free_port, run_kubectl  # noqa: E402
from kcpsyncer import downstream_namespace  # noqa: E402

LC, TARGET = "bench-pull", "east"


async def watchers(side: Side) -> int:
    async with side.session.get(side.base + "/metrics", headers=side.headers, ssl=side.ssl) as resp:
        text = await resp.text()
    found = re.search(r"^apiserver_registered_watchers(?:\{[^}]*\})? ([0-9.e+]+)$", text, re.MULTILINE)
    return int(float(found.group(1))) if found else -1


async def settle(side: Side, seconds: float = 3.0) -> int:
    """The watcher count once it has stopped changing for `seconds` (reflectors start over a moment)."""
    last, since = await watchers(side), time.monotonic()
    while time.monotonic() - since < seconds:
        await asyncio.sleep(0.5)
        now = await watchers(side)
        if now != last:
            last, since = now, time.monotonic()
    return last


async def measure(args: argparse.Namespace, kcp: KcpServer, sim: KcpServer) -> dict[str, Any]:
    up = Rest(kcp).at(LC)
    names = [f"ns-{i}" for i in range(args.namespaces)]
    mapped = {downstream_namespace(LC, name): name for name in names}
    written: dict[str, float] = {}  # upstream namespace -> wall clock
    asked: dict[str, float] = {}

    def on_configmap(kind: str, obj: dict[str, Any]) -> None:
        if kind == "ADDED" and obj["metadata"]["namespace"] in mapped:
            written.setdefault(mapped[obj["metadata"]["namespace"]], time.time())

    async with aiohttp.ClientSession() as session:
        down = Side(sim, session)
        before = await settle(down)
        started = asyncio.Event()
        tasks = [asyncio.ensure_future(down.watch("/api/v1/configmaps", on_configmap, started))]
        await started.wait()
        for name in names:
            up.create("/api/v1/namespaces", {"metadata": {"name": name}})
            asked[name] = time.time()
            up.create(f"/api/v1/namespaces/{name}/configmaps", configmap("bind-probe"))
        deadline = time.monotonic() + 120
        while len(written) < len(names) and time.monotonic() < deadline:  # noqa: ASYNC110 - a bounded poll
            await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        after = await settle(down)
    waits = sorted(written[ns] - asked[ns] for ns in written)
    return {"namespaces": args.namespaces, "interval": args.interval, "written": len(written),
            "create_to_written_s": {name: written[name] - asked[name] for name in sorted(written)},
            "first_namespace_s": written[names[0]] - asked[names[0]] if names[0] in written else None,
            "p50_s": percentile(waits, 50) if waits else None, "max_s": waits[-1] if waits else None,
            "watchers": {"synced_no_namespaces": before, "with_namespaces": after,
                         "per_namespace": (after - before) / max(1, args.namespaces)}}


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    kcp, sim = KcpServer(root / "kcp", free_port()), sim_cluster(root / "sim")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "pull", "--no-leader-elect", "--heartbeat-interval", str(args.interval)])
    syncer: subprocess.Popen[bytes] | None = None
    try:
        kcp.start()
        sim.start()
        controller.start()
        kubeconfig = cluster_kubeconfig(kcp, LC, LC)
        run_kubectl(kcp, "apply", "-f", str(CRD_FILE), kubeconfig=kubeconfig)
        eventually(lambda: run_kubectl(kcp, "get", "synctargets", kubeconfig=kubeconfig, check=False).returncode == 0,
                   "SyncTargets served")
        run_kubectl(kcp, "apply", "-f", "-", input_text=sync_target(TARGET, sim), kubeconfig=kubeconfig)
        command = installed_syncer(sim, TARGET, root / "syncer")
        with open(root / "syncer.log", "ab") as log:
            syncer = subprocess.Popen(command, stdout=log, stderr=log, env=syncer_env(), start_new_session=True)
        run_kubectl(kcp, "wait", f"synctarget/{TARGET}", "--for", "condition=Ready", "--timeout=60s",
                    kubeconfig=kubeconfig, timeout=70)
        results = asyncio.run(measure(args, kcp, sim))
        types = [json.loads(line) for line in (root / "syncer.log").read_text().splitlines()
                 if '"syncing type"' in line]
        results["types_per_namespace"] = sum(1 for t in types if t.get("per_namespace"))
        results["types_cluster_wide"] = sum(1 for t in types if not t.get("per_namespace"))
        return results
    finally:
        if syncer is not None:
            syncer.send_signal(signal.SIGTERM)
            syncer.wait(30)
        controller.stop()
        sim.stop()
        kcp.stop()


def summary(results: dict[str, Any]) -> str:
    w = results["watchers"]
    return "\n".join([
        f"pull-mode syncer, {results['namespaces']} fresh namespaces, controller pass every {results['interval']} s:",
        f"  upstream create -> written into a new namespace: first namespace {results['first_namespace_s']:.2f} s; "
        f"all: p50 {results['p50_s']:.2f} s, max {results['max_s']:.2f} s "
        f"({results['written']}/{results['namespaces']} written)",
        f"  synced types: {results['types_per_namespace']} watched per namespace (+ pods mirrored, and Events; "
        f"claims are synced and mirrored through one cache), "
        f"{results['types_cluster_wide']} cluster-wide",
        f"  sim watchers: {w['synced_no_namespaces']} synced with no namespace of its own, {w['with_namespaces']} with "
        f"them ({w['per_namespace']:.1f} per namespace)"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--interval", type=float, default=2.0, help="the controller's --heartbeat-interval")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--keep", type=Path, help="run under this directory and keep the logs")
    args = parser.parse_args()
    if args.keep is not None:
        results = run(args, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            results = run(args, Path(tmp))
    print(summary(results))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"pull-scope-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
