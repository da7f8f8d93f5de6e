"""Controllers are Ready on a fresh kcp, before any SyncTarget imports the types they watch.

A new kcp serves no Deployments until a physical cluster brings them in, so a splitter that waited
to list them stayed 503 on /readyz and `helm install --wait` never finished. Ready means: the
informers of the types that are served have listed, and the rest are followed until they appear.
"""

from __future__ import annotations

from pathlib import Path

from daemon_process import ClusterControllerProcess
from splitter_fixtures import DEPLOYMENTS, SplitterProcess, deployment, replicas_of, set_ready
from syncer_fixtures import Rest, create_sync_target, eventually, install_types

from kcp_process import KcpServer, free_port


def test_splitter_and_cluster_controller_are_ready_on_a_fresh_kcp_and_split_once_deployments_are_imported(
        tmp_path: Path) -> None:
    server = KcpServer(tmp_path / "kcp", free_port())
    server.start()
    splitter = SplitterProcess(server, tmp_path / "splitter.log", ["--no-leader-elect"])
    controller = ClusterControllerProcess(server, tmp_path / "controller.log", ["--no-leader-elect"])
    try:
        rest = Rest(server).at("fresh")
        assert rest.request("GET", DEPLOYMENTS)[0] == 404  # nothing imported: Deployments are not served
        splitter.start(wait_ready=False)
        controller.start()
        eventually(splitter.ready, f"splitter ready on a fresh kcp ({splitter.log_tail()})")
        eventually(controller.ready, f"cluster controller ready on a fresh kcp ({controller.log_tail()})")
        # the SyncTargets below are made Ready by hand and point at no cluster: a running cluster controller
        # would find them unreachable and mark them NotReady, racing the split
        assert controller.stop() == 0, controller.log_tail()
        install_types(rest)  # what the cluster controller imports from a SyncTarget's physical cluster
        for target in ("east", "west"):
            create_sync_target(rest, target)
            set_ready(rest, target, True)
        rest.create(DEPLOYMENTS, deployment("web", 4))
        eventually(lambda: replicas_of(rest, "web") == {"east": 2, "west": 2},
                   f"web split once Deployments are served ({splitter.log_tail()})", timeout=90)
        # PodDisruptionBudgets stay unserved (nothing imported them): said once, not warned at every retry
        budgets = [line for line in splitter.log_path.read_text().splitlines() if "poddisruptionbudgets" in line]
        assert [line for line in budgets if "type not served" in line] and not [
            line for line in budgets if "list/watch failed" in line], budgets
    finally:
        for process in (splitter, controller):
            if process.alive():
                process.stop()
        server.stop()
