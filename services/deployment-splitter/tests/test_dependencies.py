"""References from a pod template, Services that select it, and the state labels that place them."""

from __future__ import annotations

from typing import Any

from kcp_deployment_splitter.dependencies import references
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, PLACED_ANNOTATION
from kcp_deployment_splitter.reconcile_dependencies import USES_INDEX, label_patch, placed_targets, users_of, uses_index

from kcpcommon.keys import CLUSTER_ANNOTATION, key_for
from kcpcommon.store import Indexer

TEMPLATE = {
    "metadata": {"labels": {"app": "web", "tier": "front"}},
    "spec": {
        "serviceAccountName": "web-sa",
        "imagePullSecrets": [{"name": "registry"}],
        "volumes": [{"name": "a", "configMap": {"name": "files"}}, {"name": "b", "secret": {"secretName": "tls"}},
                    {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "d", "projected": {"sources": [{"configMap": {"name": "proj-cm"}},
                                                            {"secret": {"name": "proj-secret"}}]}}],
        "initContainers": [{"name": "init", "envFrom": [{"configMapRef": {"name": "init-env"}}]}],
        "containers": [{"name": "main", "envFrom": [{"secretRef": {"name": "env-secret"}}],
                        "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "one-key", "key": "x"}}},
                                {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "y"}}},
                                {"name": "Z", "value": "plain"}]}],
    },
}


def test_every_kind_of_reference_in_a_pod_template_is_found() -> None:
    assert references(TEMPLATE) == {
        ("ServiceAccount", "web-sa"), ("Secret", "registry"), ("ConfigMap", "files"), ("Secret", "tls"),
        ("PersistentVolumeClaim", "data"), ("ConfigMap", "proj-cm"), ("Secret", "proj-secret"),
        ("ConfigMap", "init-env"), ("Secret", "env-secret"), ("ConfigMap", "one-key"), ("Secret", "pw")}


def test_what_every_namespace_has_is_not_a_dependency() -> None:
    assert references({"spec": {"serviceAccountName": "default", "volumes": [
        {"name": "t", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}}]}}) == set()


def deployment(name: str, target: str | None, replicas: int, template: dict[str, Any]) -> dict[str, Any]:
    labels = {ASSIGNMENT_LABEL: target} if target else {}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels,
                         "annotations": {CLUSTER_ANNOTATION: "tenant"}},
            "spec": {"replicas": replicas, "template": template}}


def cache(*deployments: dict[str, Any]) -> Indexer:
    indexer = Indexer(key_for, {USES_INDEX: uses_index})
    for obj in deployments:
        indexer.upsert(obj)
    return indexer


def named(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_users_are_children_and_pinned_deployments_running_somewhere() -> None:
    other = {"metadata": {"labels": {"app": "other"}}, "spec": {"volumes": [{"name": "a", "configMap": {"name":
                                                                                                      "files"}}]}}
    deployments = cache(deployment("web", None, 15, TEMPLATE),  # a root runs nowhere itself
                        deployment("web--east", "east", 8, TEMPLATE),
                        deployment("web--west", "west", 0, TEMPLATE),  # 0: not running
                        deployment("pinned", "north", 2, other))

    def users(kind: str, name: str, **spec: Any) -> set[str]:
        return users_of([deployments], "tenant", "default", kind, named(kind, name, **spec))
    assert users("ConfigMap", "files") == {"east", "north"}
    assert users("Secret", "tls") == {"east"}
    assert users("ConfigMap", "files-elsewhere") == set()
    assert users("Service", "web", selector={"app": "web"}) == {"east"}
    assert users("Service", "front", selector={"app": "web", "tier": "front"}) == {"east"}
    assert users("Service", "back", selector={"app": "web", "tier": "back"}) == set()
    assert users("Service", "manual") == set()  # no selector: endpoints are managed by hand
    assert users_of([deployments], "other-tenant", "default", "ConfigMap", named("ConfigMap", "files")) == set()


def test_what_a_deployment_uses_changes_with_its_template_and_replicas_not_its_status() -> None:
    child = deployment("web--east", "east", 8, TEMPLATE)
    assert uses_index(child) == uses_index({**child, "status": {"availableReplicas": 8}})
    assert uses_index(deployment("web--east", "east", 0, TEMPLATE)) == []
    assert uses_index(deployment("web", None, 8, TEMPLATE)) == []


def test_labels_placed_by_the_splitter_follow_the_users_and_others_labels_stay() -> None:
    fresh = {"metadata": {"name": "files", "labels": {"state.workload.kcp.io/north": "Sync"}}}
    patch = label_patch(fresh, {"east", "west"})
    assert patch == {"metadata": {"labels": {"state.workload.kcp.io/east": "Sync", "state.workload.kcp.io/west": "Sync"},
                                  "annotations": {PLACED_ANNOTATION: "east,west"}}}
    placed = {"metadata": {"name": "files", "annotations": {PLACED_ANNOTATION: "east,west"},
                           "labels": {"state.workload.kcp.io/north": "Sync", "state.workload.kcp.io/east": "Sync",
                                      "state.workload.kcp.io/west": "Sync"}}}
    assert label_patch(placed, {"east", "west"}) is None
    assert label_patch(placed, {"east"}) == {"metadata": {"labels": {"state.workload.kcp.io/west": None},
                                                          "annotations": {PLACED_ANNOTATION: "east"}}}
    assert label_patch(placed, set())["metadata"]["annotations"] == {PLACED_ANNOTATION: None}
    assert placed_targets(placed) == {"north", "east", "west"}
