"""Shared compute's end-to-end setting (issue 25): kcp with token users, one kcp-sim-cluster serving N clusters, the
cluster controller in push mode exporting kcp's APIs from the compute workspace, and the splitter; and the API moves
its tests make as the admin and as teams (kubeconfigs per workspace and user, bind roles, bindings)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from daemon_process import ClusterControllerProcess
from splitter_fixtures import SplitterProcess
from syncer_fixtures import sim_cluster

from kcp_process import KcpServer, free_port, run_kubectl, token_auth

COMPUTE = "compute"
CONTROLLER = Path(__file__).parents[2] / "services/cluster-controller/kcp_cluster_controller"


class WithKcp(Protocol):
    kcp: KcpServer


@dataclass
class Fleet:
    kcp: KcpServer
    sim: KcpServer  # its clusters' kubeconfigs: sim.root / "sim-<i>.kubeconfig"
    controller: ClusterControllerProcess
    splitter: SplitterProcess


@contextlib.contextmanager
def compute_fleet(root: Path, users: Mapping[str, tuple[str, str]], clusters: int) -> Iterator[Fleet]:
    """Every process started, stopped at the end (the daemons must stop cleanly)."""
    kcp = KcpServer(root / "kcp", free_port())
    kcp.extra_args = token_auth(root, users)
    sim = sim_cluster(root / "fleet", "--clusters", str(clusters))
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5",
        "--api-export-workspace", COMPUTE])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "5"])
    started: list[Any] = []
    try:
        for server in (kcp, sim):
            server.start()
            started.append(server)
        controller.start()
        started.append(controller)
        splitter.start()
        started.append(splitter)
        yield Fleet(kcp, sim, controller, splitter)
        assert splitter.stop() == 0, splitter.log_tail(60)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        for process in reversed(started):
            process.stop()


def kubeconfig(kcp: KcpServer, cluster: str, name: str, token: str | None = None) -> Path:
    """kcp's admin kubeconfig pointed at `cluster`, as kcp-admin or as the user holding `token`."""
    config = yaml.safe_load(kcp.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    config["clusters"] = [{"name": name, "cluster": {**config["clusters"][0]["cluster"],
                                                     "server": f"{server}/clusters/{cluster}"}}]
    user = {"name": name, "user": {"token": token}} if token else {**config["users"][0], "name": name}
    config["users"] = [user]
    config["contexts"] = [{"name": name, "context": {"cluster": name, "user": name}}]
    config["current-context"] = name
    path = kcp.root / f"kubeconfig-{name}"
    path.write_text(yaml.safe_dump(config))
    return path


def kubectl(env: WithKcp, config: Path, *args: str, input_text: str | None = None, check: bool = True) -> str:
    return run_kubectl(env.kcp, *args, kubeconfig=config, input_text=input_text, check=check).stdout


def apply(env: WithKcp, config: Path, *objects: dict[str, Any]) -> None:
    kubectl(env, config, "apply", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                  "items": list(objects)}))


def bind_role(name: str, group: str, resource: str, names: list[str], subject: str) -> list[dict[str, Any]]:
    """A ClusterRole granting `bind` on named objects, bound to the group `subject`."""
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
             "rules": [{"apiGroups": [group], "resources": [resource], "resourceNames": names, "verbs": ["bind"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": subject}]}]


def binding(export: str) -> dict[str, Any]:
    """An APIBinding to one of the compute workspace's exports."""
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": export},
            "spec": {"reference": {"export": {"path": COMPUTE, "name": export}}}}
