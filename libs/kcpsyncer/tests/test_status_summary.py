"""Status of an object on several clusters: each cluster's status in its own annotation, `.status` their summary."""

from __future__ import annotations

import json
from typing import Any

from kcpsyncer import downstream_namespace, syncer_finalizer
from kcpsyncer.summary import annotations_patch, placed_targets, reported_statuses, status_annotation, summary
from kcpsyncer.transform import downstream_object

LC, TARGET = "root:org", "east"
FINALIZER, MAPPED = syncer_finalizer(TARGET), downstream_namespace(LC, "default")
EAST, WEST = status_annotation("east"), status_annotation("west")


def lb(*ips: str) -> dict[str, Any]:
    return {"loadBalancer": {"ingress": [{"ip": ip} for ip in ips]} if ips else {}}


def service(targets: tuple[str, ...] = ("east", "west"), status: dict[str, Any] | None = None,
            **reported: dict[str, Any]) -> dict[str, Any]:
    """A Service placed by state labels on `targets`, with clusters' statuses already `reported`."""
    annotations = {status_annotation(t): json.dumps(s) for t, s in reported.items()}
    meta = {"name": "web", "namespace": "default", "uid": "up-web", "resourceVersion": "5",
            "finalizers": [FINALIZER], "labels": {f"state.workload.kcp.io/{t}": "Sync" for t in targets},
            "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}, **({"status": status} if status else {})}


def test_the_targets_are_the_assignment_label_and_the_sync_state_labels() -> None:
    obj = {"metadata": {"labels": {"workloads.kcp.io/cluster": "a", "state.workload.kcp.io/b": "Sync",
                                   "state.workload.kcp.io/c": "", "app": "x"}}}
    assert placed_targets(obj) == {"a", "b"}


def test_a_services_summary_is_the_sorted_union_of_every_clusters_ingress_points() -> None:
    obj = service(west=lb("10.0.0.9", "10.0.0.2"))
    assert summary("services", obj, "east", lb("10.0.0.5", "10.0.0.2")) == lb("10.0.0.2", "10.0.0.5", "10.0.0.9")
    # the same whichever syncer computes it
    other = service(east=lb("10.0.0.5", "10.0.0.2"))
    assert summary("services", other, "west", lb("10.0.0.9", "10.0.0.2")) == lb("10.0.0.2", "10.0.0.5", "10.0.0.9")


def test_a_cluster_the_object_left_no_longer_counts() -> None:
    obj = service(targets=("east", "north"), west=lb("10.0.0.9"), north=lb("10.0.0.7"))
    assert summary("services", obj, "east", lb("10.0.0.5")) == lb("10.0.0.5", "10.0.0.7")
    assert annotations_patch(obj, "east", lb("10.0.0.5")) == {WEST: None, EAST: json.dumps(
        lb("10.0.0.5"), sort_keys=True, separators=(",", ":"))}


def test_no_ingress_anywhere_summarizes_as_an_empty_load_balancer() -> None:
    assert summary("services", service(west=lb()), "east", lb()) == lb()


def test_other_types_show_the_status_of_the_first_cluster_by_name() -> None:
    obj = service(west={"phase": "Bound", "capacity": {"storage": "2Gi"}})
    assert summary("persistentvolumeclaims", obj, "east", {"phase": "Pending"}) == {"phase": "Pending"}
    assert summary("persistentvolumeclaims", obj, "zeta", {"phase": "Pending"}) == {
        "phase": "Bound", "capacity": {"storage": "2Gi"}}


def test_on_one_target_the_status_goes_straight_up_and_leftover_annotations_go() -> None:
    obj = service(targets=("east",), east=lb("10.0.0.5"), west=lb("10.0.0.9"))
    assert summary("services", obj, "east", lb("10.0.0.6")) == lb("10.0.0.6")
    assert annotations_patch(obj, "east", lb("10.0.0.6")) == {EAST: None, WEST: None}
    assert annotations_patch(service(targets=("east",)), "east", lb("10.0.0.6")) == {}  # nothing to write


def test_an_unchanged_status_annotation_is_not_written_again() -> None:
    obj = service(east=lb("10.0.0.5"))
    obj["metadata"]["annotations"][EAST] = json.dumps(lb("10.0.0.5"), sort_keys=True, separators=(",", ":"))
    assert annotations_patch(obj, "east", lb("10.0.0.5")) == {}
    assert reported_statuses(obj) == {"east": lb("10.0.0.5")}


def test_the_clusters_statuses_do_not_go_down_with_the_object() -> None:
    obj = service(west=lb("10.0.0.9"))
    body = downstream_object(obj, api_version="v1", kind="Service", namespace=MAPPED, logical_cluster=LC,
                             sync_target=TARGET)
    assert not [k for k in body["metadata"]["annotations"] if k.startswith("experimental.status.")]


def test_a_daemonset_placed_by_hand_on_two_clusters_shows_their_counts_summed() -> None:
    counts = {"currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberMisscheduled": 0, "numberReady": 2,
              "numberAvailable": 2, "updatedNumberScheduled": 2, "observedGeneration": 3}
    obj = {"metadata": {"name": "agent", "generation": 3,
                        "labels": {"state.workload.kcp.io/east": "Sync", "state.workload.kcp.io/west": "Sync"},
                        "annotations": {WEST: json.dumps({**counts, "numberReady": 1, "numberAvailable": 1})}}}
    mine = {**counts, "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 3,
            "numberAvailable": 3, "updatedNumberScheduled": 3}
    status = summary("daemonsets.apps", obj, "east", mine)
    assert (status["desiredNumberScheduled"], status["numberReady"], status["numberUnavailable"],
            status["observedGeneration"]) == (5, 4, 1, 3)
    # until west has reported, the set is not observed at its generation: `kubectl rollout status` waits
    obj["metadata"]["annotations"] = {}
    assert summary("daemonsets.apps", obj, "east", mine)["observedGeneration"] == 2
