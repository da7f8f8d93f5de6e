"""Processes and a tiny REST client for the syncer's end-to-end tests (and its benchmark).

kcp is a kcp-apiserver; a physical cluster is a `python -m kcp_sim_cluster`; a syncer is
`python -m kcp_syncer`. kcp serves no workload types of its own (the cluster controller imports
them as CRDs), so `install_types` creates the CRDs the tests sync, and the SyncTarget CRD.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from daemon_process import DaemonProcess

from kcp_process import REPO, KcpServer, ServedFromRoot, free_port, sim_cluster_command, sim_cluster_env

T = TypeVar("T")
PATIENCE = 60.0  # seconds: generous, the machine is shared
ASSIGNMENT_LABEL = "workloads.kcp.io/cluster"

OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(group: str, plural: str, kind: str, *, version: str = "v1", scope: str = "Namespaced",
        short_names: tuple[str, ...] = ()) -> dict[str, Any]:
    names: dict[str, Any] = {"plural": plural, "singular": kind.lower(), "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group or 'core'}"},  # the core group's CRDs are <plural>.core
            "spec": {"group": group, "scope": scope, "names": names,
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "subresources": {"status": {}}, "schema": {"openAPIV3Schema": OPEN}}]}}


SYNC_TARGET_CRD = crd("workload.kcp.io", "synctargets", "SyncTarget", version="v1alpha1", scope="Cluster",
                      short_names=("cluster", "clusters"))
DEPLOYMENT_CRD = crd("apps", "deployments", "Deployment")
SERVICE_CRD = crd("", "services", "Service")


class Rest:
    """Blocking JSON requests to one server (a logical cluster's prefix optional), for polling tests."""

    def __init__(self, server: ServedFromRoot, prefix: str = "") -> None:
        self.server = server
        self.prefix = prefix
        self._ssl = server.ssl_context()
        self._token = server.token

    def at(self, cluster: str) -> Rest:
        return Rest(self.server, f"/clusters/{cluster}")

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", accept: str = "application/json") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server.url + self.prefix + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Accept": accept, "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def get(self, path: str) -> Any:
        """The object, or None on 404."""
        status, body = self.request("GET", path)
        if status == 404:
            return None
        assert status == 200, (status, body)
        return body

    def create(self, path: str, body: Any) -> Any:
        status, answer = self.request("POST", path, body)
        assert status in (200, 201), (status, answer)
        return answer

    def patch(self, path: str, body: Any, kind: str = "merge") -> Any:
        content_type = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}[kind]
        status, answer = self.request("PATCH", path, body, content_type=content_type)
        assert status == 200, (status, answer)
        return answer

    def delete(self, path: str) -> int:
        status, _ = self.request("DELETE", path)
        return status


def eventually(probe: Callable[[], T | None], what: str, timeout: float = PATIENCE) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout}s: {what} (last: {last!r})")


def install_types(kcp: Rest, *extra: dict[str, Any]) -> None:
    """The CRDs a cluster controller would have imported (and `extra` ones), plus the SyncTarget CRD, established."""
    definitions = (SYNC_TARGET_CRD, DEPLOYMENT_CRD, SERVICE_CRD, *extra)
    for definition in definitions:
        status, body = kcp.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", definition)
        assert status in (201, 409), (status, body)
    for definition in definitions:
        name = definition["metadata"]["name"]

        def established(name: str = name) -> bool:
            crd_obj = kcp.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}") or {}
            return any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd_obj.get("status") or {}).get("conditions") or [])
        eventually(established, f"CRD {name} established")


def create_sync_target(kcp: Rest, name: str) -> None:
    status, body = kcp.request("POST", "/apis/workload.kcp.io/v1alpha1/synctargets", {
        "apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
        "spec": {"kubeconfig": "(the syncer is started by the test)"}})
    assert status in (201, 409), (status, body)


def sim_cluster(root: Path, *args: str) -> KcpServer:
    return KcpServer(root, free_port(), ["--nodes", "2", "--ready-delay", "0.2", *args],
                     command=sim_cluster_command(), env=sim_cluster_env())


def syncer_env() -> dict[str, str]:
    env = sim_cluster_env()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "services" / "syncer"), env["PYTHONPATH"]])
    return env


@dataclass
class SyncerProcess(DaemonProcess):
    """`python -m kcp_syncer` between a kcp and a physical cluster."""

    kcp: KcpServer
    physical: ServedFromRoot  # a kcp-sim-cluster or a real control plane: only its kubeconfig is read
    sync_target: str
    logical_cluster: str
    log_path: Path
    resources: str = "deployments.apps,configmaps,services"
    extra: list[str] = field(default_factory=list)
    health_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    name = "syncer"

    def start(self) -> SyncerProcess:
        self.launch("kcp_syncer", ["--from-kubeconfig", str(self.kcp.kubeconfig), "--to-kubeconfig",
                                   str(self.physical.kubeconfig), "--sync-target", self.sync_target,
                                   "--logical-cluster", self.logical_cluster, "--resources", self.resources,
                                   "--heartbeat-interval", "1", *self.extra], syncer_env())
        eventually(self.ready, f"syncer {self.sync_target} ready ({self.log_tail()})")
        return self
