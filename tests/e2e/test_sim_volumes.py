"""kcp-sim-cluster serves PersistentVolumes and binds claims to them as kube's PV controller does: a free
volume is Available, a claim of no class that it fits binds to it (the volume's claimRef, the claim's
volumeName, both Bound) and the volume is Released once the claim goes; a claim of a class that binds
Immediate gets a volume made for it, deleted with the claim (reclaim policy Delete).

Every wait polls a condition with a generous deadline, never a fixed sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sim_fixtures import fetched_when, get, kubectl, running_sim

from kcp_process import KcpServer, run_kubectl

VOLUME = """
apiVersion: v1
kind: PersistentVolume
metadata: {name: data, labels: {tier: gold}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /srv/data}
"""

CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: NAME}
spec:
  storageClassName: "CLASS"
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 500Mi}}
"""

FAST = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/fast
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    with running_sim(tmp_path_factory.mktemp("sim-volumes"), "--nodes", "1", "--ready-delay", "0") as server:
        yield server


def phase(obj: Any) -> str:
    return str((obj.get("status") or {}).get("phase", ""))


def test_a_claim_of_no_class_binds_to_a_volume_that_fits_and_releases_it(cluster: KcpServer) -> None:
    kubectl(cluster, "apply", "-f", "-", input_text=VOLUME)
    volume = fetched_when(lambda: get(cluster, "pv", "data"), lambda o: phase(o) == "Available", "an Available volume")
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"  # kube's default
    assert "Available" in kubectl(cluster, "get", "pv")

    kubectl(cluster, "apply", "-f", "-", input_text=CLAIM.replace("NAME", "static").replace("CLASS", ""))
    claim = fetched_when(lambda: get(cluster, "pvc", "static"), lambda o: phase(o) == "Bound", "the claim Bound")
    assert claim["spec"]["volumeName"] == "data"
    assert claim["status"]["capacity"] == {"storage": "1Gi"}  # the volume's, not the 500Mi asked for
    volume = fetched_when(lambda: get(cluster, "pv", "data"), lambda o: phase(o) == "Bound", "the volume Bound")
    assert volume["spec"]["claimRef"]["name"] == "static"
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]

    kubectl(cluster, "delete", "pvc", "static")
    fetched_when(lambda: get(cluster, "pv", "data"), lambda o: phase(o) == "Released", "the volume Released")


def test_a_claim_of_an_immediate_class_gets_a_volume_made_and_deleted_with_it(cluster: KcpServer) -> None:
    kubectl(cluster, "apply", "-f", "-", input_text=FAST)
    kubectl(cluster, "apply", "-f", "-", input_text=CLAIM.replace("NAME", "dynamic").replace("CLASS", "fast"))
    claim = fetched_when(lambda: get(cluster, "pvc", "dynamic"), lambda o: phase(o) == "Bound", "the claim Bound")
    name = f"pvc-{claim['metadata']['uid']}"
    assert claim["spec"]["volumeName"] == name
    volume = fetched_when(lambda: get(cluster, "pv", name), lambda o: phase(o) == "Bound", "the made volume Bound")
    assert volume["spec"]["storageClassName"] == "fast"
    assert volume["spec"]["capacity"] == {"storage": "500Mi"}
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"  # the class's default
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "example.com/fast"

    kubectl(cluster, "delete", "pvc", "dynamic")
    fetched_when(lambda: run_kubectl(cluster, "get", "pv", name, check=False).returncode, bool, "the volume deleted")


def test_claims_made_together_never_share_a_volume(cluster: KcpServer) -> None:
    volumes = "\n---\n".join(VOLUME.replace("name: data", f"name: pool-{i}").replace("tier: gold", "pool: p")
                             for i in range(3))
    kubectl(cluster, "apply", "-f", "-", input_text=volumes)
    claims = "\n---\n".join(CLAIM.replace("NAME", f"pooled-{i}").replace("CLASS", "").replace(
        "accessModes", "selector: {matchLabels: {pool: p}}\n  accessModes") for i in range(6))
    kubectl(cluster, "apply", "-f", "-", input_text=claims)
    bound = fetched_when(lambda: [c for c in get(cluster, "pvc")["items"] if c["metadata"]["name"].startswith("pooled-")
                                  and phase(c) == "Bound"], lambda b: len(b) == 3, "three claims bound")
    pool = {v["metadata"]["name"]: v for v in get(cluster, "pv")["items"] if v["metadata"]["name"].startswith("pool-")}
    assert sorted(c["spec"]["volumeName"] for c in bound) == sorted(pool)  # each volume once
    for claim in bound:
        ref = pool[claim["spec"]["volumeName"]]["spec"]["claimRef"]
        assert (ref["name"], ref["uid"]) == (claim["metadata"]["name"], claim["metadata"]["uid"])


USER = """
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: held}}]
"""


def test_a_claim_in_use_and_its_bound_volume_are_kept_until_the_pod_goes(cluster: KcpServer) -> None:
    """kube's storage-object-in-use protection: the finalizers come at create, and hold a delete while in use."""
    kubectl(cluster, "apply", "-f", "-", input_text=FAST)
    kubectl(cluster, "apply", "-f", "-", input_text=CLAIM.replace("NAME", "held").replace("CLASS", "fast"))
    claim = fetched_when(lambda: get(cluster, "pvc", "held"), lambda o: phase(o) == "Bound", "the claim Bound")
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume = claim["spec"]["volumeName"]
    assert get(cluster, "pv", volume)["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    kubectl(cluster, "apply", "-f", "-", input_text=USER)
    fetched_when(lambda: get(cluster, "pod", "user"), lambda o: phase(o) == "Running", "the pod Running")

    kubectl(cluster, "delete", "pvc", "held", "--wait=false")
    kubectl(cluster, "delete", "pv", volume, "--wait=false")
    held = fetched_when(lambda: get(cluster, "pvc", "held"), lambda o: "deletionTimestamp" in o["metadata"],
                        "the claim's delete begun")
    assert "Terminating" in kubectl(cluster, "get", "pvc", "held")  # held by its finalizer while the pod runs
    assert held["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert "deletionTimestamp" in get(cluster, "pv", volume)["metadata"]  # and the volume, Bound

    kubectl(cluster, "delete", "pod", "user")
    fetched_when(lambda: run_kubectl(cluster, "get", "pvc", "held", check=False).returncode, bool, "the claim gone")
    fetched_when(lambda: run_kubectl(cluster, "get", "pv", volume, check=False).returncode, bool, "the volume gone")
