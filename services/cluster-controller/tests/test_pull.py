"""Pull mode: what is installed says what the syncer may touch, and runs it with kcp-syncer's own flags."""

from __future__ import annotations

from kcp_cluster_controller.imports import crd_for
from kcp_cluster_controller.physical import ImportedType
from kcp_cluster_controller.pull import downstream_namespace, syncer_args, type_rules, upstream_account

from kcpcommon.keys import ObjectKey

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
