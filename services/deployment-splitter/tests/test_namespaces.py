"""The namespace rule: a stable target per namespace, and which objects follow it."""

from __future__ import annotations

from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, NAMESPACE_PLACED_ANNOTATION, PLACED_ANNOTATION
from kcp_deployment_splitter.namespaces import choose, follows_namespace, object_patch, opted_out
from kcp_deployment_splitter.reconcile_dependencies import label_patch


def test_a_namespace_keeps_its_target_while_usable_and_otherwise_gets_a_stable_one() -> None:
    assert choose("default", "west", ("east", "west")) == "west"
    picked = choose("default", None, ("east", "west"))
    assert picked in ("east", "west")
    assert picked == choose("default", None, ("west", "east"))  # order does not matter
    assert choose("default", "gone", ("east",)) == "east"
    assert choose("default", "west", ()) is None
    spread = {choose(f"ns-{i}", None, ("a", "b", "c")) for i in range(30)}
    assert spread == {"a", "b", "c"}  # namespaces spread over the targets


def obj(name: str = "x", labels: dict | None = None, annotations: dict | None = None, **extra: object) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}, **extra}}


def test_only_unassigned_objects_nobody_else_places_follow_their_namespace() -> None:
    assert follows_namespace("StatefulSet", obj())
    assert not follows_namespace("ConfigMap", obj(labels={ASSIGNMENT_LABEL: "east"}))  # a person's
    assert follows_namespace("ConfigMap", obj(labels={ASSIGNMENT_LABEL: "east"},
                                              annotations={NAMESPACE_PLACED_ANNOTATION: "true"}))  # the rule's own
    assert not follows_namespace("ConfigMap", obj(annotations={PLACED_ANNOTATION: "east,west"}))  # a dependency
    assert not follows_namespace("Secret", obj(labels={"state.workload.kcp.io/east": "Sync"}))
    assert not follows_namespace("ConfigMap", obj("kube-root-ca.crt"))
    assert not follows_namespace("Service", obj("kubernetes", namespace="default"))  # kcp's own, as each cluster's
    assert follows_namespace("Service", obj("kubernetes", namespace="apps"))  # a person's
    assert not follows_namespace("Job", obj(ownerReferences=[{"uid": "u"}]))  # its owner's copy makes it
    assert follows_namespace("ReplicaSet", obj())  # a person's own
    # a Deployment's revision, orphaned by `kubectl delete deployment --cascade=orphan`: its pods run under the copies
    assert not follows_namespace("ReplicaSet", obj(annotations={"deployment.kubernetes.io/revision": "2"}))


def test_objects_are_labelled_for_the_namespaces_target_and_marked_as_the_rules() -> None:
    assert object_patch(obj(), "east") == {"metadata": {"labels": {ASSIGNMENT_LABEL: "east"},
                                                        "annotations": {NAMESPACE_PLACED_ANNOTATION: "true"}}}
    assert object_patch(obj(labels={ASSIGNMENT_LABEL: "east"}), "east") is None


def test_a_dependency_placed_by_the_namespace_rule_is_taken_over_by_its_workloads() -> None:
    followed = obj(labels={ASSIGNMENT_LABEL: "west"}, annotations={NAMESPACE_PLACED_ANNOTATION: "true"})
    patch = label_patch(followed, {"east", "west"})
    assert patch is not None
    assert patch["metadata"]["labels"][ASSIGNMENT_LABEL] is None
    assert patch["metadata"]["annotations"][NAMESPACE_PLACED_ANNOTATION] is None
    assert label_patch(followed, set()) is None  # no split workload uses it: it stays the namespace's


def test_system_namespaces_and_labelled_ones_opt_out() -> None:
    assert opted_out({"metadata": {"name": "kube-system"}})
    assert opted_out({"metadata": {"name": "apps", "labels": {"scheduling.kcp.io/disabled": "true"}}})
    assert not opted_out({"metadata": {"name": "default"}})
