"""A quantity the user wrote non-canonically (`cpu: "0.5"`) against a cluster that stores it canonical (`500m`,
as a real kube-apiserver and kcp-sim-cluster do): the syncer applies it once and does not write it again.

The sync is ordered per object: once a later upstream change to the same Deployment has landed downstream,
every earlier event on it (the downstream informer reporting `500m`, its status) has been reconciled, so the
syncer's write counter then says whether it re-applied only to change a quantity's spelling.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from syncer_fixtures import (
    ASSIGNMENT_LABEL,
    Rest,
    SyncerProcess,
    create_sync_target,
    eventually,
    install_types,
    sim_cluster,
)

from kcp_process import KcpServer, free_port
from kcpsyncer import downstream_namespace

LC = "quantities"
PATH = "/apis/apps/v1/namespaces/{}/deployments"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Rest, Rest, SyncerProcess]]:
    root: Path = tmp_path_factory.mktemp("quantities")
    kcp, east = KcpServer(root / "kcp", free_port()), sim_cluster(root / "east")
    started: list[KcpServer] = []
    syncer: SyncerProcess | None = None
    try:
        for server in (kcp, east):
            server.start()
            started.append(server)
        up = Rest(kcp).at(LC)
        install_types(up)
        create_sync_target(up, "east")
        syncer = SyncerProcess(kcp, east, "east", LC, root / "syncer.log").start()
        yield up, Rest(east), syncer
        assert syncer.stop() == 0, syncer.log_tail()
    finally:
        if syncer is not None:
            syncer.stop()
        for server in started:
            server.stop()


def deployment_writes(syncer: SyncerProcess) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in syncer.metrics().splitlines()
               if line.startswith("kcp_syncer_synced_objects_total{") and 'direction="down"' in line
               and "deployments" in line)


def test_a_quantity_stored_canonical_downstream_is_not_written_again(env: tuple[Rest, Rest, SyncerProcess]) -> None:
    up, east, syncer = env
    mapped = downstream_namespace(LC, "default")
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {ASSIGNMENT_LABEL: "east"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                     {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}}}]}}}}
    up.create(PATH.format("default"), body)
    down = eventually(lambda: east.get(PATH.format(mapped) + "/web"), "the Deployment downstream")
    container = down["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}  # stored as kube stores it
    eventually(lambda: (up.get(PATH.format("default") + "/web").get("status") or {}).get("readyReplicas") == 1,
               "the downstream status upstream")

    up.patch(PATH.format("default") + "/web", {"metadata": {"labels": {"tier": "web"}}})
    eventually(lambda: east.get(PATH.format(mapped) + "/web")["metadata"]["labels"].get("tier") == "web",
               "the later upstream change downstream")
    # the counter moves once the apply has answered, which may be after the label is seen downstream
    eventually(lambda: deployment_writes(syncer) >= 2, "the label's write counted")
    assert deployment_writes(syncer) == 2  # the first apply and the label: none for the spelling of 0.5
