"""A namespace on the cluster is deleted with nothing synced left only if nothing else is in it (issue 26): kcp, a
simulated cluster and the cluster controller running its syncer (push mode). A StatefulSet deleted through kcp
leaves its claims, Bound, on the cluster by default (`persistentVolumeClaimRetentionPolicy` Retain, as kube
does), and their namespace stays, annotated with what keeps it, until the user deletes them; with `whenDeleted:
Delete` the claims go with it, and the namespace too. A ConfigMap made on the cluster by hand keeps its
namespace as well."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mirror_fixtures import OneClusterFleet, one_cluster_fleet
from syncer_fixtures import eventually

from kcp_process import run_kubectl
from kcpsyncer.names import KEPT_ANNOTATION, downstream_namespace

KEPT_CLAIMS = "persistentvolumeclaims/data-web-0, persistentvolumeclaims/data-web-1"
STATEFULSET = """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{workloads.kcp.io/cluster: east}}
spec:
  replicas: 2
  serviceName: {name}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: {name}, image: nginx}}]
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 1Gi}}}}
"""
WORKLOADS = "\n---\n".join([
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: retain}",
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: scratch}",
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: notes}",
    STATEFULSET.format(name="web", namespace="retain"),
    STATEFULSET.format(name="cache", namespace="scratch")
    + "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: synced, namespace: notes, labels: "
    "{workloads.kcp.io/cluster: east}}\ndata: {a: '1'}"])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OneClusterFleet]:
    with one_cluster_fleet(tmp_path_factory.mktemp("kept-namespaces"), WORKLOADS) as fleet:
        yield fleet


def on_cluster(fleet: OneClusterFleet, *args: str) -> Any:
    """kubectl get ... -o json against the physical cluster; None when it fails (not found)."""
    result = run_kubectl(fleet.east, "get", *args, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def bound_claims(fleet: OneClusterFleet, namespace: str, count: int) -> dict[str, dict[str, Any]]:
    def bound() -> dict[str, dict[str, Any]] | None:
        items = (on_cluster(fleet, "pvc", "-n", namespace) or {}).get("items") or []
        claims = {c["metadata"]["name"]: c for c in items if (c.get("status") or {}).get("phase") == "Bound"}
        return claims if len(claims) == count else None

    return eventually(bound, f"{count} claims Bound in {namespace} on the cluster", timeout=90)


def gone_or_going(fleet: OneClusterFleet, namespace: str) -> bool:
    found = on_cluster(fleet, "namespace", namespace)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))


def kept_for(fleet: OneClusterFleet, namespace: str) -> str | None:
    found = on_cluster(fleet, "namespace", namespace) or {}
    return ((found.get("metadata") or {}).get("annotations") or {}).get(KEPT_ANNOTATION)


def test_a_statefulset_deleted_through_kcp_leaves_its_claims_and_their_namespace(fleet: OneClusterFleet) -> None:
    mapped = downstream_namespace("tenant", "retain")
    claims = bound_claims(fleet, mapped, 2)
    assert not any(c["metadata"].get("ownerReferences") for c in claims.values())  # Retain: nothing owns them

    run_kubectl(fleet.kcp, "delete", "statefulset", "web", "-n", "retain", kubeconfig=fleet.kubeconfig)
    eventually(lambda: kept_for(fleet, mapped) == KEPT_CLAIMS, "the namespace annotated with the claims it keeps",
               timeout=90)
    namespace = on_cluster(fleet, "namespace", mapped)
    assert namespace["status"]["phase"] == "Active" and not namespace["metadata"].get("deletionTimestamp")
    assert on_cluster(fleet, "statefulset", "web", "-n", mapped) is None  # the StatefulSet did go
    left = {c["metadata"]["name"]: c for c in on_cluster(fleet, "pvc", "-n", mapped)["items"]}
    assert {name: c["metadata"]["uid"] for name, c in left.items()} == \
        {name: c["metadata"]["uid"] for name, c in claims.items()}
    assert all(c["status"]["phase"] == "Bound" and not c["metadata"].get("deletionTimestamp") for c in left.values())
    mirrored = run_kubectl(fleet.kcp, "get", "pvc", "-n", "retain", "-o", "name", kubeconfig=fleet.kubeconfig).stdout
    assert mirrored.split() == ["persistentvolumeclaim/data-web-0", "persistentvolumeclaim/data-web-1"]

    # the user lets them go, through kcp: the claims go from the cluster, and the namespace with them
    run_kubectl(fleet.kcp, "delete", "pvc", "data-web-0", "data-web-1", "-n", "retain", kubeconfig=fleet.kubeconfig)
    eventually(lambda: gone_or_going(fleet, mapped), "the emptied namespace deleted", timeout=90)


def test_a_statefulset_whose_claims_go_when_it_is_deleted_takes_them_and_the_namespace(
        fleet: OneClusterFleet) -> None:
    mapped = downstream_namespace("tenant", "scratch")
    claims = bound_claims(fleet, mapped, 2)
    assert all(c["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet" for c in claims.values())

    run_kubectl(fleet.kcp, "delete", "statefulset", "cache", "-n", "scratch", kubeconfig=fleet.kubeconfig)
    eventually(lambda: gone_or_going(fleet, mapped), "the namespace deleted with the claims", timeout=90)


def test_an_object_made_on_the_cluster_by_hand_keeps_its_namespace_until_it_goes(fleet: OneClusterFleet) -> None:
    mapped = downstream_namespace("tenant", "notes")
    eventually(lambda: on_cluster(fleet, "configmap", "synced", "-n", mapped), "the ConfigMap synced down")
    run_kubectl(fleet.east, "create", "configmap", "mine", "-n", mapped, "--from-literal=b=2")

    run_kubectl(fleet.kcp, "delete", "configmap", "synced", "-n", "notes", kubeconfig=fleet.kubeconfig)
    eventually(lambda: kept_for(fleet, mapped) == "configmaps/mine", "the namespace annotated with what keeps it",
               timeout=90)
    assert on_cluster(fleet, "configmap", "synced", "-n", mapped) is None
    assert not gone_or_going(fleet, mapped)
    assert on_cluster(fleet, "configmap", "mine", "-n", mapped)["data"] == {"b": "2"}

    run_kubectl(fleet.east, "delete", "configmap", "mine", "-n", mapped)  # nothing watches it: looked at again
    eventually(lambda: gone_or_going(fleet, mapped), "the namespace deleted once the ConfigMap went", timeout=90)
