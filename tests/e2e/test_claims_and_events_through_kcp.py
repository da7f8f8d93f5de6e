"""A StatefulSet's claims and its cluster's Events seen through kcp (issue 23): kcp, a simulated cluster, and the
cluster controller running its syncer (push mode). The claims the cluster's StatefulSet controller makes from
`volumeClaimTemplates` are mirrored into kcp, Bound; its SuccessfulCreate Events come up about kcp's
StatefulSet; a claim the user applied to kcp stays the user's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from mirror_fixtures import one_cluster_fleet
from syncer_fixtures import eventually

from kcp_process import KcpServer, run_kubectl

UPSYNCED = "state.workload.kcp.io/east"
CLAIMS = ("data-db-0", "data-db-1", "data-db-2")
WORKLOADS = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: mine
  labels: {workloads.kcp.io/cluster: east}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  labels: {workloads.kcp.io/cluster: east}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""


@dataclass
class Setup:
    kcp: KcpServer
    kubeconfig: Path
    mine: dict[str, Any]  # the user's own claim in kcp, as first read


def get(setup: Setup, *args: str) -> Any:
    listed = run_kubectl(setup.kcp, "get", *args, "-o", "json", kubeconfig=setup.kubeconfig, check=False)
    return yaml.safe_load(listed.stdout) if listed.returncode == 0 else None


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with one_cluster_fleet(tmp_path_factory.mktemp("claims-events"), WORKLOADS) as fleet:
        setup = Setup(fleet.kcp, fleet.kubeconfig, {})
        setup.mine = get(setup, "pvc", "mine")
        yield setup


def test_kubectl_get_pvc_through_kcp_lists_the_statefulset_s_claims_bound_with_their_cluster(setup: Setup) -> None:
    def bound() -> list[dict[str, Any]] | None:
        listed = get(setup, "pvc", "-l", f"{UPSYNCED}=Upsync")
        items = sorted((listed or {}).get("items") or [], key=lambda c: c["metadata"]["name"])
        ready = [c for c in items if (c.get("status") or {}).get("phase") == "Bound"]
        return items if len(ready) == len(CLAIMS) else None

    claims = eventually(bound, "the three claims mirrored into kcp, Bound", timeout=90)
    assert [c["metadata"]["name"] for c in claims] == list(CLAIMS)
    for claim in claims:
        assert claim["status"]["capacity"] == {"storage": "1Gi"}
        assert "workloads.kcp.io/cluster" not in claim["metadata"]["labels"]  # a mirror copy: never synced down
    printed = run_kubectl(setup.kcp, "get", "pvc", "-L", UPSYNCED, kubeconfig=setup.kubeconfig).stdout
    assert all(any(line.startswith(name) and "Bound" in line and "Upsync" in line for line in printed.splitlines())
               for name in CLAIMS), printed


def test_kubectl_describe_statefulset_through_kcp_shows_the_cluster_s_controller_events(setup: Setup) -> None:
    def described() -> str | None:
        out = run_kubectl(setup.kcp, "describe", "statefulset", "db", kubeconfig=setup.kubeconfig, check=False)
        return out.stdout if out.stdout.count("SuccessfulCreate") >= 2 else None

    printed = eventually(described, "the StatefulSet controller's events under describe", timeout=90)
    assert "create Pod db-0 in StatefulSet db successful" in printed
    sts_uid = get(setup, "statefulset", "db")["metadata"]["uid"]
    events = get(setup, "events", "--field-selector", "involvedObject.kind=StatefulSet,involvedObject.name=db")
    assert {e["involvedObject"]["uid"] for e in events["items"]} == {sts_uid}  # about kcp's StatefulSet


def test_a_claim_the_user_applied_to_kcp_is_left_alone(setup: Setup) -> None:
    eventually(lambda: len((get(setup, "pvc", "-l", f"{UPSYNCED}=Upsync") or {}).get("items") or []) == 3,
               "the mirror at work", timeout=90)
    mine = get(setup, "pvc", "mine")
    assert mine["metadata"]["uid"] == setup.mine["metadata"]["uid"]
    assert mine["spec"]["resources"] == {"requests": {"storage": "2Gi"}}
    assert mine["metadata"]["labels"].get(UPSYNCED) != "Upsync"
    assert mine["metadata"]["labels"]["workloads.kcp.io/cluster"] == "east"
