"""References from a pod template, Services that select it, and the state labels that place them."""

from __future__ import annotations

from kcp_deployment_splitter.dependencies import references, selects
from kcp_deployment_splitter.names import ASSIGNMENT_LABEL, PLACED_ANNOTATION
from kcp_deployment_splitter.reconcile_dependencies import label_patch, placed_targets, users_by_target

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


def test_a_service_selects_a_template_when_all_its_selector_matches() -> None:
    assert selects({"spec": {"selector": {"app": "web"}}}, TEMPLATE)
    assert not selects({"spec": {"selector": {"app": "web", "tier": "back"}}}, TEMPLATE)
    assert not selects({"spec": {}}, TEMPLATE)  # no selector: endpoints are managed by hand


def deployment(target: str | None, replicas: int, template: dict) -> dict:
    labels = {ASSIGNMENT_LABEL: target} if target else {}
    return {"metadata": {"labels": labels}, "spec": {"replicas": replicas, "template": template}}


def test_users_are_children_and_pinned_deployments_running_somewhere() -> None:
    other = {"metadata": {"labels": {"app": "other"}}, "spec": {"volumes": [{"name": "a", "configMap": {"name":
                                                                                                      "files"}}]}}
    wanted = users_by_target([deployment(None, 15, TEMPLATE),  # a root runs nowhere itself
                              deployment("east", 8, TEMPLATE), deployment("west", 0, TEMPLATE),  # 0: not running
                              deployment("north", 2, other)],
                             [{"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}}])
    assert wanted[("ConfigMap", "files")] == {"east", "north"}
    assert wanted[("Secret", "tls")] == {"east"}
    assert wanted[("Service", "web")] == {"east"}


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
