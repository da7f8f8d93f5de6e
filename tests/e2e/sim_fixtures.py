"""What the kcp-sim-cluster e2e files share: a started sim, kubectl against it, and waiting on what it answers."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kcp_process import KcpServer, free_port, run_kubectl, sim_cluster_command, sim_cluster_env

PATIENCE = 60.0  # seconds: generous, the machine is shared


@contextlib.contextmanager
def running_sim(root: Path, *flags: str) -> Iterator[KcpServer]:
    """A kcp-sim-cluster with these flags, stopped (and checked to stop cleanly) afterwards."""
    server = KcpServer(root, free_port(), list(flags), command=sim_cluster_command(), env=sim_cluster_env())
    server.start(timeout=120)
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log_tail()


def kubectl(server: KcpServer, *args: str, **kwargs: Any) -> str:
    return run_kubectl(server, *args, **kwargs).stdout


def get(server: KcpServer, *what: str) -> Any:
    return json.loads(kubectl(server, "get", *what, "-o", "json"))


def fetched_when(fetch: Callable[[], Any], holds: Callable[[Any], bool], what: str,
                 patience: float = PATIENCE) -> Any:
    """Fetch until the answer satisfies `holds`; return it."""
    deadline = time.monotonic() + patience
    while True:
        obj = fetch()
        if holds(obj):
            return obj
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {obj}")
        time.sleep(0.2)
