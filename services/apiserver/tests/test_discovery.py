"""Discovery documents carry their keys in the order of kube's Go structs, and kube's storage hashes."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.endpoints import discovery
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.resource import Resource

# json field names in Go declaration order (TypeMeta inlined first), from k8s.io/apimachinery
# pkg/apis/meta/v1/types.go and k8s.io/api/apidiscovery/v2/types.go
TYPE_META = ["kind", "apiVersion"]
API_RESOURCE_LIST = [*TYPE_META, "groupVersion", "resources"]
API_RESOURCE = ["name", "singularName", "namespaced", "group", "version", "kind", "verbs", "shortNames",
                "categories", "storageVersionHash"]
API_VERSIONS = [*TYPE_META, "versions", "serverAddressByClientCIDRs"]
SERVER_ADDRESS = ["clientCIDR", "serverAddress"]
API_GROUP_LIST = [*TYPE_META, "groups"]
API_GROUP = [*TYPE_META, "name", "versions", "preferredVersion", "serverAddressByClientCIDRs"]
GROUP_VERSION_FOR_DISCOVERY = ["groupVersion", "version"]
DISCOVERY_LIST = [*TYPE_META, "metadata", "items"]
GROUP_DISCOVERY = [*TYPE_META, "metadata", "versions"]
VERSION_DISCOVERY = ["version", "resources", "freshness"]
RESOURCE_DISCOVERY = ["resource", "responseKind", "scope", "singularResource", "verbs", "shortNames", "categories",
                      "subresources"]
SUBRESOURCE_DISCOVERY = ["subresource", "responseKind", "acceptedTypes", "verbs"]
GVK = ["group", "version", "kind"]

CRD = Resource("example.com", "v1", "Widget", "widgets", "widget", True, short_names=("wd",),
               categories=("all",), has_status=True, schema={"type": "object"})


def assert_go_order(doc: dict[str, Any], go_fields: list[str]) -> None:
    keys = list(doc)
    assert set(keys) <= set(go_fields), set(keys) - set(go_fields)
    assert keys == [f for f in go_fields if f in doc]


def test_legacy_discovery_keys_follow_kubes_structs() -> None:
    resources = [*BUILTINS, CRD]
    for group, versions in discovery.group_versions(resources).items():
        for version, members in versions.items():
            doc = discovery.resource_list(group, version, members)
            assert_go_order(doc, API_RESOURCE_LIST)
            for entry in doc["resources"]:
                assert_go_order(entry, API_RESOURCE)
    configmaps = next(e for e in discovery.resource_list("", "v1", list(BUILTINS))["resources"]
                      if e["name"] == "configmaps")
    assert list(configmaps)[-2:] == ["shortNames", "storageVersionHash"]
    versions = discovery.api_versions()
    assert_go_order(versions, API_VERSIONS)
    assert_go_order(versions["serverAddressByClientCIDRs"][0], SERVER_ADDRESS)
    groups = discovery.api_group_list(resources)
    assert_go_order(groups, API_GROUP_LIST)
    for group_doc in [*groups["groups"], discovery.api_group("example.com", ["v1"])]:
        assert_go_order(group_doc, API_GROUP)
        assert_go_order(group_doc["preferredVersion"], GROUP_VERSION_FOR_DISCOVERY)
        for gv in group_doc["versions"]:
            assert_go_order(gv, GROUP_VERSION_FOR_DISCOVERY)


def test_aggregated_discovery_keys_follow_kubes_structs() -> None:
    for core in (True, False):
        doc = discovery.aggregated([*BUILTINS, CRD], core=core)
        assert_go_order(doc, DISCOVERY_LIST)
        for group in doc["items"]:
            assert_go_order(group, GROUP_DISCOVERY)
            for version in group["versions"]:
                assert_go_order(version, VERSION_DISCOVERY)
                for res in version["resources"]:
                    assert_go_order(res, RESOURCE_DISCOVERY)
                    assert_go_order(res["responseKind"], GVK)
                    for sub in res.get("subresources", []):
                        assert_go_order(sub, SUBRESOURCE_DISCOVERY)


def test_storage_version_hashes_are_kubes() -> None:
    hashes = {(e["name"], doc["groupVersion"]): e.get("storageVersionHash")
              for group, versions in discovery.group_versions(list(BUILTINS)).items()
              for version, members in versions.items()
              for doc in [discovery.resource_list(group, version, members)] for e in doc["resources"]}
    assert hashes[("configmaps", "v1")] == "qFsyl6wFWjQ="  # what kube-apiserver publishes
    assert hashes[("events", "v1")] == hashes[("events", "events.k8s.io/v1")] == "r2yiGXH7wu8="  # one storage
