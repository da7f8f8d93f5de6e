"""Multi-cluster Services: the other clusters' endpoints of a Service, and the clusters a Service goes to."""

from __future__ import annotations

from typing import Any

from kcp_deployment_splitter.endpoints import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    SOURCE_CLUSTER_LABEL,
    endpoint_facts,
    remote_slices,
    slice_patch,
)
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, state_label
from kcp_deployment_splitter.reconcile_dependencies import USES_INDEX, DependencyPlacer, uses_index
from kcp_deployment_splitter.shares import diff_for, spec_diff_annotation

from kcpcommon.keys import CLUSTER_ANNOTATION, key_for
from kcpcommon.store import Indexer


def service(*targets: str, selector: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "redis", "namespace": "default", "uid": "svc-uid",
                         "labels": {state_label(t): "Sync" for t in targets}},
            "spec": {"selector": {"app": "redis"} if selector is None else selector,
                     "ports": [{"name": "db", "port": 6379, "targetPort": "db"}], **spec}}


def pod(name: str, source: str | None, ip: str | None, *, ready: bool = True, app: str = "redis",
        port: int = 6379, **meta: Any) -> dict[str, Any]:
    labels = {"app": app, **({state_label(source): "Upsync"} if source else {})}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels, **meta},
            "spec": {"containers": [{"name": "redis", "ports": [{"name": "db", "containerPort": port}]}]},
            "status": {"phase": "Running", "podIP": ip,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_each_source_cluster_gets_one_slice_placed_on_every_other_cluster_of_the_service() -> None:
    pods = [pod("r-1", "east", "10.1.0.5"), pod("r-2", "east", "10.1.0.6", ready=False),
            pod("r-3", "west", "10.2.0.7"), pod("other", "west", "10.2.0.8", app="web"),
            pod("kcp-own", None, "10.9.0.1"), pod("no-ip", "west", None)]
    slices = remote_slices(service("east", "west", "small"), pods)
    assert sorted(slices) == ["redis-kcp-east", "redis-kcp-west"]
    east = slices["redis-kcp-east"]
    assert east["metadata"]["labels"] == {
        SERVICE_NAME_LABEL: "redis", MANAGED_BY_LABEL: MANAGED_BY, SOURCE_CLUSTER_LABEL: "east",
        state_label("small"): "Sync", state_label("west"): "Sync"}
    assert east["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"
    assert [(e["addresses"], e["conditions"]["ready"], e["targetRef"]["name"]) for e in east["endpoints"]] == [
        (["10.1.0.5"], True, "r-1"), (["10.1.0.6"], False, "r-2")]
    assert east["ports"] == [{"name": "db", "port": 6379, "protocol": "TCP"}]  # the named port, resolved
    assert [e["addresses"] for e in slices["redis-kcp-west"]["endpoints"]] == [["10.2.0.7"]]


def test_a_source_the_service_is_on_alone_and_services_without_a_selector_get_nothing() -> None:
    pods = [pod("r-1", "east", "10.1.0.5")]
    assert remote_slices(service("east"), pods) == {}
    assert remote_slices(service("east", "west", selector={}), pods) == {}
    assert remote_slices(service("east", "west", type="ExternalName"), pods) == {}


def test_pods_serving_a_port_differently_go_in_separate_slices_and_a_terminating_one_is_not_ready() -> None:
    pods = [pod("r-1", "east", "10.1.0.5"), pod("r-2", "east", "10.1.0.6", port=7000),
            pod("r-3", "east", "10.1.0.7", deletionTimestamp="2026-11-29T00:00:00Z")]
    slices = remote_slices(service("east", "west"), pods)
    assert sorted(slices) == ["redis-kcp-east", "redis-kcp-east-1"]
    going = next(e for s in slices.values() for e in s["endpoints"] if e["targetRef"]["name"] == "r-3")
    assert going["conditions"] == {"ready": False, "serving": True, "terminating": True}


def test_the_patch_moves_only_what_changed_and_drops_a_target_the_service_left() -> None:
    pods = [pod("r-1", "east", "10.1.0.5")]
    current = remote_slices(service("east", "west", "small"), pods)["redis-kcp-east"]
    assert slice_patch(current, current) is None
    desired = remote_slices(service("east", "west"), [*pods, pod("r-2", "east", "10.1.0.9")])["redis-kcp-east"]
    patch = slice_patch(current, desired)
    assert patch is not None and patch["metadata"] == {"labels": {state_label("small"): None}}
    assert [e["addresses"] for e in patch["endpoints"]] == [["10.1.0.5"], ["10.1.0.9"]] and "ports" not in patch


def test_a_status_write_that_changes_no_endpoint_moves_no_slice() -> None:
    before = pod("r-1", "east", "10.1.0.5")
    after = {**before, "status": {**before["status"], "containerStatuses": [{"restartCount": 3}]}}
    assert endpoint_facts(before) == endpoint_facts(after)
    assert endpoint_facts(before) != endpoint_facts(pod("r-1", "east", "10.1.0.5", ready=False))


class Listed:
    """An informer that has listed `indexer`."""

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer
        self.synced_or_unserved = True


def test_a_service_goes_wherever_a_workload_of_its_namespace_runs() -> None:
    deployments = Indexer(key_for, {USES_INDEX: uses_index})
    statefulsets = Indexer(key_for)
    front = {"metadata": {"name": "front", "namespace": "default", "annotations": {
                 CLUSTER_ANNOTATION: "tenant", spec_diff_annotation("east"): diff_for(2),
                 spec_diff_annotation("west"): diff_for(1)},
                 "labels": {state_label("east"): "Sync", state_label("west"): "Sync"}},
             "spec": {"template": {"metadata": {"labels": {"app": "front"}}}}}
    deployments.upsert(front)
    statefulsets.upsert({"metadata": {"name": "db", "namespace": "default", "annotations": {
        CLUSTER_ANNOTATION: "tenant"}, "labels": {ASSIGNMENT_LABEL: "small"}}, "spec": {"replicas": 3}})
    placer = DependencyPlacer(None, workloads=[deployments], objects={},  # type: ignore[arg-type]
                              others=[Listed(statefulsets)])  # type: ignore[list-item]
    assert placer.callers("tenant", "default") == {"east", "west", "small"}
    assert placer.callers("tenant", "empty") == set()  # nothing runs: Services follow the namespace
    namespaces = Indexer(key_for)
    placer.namespaces = namespaces
    namespaces.upsert({"metadata": {"name": "default", "annotations": {CLUSTER_ANNOTATION: "tenant"},
                                    "labels": {ASSIGNMENT_LABEL: "small"}}})
    assert placer.service_callers("tenant", "default") == {"east", "west", "small"}
    deployments.remove(key_for(front))
    # all that runs is on the namespace's own target: its Services follow the namespace there, as the rest does
    assert placer.service_callers("tenant", "default") == set()
