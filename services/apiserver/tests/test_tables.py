"""Server-side Table printing: kube's ages, CRD printer columns, kube's workload columns for CRDs."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.registry.builtin.workloads import format_label_selector
from kcp_apiserver.registry.tables import human_duration, to_table


@pytest.mark.parametrize(("seconds", "text"), [
    (5, "5s"), (119, "119s"), (150, "2m30s"), (600, "10m"), (3 * 3600 + 600, "3h10m"), (9 * 3600, "9h"),
    (3 * 86400 + 3600, "3d1h"), (30 * 86400, "30d"), (3 * 365 * 86400, "3y"), (-5, "<invalid>"),
])
def test_ages_read_as_kube_prints_them(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def crd(group: str, kind: str, plural: str, columns: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}
    if columns is not None:
        version["additionalPrinterColumns"] = columns
    return {"metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "versions": [version],
                     "names": {"plural": plural, "kind": kind}}}


def obj(name: str, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": "2020-01-01T00:00:00Z"}, **fields}


def test_crd_printer_columns_follow_jsonpath_type_and_priority() -> None:
    columns = [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
               {"name": "Tags", "type": "string", "jsonPath": ".spec.tags", "priority": 1},
               {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"}]
    [res] = resources_for(crd("example.com", "Widget", "widgets", columns))
    table = to_table(res, [obj("a", spec={"size": 3, "tags": ["x", "y"]}, status={"ready": True}),
                           obj("b", spec={})], {}, "None")
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", 0), ("Size", "integer", 0), ("Tags", "string", 1), ("Ready", "boolean", 0)]
    assert table["rows"][0]["cells"] == ["a", 3, '["x","y"]', True]
    assert table["rows"][1]["cells"] == ["b", None, "<none>", None]  # missing fields print as kube does
    assert "object" not in table["rows"][0]


def test_a_crd_without_columns_prints_name_and_age_and_partial_metadata() -> None:
    [res] = resources_for(crd("example.com", "Widget", "widgets"))
    table = to_table(res, [obj("a")], {"resourceVersion": "7"}, "Metadata")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "a" and "y" in table["rows"][0]["cells"][1]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert table["metadata"] == {"resourceVersion": "7"}


def test_deployments_served_as_a_crd_print_kube_columns() -> None:
    [res] = resources_for(crd("apps", "Deployment", "deployments"))
    template = {"spec": {"containers": [{"name": "a", "image": "img:1"}, {"name": "b", "image": "img:2"}]}}
    deployment = obj("web", spec={"replicas": 15, "template": template,
                                  "selector": {"matchLabels": {"app": "web"},
                                               "matchExpressions": [{"key": "tier", "operator": "In",
                                                                     "values": ["b", "a"]}]}},
                     status={"readyReplicas": 8, "updatedReplicas": 15, "availableReplicas": 8})
    table = to_table(res, [deployment, obj("fresh", spec={})], {}, "None")
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["web", "8/15", 15, 8]
    assert cells[5:] == ["a,b", "img:1,img:2", "app=web,tier in (a,b)"]
    assert table["rows"][1]["cells"][:4] == ["fresh", "0/1", 0, 0]  # spec.replicas defaults to 1


def test_services_served_as_a_crd_print_kube_columns_with_every_ingress_address() -> None:
    [res] = resources_for(crd("", "Service", "services"))
    ports = [{"port": 443, "nodePort": 32062, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]
    two = obj("public", spec={"type": "LoadBalancer", "clusterIP": "10.0.0.7", "ports": ports},
              status={"loadBalancer": {"ingress": [{"ip": "172.18.1.1"}, {"hostname": "lb.example.com"}]}})
    pending = obj("waiting", spec={"type": "LoadBalancer", "clusterIP": "10.0.0.8", "ports": ports[:1]})
    internal = obj("internal", spec={"clusterIP": "10.0.0.9", "ports": [{"port": 80}], "selector": {"app": "web"}})
    table = to_table(res, [two, pending, internal], {}, "None")
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
    rows = [r["cells"][:5] + r["cells"][6:] for r in table["rows"]]
    assert rows == [["public", "LoadBalancer", "10.0.0.7", "172.18.1.1,lb.example.com", "443:32062/TCP,53/UDP", "<none>"],
                    ["waiting", "LoadBalancer", "10.0.0.8", "<pending>", "443:32062/TCP", "<none>"],
                    ["internal", "ClusterIP", "10.0.0.9", "<none>", "80/TCP", "app=web"]]


def test_declared_printer_columns_win_over_kube_columns() -> None:
    [res] = resources_for(crd("apps", "Deployment", "deployments",
                              [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]))
    assert [c.name for c in res.columns] == ["Name", "Replicas"]


def test_label_selector_formatting() -> None:
    assert format_label_selector(None) == "<none>"
    assert format_label_selector({}) == "<none>"
    assert format_label_selector({"matchExpressions": [{"key": "a", "operator": "Exists"},
                                                       {"key": "b", "operator": "DoesNotExist"},
                                                       {"key": "c", "operator": "NotIn", "values": ["z"]}]}) \
        == "a,!b,c notin (z)"
