"""A manifest that ships a cluster-scoped class, through kcp with every real process: kcp, two simulated
physical clusters (kube 1.25 and the newest), the cluster controller (push mode; the SyncTargets' default
resources import the classes) and the deployment splitter.

A Cassandra-style manifest (a StorageClass, a headless Service, a StatefulSet whose volumeClaimTemplates name
the class) `kubectl apply -f`s and `kubectl delete -f`s whole. Downstream the class is the tenant's own under
its mapped name (`kcpsyncer.names.downstream_name`), the StatefulSet and the claims its controller makes name
that, and a second tenant's class of the same name on the same physical cluster is another object, which the
first tenant's delete leaves alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from splitter_fixtures import SplitterProcess
from syncer_fixtures import Rest, eventually, sim_cluster

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl
from kcpsyncer import downstream_namespace
from kcpsyncer.names import downstream_name

CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
TENANTS = ("cassandra", "team-b")
ASSIGNMENT = "workloads.kcp.io/cluster"


def manifest(provisioner: str) -> str:
    """kube's Cassandra example in shape: the class first, then what names it."""
    labels = {"app": "cassandra"}
    return yaml.safe_dump_all([
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
         "provisioner": provisioner, "parameters": {"type": "pd-ssd"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cassandra", "labels": labels},
         "spec": {"clusterIP": "None", "ports": [{"port": 9042}], "selector": labels}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "cassandra", "labels": labels},
         "spec": {"serviceName": "cassandra", "replicas": 2, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                      {"name": "cassandra", "image": "cassandra:4.1", "ports": [{"containerPort": 9042}],
                       "volumeMounts": [{"name": "data", "mountPath": "/var/lib/cassandra"}]}]}},
                  "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                      "accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                      "resources": {"requests": {"storage": "1Gi"}}}}]}},
    ])


class Fleet:
    def __init__(self, kcp: KcpServer, clusters: dict[str, KcpServer], root: Path) -> None:
        self.kcp, self.clusters, self.root = kcp, clusters, root

    def kubectl(self, tenant: str, *args: str, **kwargs: Any) -> str:
        return run_kubectl(self.kcp, *args, kubeconfig=cluster_kubeconfig(self.kcp, tenant, tenant),
                           **kwargs).stdout

    def apply(self, tenant: str, verb: str, text: str) -> None:
        path = self.root / f"{tenant}.yaml"
        path.write_text(text)
        self.kubectl(tenant, verb, "-f", str(path), timeout=120)

    def placed_on(self, tenant: str, name: str = "cassandra") -> KcpServer | None:
        """The physical cluster the tenant's StatefulSet went to (its namespace's target)."""
        sts = Rest(self.kcp).at(tenant).get(f"/apis/apps/v1/namespaces/default/statefulsets/{name}") or {}
        target = (sts.get("metadata", {}).get("labels") or {}).get(ASSIGNMENT)
        return self.clusters.get(target) if target else None


def sync_target(name: str, physical: KcpServer) -> str:
    return yaml.safe_dump({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
                           "spec": {"kubeconfig": physical.kubeconfig.read_text()}})  # the default resources


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("classes")
    kcp = KcpServer(root / "kcp", free_port())
    old, new = sim_cluster(root / "old", "--kubernetes-version", "1.25"), sim_cluster(root / "new")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8",
        "--discovery-interval", "5"])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, old, new):
            server.start()
            started.append(server)
        controller.start()
        splitter.start(wait_ready=False)
        fleet = Fleet(kcp, {"old": old, "new": new}, root)
        for tenant in TENANTS:
            fleet.kubectl(tenant, "apply", "-f", str(CRD_FILE))
            eventually(lambda t=tenant: run_kubectl(kcp, "get", "synctargets", check=False,  # type: ignore[misc]
                                                    kubeconfig=cluster_kubeconfig(kcp, t, t)).returncode == 0,
                       "SyncTargets served")
            for name, physical in fleet.clusters.items():
                fleet.kubectl(tenant, "apply", "-f", "-", input_text=sync_target(name, physical))
            for name in fleet.clusters:
                fleet.kubectl(tenant, "wait", f"synctarget/{name}", "--for", "condition=Ready", "--timeout=90s",
                              timeout=100)
            eventually(lambda t=tenant: run_kubectl(kcp, "get", "storageclasses,statefulsets",  # type: ignore[misc]
                                                    kubeconfig=cluster_kubeconfig(kcp, t, t),
                                                    check=False).returncode == 0,
                       "the classes and StatefulSets imported into kcp", timeout=90)
        yield fleet
        assert splitter.stop() == 0, splitter.log_tail()
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        splitter.stop()
        controller.stop()
        for server in started:
            server.stop()


def downstream_class(physical: KcpServer, tenant: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = Rest(physical).get(
        f"/apis/storage.k8s.io/v1/storageclasses/{downstream_name(tenant, 'fast')}")
    return found if found and not found["metadata"].get("deletionTimestamp") else None


def downstream_claims(physical: KcpServer, tenant: str) -> list[dict[str, Any]]:
    namespace = downstream_namespace(tenant, "default")
    found = Rest(physical).get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims") or {}
    return list(found.get("items") or [])


def test_a_manifest_with_a_storage_class_applies_and_deletes_whole_without_touching_another_tenants(
        fleet: Fleet) -> None:
    mine, theirs = TENANTS
    fleet.apply(mine, "apply", manifest("example.com/ssd"))
    fleet.apply(theirs, "apply", manifest("example.com/other-ssd"))
    assert "fast" in fleet.kubectl(mine, "get", "storageclass", "fast", "-o", "name")

    physical = eventually(lambda: fleet.placed_on(mine), "the StatefulSet placed on a physical cluster")
    down = eventually(lambda: downstream_class(physical, mine), "the tenant's class downstream", timeout=60)
    assert down["provisioner"] == "example.com/ssd"
    assert down["parameters"] == {"type": "pd-ssd"}
    namespace = downstream_namespace(mine, "default")
    sts = eventually(lambda: Rest(physical).get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/cassandra"),
                     "the StatefulSet downstream")
    mapped = downstream_name(mine, "fast")
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == mapped
    claims = eventually(lambda: len(downstream_claims(physical, mine)) == 2 and downstream_claims(physical, mine),
                        "the StatefulSet's claims downstream", timeout=60)
    assert {c["spec"]["storageClassName"] for c in claims} == {mapped}
    upstream = yaml.safe_load(fleet.kubectl(mine, "get", "statefulset", "cassandra", "-o", "yaml"))
    assert upstream["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "fast"  # the user's name

    theirs_on = eventually(lambda: fleet.placed_on(theirs), "the other tenant's StatefulSet placed")
    other = eventually(lambda: downstream_class(theirs_on, theirs), "the other tenant's class downstream", timeout=60)
    assert other["metadata"]["name"] != down["metadata"]["name"]
    assert other["provisioner"] == "example.com/other-ssd"

    fleet.apply(mine, "delete", manifest("example.com/ssd"))
    eventually(lambda: downstream_class(physical, mine) is None, "the tenant's class gone downstream", timeout=60)
    eventually(lambda: Rest(physical).get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/cassandra") is None,
               "the StatefulSet gone downstream", timeout=60)
    assert downstream_class(theirs_on, theirs) is not None
    assert "fast" in fleet.kubectl(theirs, "get", "storageclass", "fast", "-o", "name")


def test_a_stateful_set_applied_before_its_class_waits_for_it_then_names_the_tenants_class(fleet: Fleet) -> None:
    """`kubectl apply -f dir/` sends statefulset.yaml before storageclass.yaml: the syncer holds the StatefulSet
    (an Event says why) instead of sending it down naming a class the cluster never gets (its claim templates
    are immutable), and sends it down naming the tenant's class once that exists."""
    tenant = TENANTS[0]
    labels = {"app": "late"}
    fleet.apply(tenant, "apply", yaml.safe_dump(
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "late", "labels": labels},
         "spec": {"serviceName": "late", "replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}},
                  "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                      "accessModes": ["ReadWriteOnce"], "storageClassName": "late",
                      "resources": {"requests": {"storage": "1Gi"}}}}]}}))
    rest = Rest(fleet.kcp).at(tenant)

    def waiting() -> list[dict[str, Any]]:
        events = rest.get("/api/v1/namespaces/default/events")["items"]
        return [e for e in events if e["involvedObject"].get("name") == "late" and e["reason"] == "ClassNotFound"]
    told = eventually(waiting, "an Event saying the StatefulSet waits for its class", timeout=60)
    assert "waiting for StorageClass 'late'" in told[0]["message"], told[0]
    physical = fleet.placed_on(tenant, "late")
    assert physical is not None
    namespace = downstream_namespace(tenant, "default")
    assert Rest(physical).get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/late") is None  # held back

    fleet.apply(tenant, "apply", yaml.safe_dump(
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "late"},
         "provisioner": "example.com/late"}))
    sts = eventually(lambda: Rest(physical).get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/late"),
                     "the StatefulSet downstream once its class exists", timeout=60)
    mapped = downstream_name(tenant, "late")
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == mapped
    eventually(lambda: Rest(physical).get(f"/apis/storage.k8s.io/v1/storageclasses/{mapped}"),
               "the tenant's class downstream", timeout=60)
    fleet.kubectl(tenant, "delete", "statefulset/late", "storageclass/late", "--timeout=60s", timeout=70)


def test_an_imported_stateful_set_scales_through_its_scale_subresource(fleet: Fleet) -> None:
    """`kubectl scale --current-replicas` reads the scale subresource, which kubectl finds in discovery."""
    tenant = TENANTS[1]
    labels = {"app": "scaled"}
    fleet.apply(tenant, "apply", yaml.safe_dump(
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "scaled"},
         "spec": {"serviceName": "scaled", "replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}))
    resources = {r["name"]: r for r in Rest(fleet.kcp).at(tenant).get("/apis/apps/v1")["resources"]}
    scale = resources.get("statefulsets/scale")
    assert scale is not None, sorted(resources)
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    fleet.kubectl(tenant, "scale", "statefulset", "scaled", "--current-replicas=1", "--replicas=3")
    assert fleet.kubectl(tenant, "get", "statefulset", "scaled", "-o", "jsonpath={.spec.replicas}") == "3"
    physical = eventually(lambda: fleet.placed_on(tenant, "scaled"), "the StatefulSet placed")
    namespace = downstream_namespace(tenant, "default")
    eventually(lambda: (Rest(physical).get(f"/apis/apps/v1/namespaces/{namespace}/statefulsets/scaled") or {})
               .get("spec", {}).get("replicas") == 3, "the new replicas downstream")


def test_a_deleted_sync_target_takes_the_tenants_classes_off_its_cluster(fleet: Fleet) -> None:
    """No syncer is left to delete them: the cluster controller's teardown does, by the syncer's owner label."""
    tenant = TENANTS[1]
    physical = eventually(lambda: fleet.placed_on(tenant), "the StatefulSet placed")
    eventually(lambda: downstream_class(physical, tenant), "the tenant's class downstream", timeout=60)
    name = next(n for n, server in fleet.clusters.items() if server is physical)
    fleet.kubectl(tenant, "delete", "synctarget", name, "--timeout=90s", timeout=100)
    eventually(lambda: downstream_class(physical, tenant) is None, "the class gone with its SyncTarget", timeout=60)
