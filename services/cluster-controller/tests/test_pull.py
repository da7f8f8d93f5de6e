"""Pull mode: what is installed says what the syncer may touch, and runs it with kcp-syncer's own flags."""

from __future__ import annotations

from typing import Any

from kcp_cluster_controller.imports import crd_for
from kcp_cluster_controller.physical import ImportedType
from kcp_cluster_controller.pull import (
    cluster_rules,
    cluster_scoped,
    downstream_namespace,
    mapped_namespace_of,
    own_namespace_rules,
    syncer_args,
    type_rules,
    upstream_account,
)

from kcpcommon.keys import ObjectKey, sync_target_key
from kcpsyncer import NAMESPACE_LOCATOR_ANNOTATION
from kcpsyncer import downstream_namespace as mapped_namespace
from kcpsyncer.names import OWNER_LABEL, SYNC_TARGET_KEY_ANNOTATION, namespace_locator, owner

KEY = ObjectKey("org", "", "east")


def test_rules_name_each_synced_type_and_its_status_only() -> None:
    rules = type_rules(("deployments.apps", "services"), ["get", "list"])
    assert rules == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["services/status"], "verbs": ["get", "update", "patch"]},
    ]


def test_the_deployment_runs_kcp_syncer_with_its_command_line_flags() -> None:
    assert syncer_args(KEY, ("deployments.apps", "configmaps"), 10.0) == [
        "--from-kubeconfig", "/etc/kcp-syncer/kcp.kubeconfig", "--to-kubeconfig", "/etc/kcp-syncer/cluster.kubeconfig",
        "--sync-target", "east", "--logical-cluster", "org", "--resources", "deployments.apps,configmaps",
        "--heartbeat-interval", "10"]


def test_names_are_per_logical_cluster_and_sync_target() -> None:
    assert downstream_namespace(KEY) != downstream_namespace(ObjectKey("other", "", "east"))
    assert len(downstream_namespace(KEY)) <= 63
    assert upstream_account(KEY) == "kcp-syncer-east"


def test_imported_crds_carry_status_scale_and_printer_columns() -> None:
    deployment = ImportedType(resource="deployments.apps", group="apps", version="v1", kind="Deployment",
                              plural="deployments", singular="deployment", namespaced=True, schema={},
                              short_names=("deploy",), scale=True)
    crd = crd_for([deployment], {"type": "object"}, ["east"])
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                               "statusReplicasPath": ".status.replicas"}}
    assert "additionalPrinterColumns" not in version  # READY 8/15 is the server's (no JSONPath says it)
    assert crd["metadata"]["name"] == "deployments.apps" and crd["spec"]["names"]["shortNames"] == ["deploy"]

    service = ImportedType(resource="services", group="", version="v1", kind="Service", plural="services",
                           singular="service", namespaced=True, schema={})
    crd = crd_for([service], {"type": "object"}, ["east"])
    assert crd["metadata"]["name"] == "services.core" and crd["spec"]["group"] == ""
    assert "additionalPrinterColumns" not in crd["spec"]["versions"][0]  # PORT(S) 443:32062/TCP is the server's

    ingress = ImportedType(resource="ingresses.networking.k8s.io", group="networking.k8s.io", version="v1",
                           kind="Ingress", plural="ingresses", singular="ingress", namespaced=True, schema={})
    crd = crd_for([ingress], {"type": "object"}, ["east"])
    assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("https://")


class Discovery:
    """A physical cluster's discovery: deployments and configmaps namespaced, storageclasses not."""

    async def request(self, method: str, path: str, **_: Any) -> Any:
        if path == "/apis/storage.k8s.io":
            return {"preferredVersion": {"groupVersion": "storage.k8s.io/v1"}}
        if path == "/apis/apps":
            return {"preferredVersion": {"groupVersion": "apps/v1"}}
        return {"/api/v1": {"resources": [{"name": "configmaps", "namespaced": True}]},
                "/apis/apps/v1": {"resources": [{"name": "deployments", "namespaced": True}]},
                "/apis/storage.k8s.io/v1": {"resources": [{"name": "storageclasses", "namespaced": False}]},
                }.get(path, {"resources": []})


async def test_only_cluster_scoped_types_are_granted_cluster_wide() -> None:
    resources = ("deployments.apps", "configmaps", "storageclasses.storage.k8s.io", "widgets.example.com")
    # a type the cluster does not serve yet counts as namespaced: granted nowhere beyond its own namespaces
    assert await cluster_scoped(Discovery(), resources) == ("storageclasses.storage.k8s.io",)


def _granted(rules: list[dict[str, Any]]) -> dict[str, set[str]]:
    return {f"{resource}.{group}".rstrip("."): set(rule["verbs"])
            for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]}


def test_cluster_wide_the_syncer_may_only_place_classes_and_make_and_watch_namespaces() -> None:
    granted = _granted(cluster_rules(("storageclasses.storage.k8s.io",)))
    assert granted == {"storageclasses.storage.k8s.io": {"get", "list", "watch", "create", "update", "patch", "delete"},
                       "storageclasses/status.storage.k8s.io": {"get", "update", "patch"},
                       "namespaces": {"create", "list", "watch"}}


def test_in_its_own_namespaces_the_syncer_may_write_its_types_and_delete_the_namespace() -> None:
    granted = _granted(own_namespace_rules(("deployments.apps", "pods", "secrets")))
    for resource in ("deployments.apps", "pods", "secrets"):
        assert {"list", "watch", "create", "delete"} <= granted[resource]
    assert granted["namespaces"] == {"get", "patch", "delete"}  # namespace N's own are requests in N
    assert granted["events"] == {"get", "list", "watch"}
    assert granted["pods/log"] == {"get", "create"}


def _namespace(name: str, *, owner_value: str, locator: str) -> dict[str, object]:
    return {"metadata": {"name": name, "labels": {OWNER_LABEL: owner_value},
                         "annotations": {NAMESPACE_LOCATOR_ANNOTATION: locator}}}


def test_only_a_namespace_named_after_its_locator_in_this_logical_cluster_is_bound() -> None:
    own = owner(KEY.cluster, KEY.name)
    mapped = mapped_namespace(KEY.cluster, "default")
    assert mapped_namespace_of(KEY, _namespace(mapped, owner_value=own, locator=namespace_locator("org", "default")))
    # the syncer may label and annotate any namespace: kube-system's name is no hash of its locator
    assert not mapped_namespace_of(KEY, _namespace("kube-system", owner_value=own,
                                                   locator=namespace_locator("org", "kube-system")))
    # another logical cluster's namespace, or another syncer's label, or no locator at all
    other = mapped_namespace("other", "default")
    assert not mapped_namespace_of(KEY, _namespace(other, owner_value=own, locator=namespace_locator("other", "default")))
    assert not mapped_namespace_of(KEY, _namespace(mapped, owner_value="someone-else",
                                                   locator=namespace_locator("org", "default")))
    assert not mapped_namespace_of(KEY, _namespace(mapped, owner_value=own, locator="not json"))


def test_a_namespace_made_for_a_workspace_placed_on_the_sync_target_is_bound_only_with_its_key() -> None:
    """Shared compute: the engine of placed workspace `team` makes `hash(team, default)` with team's owner label
    and the SyncTarget's key annotation; without the key (another SyncTarget's placed workspace), or with the
    SyncTarget's own owner label, it is not this syncer's."""
    placed = mapped_namespace("team", "default")
    made = _namespace(placed, owner_value=owner("team", KEY.name), locator=namespace_locator("team", "default"))
    assert not mapped_namespace_of(KEY, made)
    made["metadata"]["annotations"][SYNC_TARGET_KEY_ANNOTATION] = sync_target_key(KEY.cluster, KEY.name)  # type: ignore[index]
    assert mapped_namespace_of(KEY, made)
    made["metadata"]["labels"][OWNER_LABEL] = owner(KEY.cluster, KEY.name)  # type: ignore[index]
    assert not mapped_namespace_of(KEY, made)
    elsewhere = _namespace(placed, owner_value=owner("team", KEY.name), locator=namespace_locator("team", "default"))
    elsewhere["metadata"]["annotations"][SYNC_TARGET_KEY_ANNOTATION] = sync_target_key("other", KEY.name)  # type: ignore[index]
    assert not mapped_namespace_of(KEY, elsewhere)
