"""kube's own types served as imported CRDs get kube's defaults (only the served schema's fields) and
kube's validation, the schema's causes kept only where kube says nothing about a field."""

from __future__ import annotations

import copy
from typing import Any

from kcp_apiserver.apiextensions.resources import resources_for
from kcp_apiserver.registry.resource import Obj, Resource
from kcpcommon.kubetypes import IMPORTED_LABEL

OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
INT_OR_STRING = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
CONTAINER = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "image": {"type": "string"}, "imagePullPolicy": {"type": "string"},
    "terminationMessagePath": {"type": "string"},  # no terminationMessagePolicy: an older cluster's view
    "ports": {"type": "array", "items": {"type": "object", "properties": {
        "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}}}}
# a Deployment as a negotiated schema may serve it: no progressDeadlineSeconds, no enableServiceLinks
DEPLOYMENT_SCHEMA = {"type": "object", "properties": {
    "metadata": {"type": "object"},
    "spec": {"type": "object", "required": ["selector", "template"], "properties": {
        "replicas": {"type": "integer"}, "revisionHistoryLimit": {"type": "integer"},
        "selector": OPEN,
        "strategy": {"type": "object", "properties": {"type": {"type": "string"}, "rollingUpdate": {
            "type": "object", "properties": {"maxSurge": INT_OR_STRING, "maxUnavailable": INT_OR_STRING}}}},
        "template": {"type": "object", "properties": {"metadata": OPEN, "spec": {"type": "object", "properties": {
            "containers": {"type": "array", "items": CONTAINER, "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["name"]},
            "restartPolicy": {"type": "string"},
            "dnsPolicy": {"type": "string"}, "schedulerName": {"type": "string"},
            "terminationGracePeriodSeconds": {"type": "integer"}, "securityContext": OPEN}}}}}},
    "status": OPEN}}


def deployments(*, imported: bool = True, group: str = "apps", schema: Obj | None = None) -> Resource:
    labels = {IMPORTED_LABEL: "true"} if imported else {}
    crd = {"metadata": {"name": f"deployments.{group}", "labels": labels},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "deployments", "kind": "Deployment"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": copy.deepcopy(schema or DEPLOYMENT_SCHEMA)}}]}}
    [res] = resources_for(crd)
    return res


def deployment(**spec: Any) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}},
                     **spec}}


def messages(res: Resource, obj: Obj, old: Obj | None = None) -> list[str]:
    causes = res.strategy.validate(obj) if old is None else res.strategy.validate_update(obj, old)
    return [f"{c.field}: {c.message}" for c in causes]


def test_an_imported_deployment_gets_kubes_defaults_for_the_fields_its_schema_serves() -> None:
    obj = deployment()
    deployments().strategy.prepare_for_create(obj)
    spec = obj["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert "progressDeadlineSeconds" not in spec  # kube's default, but not a field this schema serves
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["schedulerName"]) == ("Always", "ClusterFirst",
                                                                              "default-scheduler")
    assert pod["terminationGracePeriodSeconds"] == 30 and pod["securityContext"] == {}
    [container] = pod["containers"]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert "terminationMessagePolicy" not in container and "resources" not in container
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_an_update_is_defaulted_too() -> None:
    res = deployments()
    old = deployment()
    res.strategy.prepare_for_create(old)
    new = deployment(strategy={"type": "Recreate"})
    res.strategy.prepare_for_update(new, old)
    assert new["spec"]["strategy"] == {"type": "Recreate"} and new["spec"]["replicas"] == 1


def test_an_imported_deployment_is_validated_as_kube_validates_it() -> None:
    res = deployments()
    obj = deployment(replicas=-3)
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    res.strategy.prepare_for_create(obj)
    assert messages(res, obj) == [
        "spec.replicas: Invalid value: -3: must be greater than or equal to 0",
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
        "`selector` does not match template `labels`"]


def test_where_kube_and_the_schema_both_object_to_a_field_only_kubes_cause_is_given() -> None:
    res = deployments()
    obj = deployment()
    del obj["spec"]["template"]["spec"]["containers"][0]["name"]
    res.strategy.prepare_for_create(obj)
    assert messages(res, obj) == ["spec.template.spec.containers[0].name: Required value"]
    obj = deployment(replicas="three")  # only the schema checks types: its cause stays
    res.strategy.prepare_for_create(obj)
    assert messages(res, obj) == ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
                                  'integer: "string"']


def test_the_selector_of_an_imported_deployment_is_immutable() -> None:
    res = deployments()
    old = deployment()
    res.strategy.prepare_for_create(old)
    new = deployment(selector={"matchLabels": {"app": "web", "tier": "front"}})
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    res.strategy.prepare_for_update(new, old)
    assert messages(res, new, old) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"front"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]


def test_a_crd_that_is_not_an_imported_kube_type_keeps_custom_resource_behaviour() -> None:
    for res in (deployments(imported=False), deployments(group="example.com")):
        obj = deployment(replicas=-3)
        res.strategy.prepare_for_create(obj)
        assert "strategy" not in obj["spec"]
        assert messages(res, obj) == []


def test_a_duplicate_list_map_item_is_reported_as_kube_reports_it() -> None:
    """The schema calls the item `containers[1]` a duplicate; kube calls its name one: kube's cause alone."""
    res = deployments()
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"] = [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]
    res.strategy.prepare_for_create(obj)
    assert messages(res, obj) == ['spec.template.spec.containers[1].name: Duplicate value: "a"']


def test_a_status_write_does_not_validate_the_spec_again() -> None:
    res = deployments()
    old = deployment(replicas=-3)  # stored before kube's rules applied to imported types
    res.strategy.prepare_for_create(old)
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 0}
    assert res.strategy.validate_subresource_update("status", new, old) == []
    assert messages(res, new, old) == ["spec.replicas: Invalid value: -3: must be greater than or equal to 0"]


async def _no_cluster_setup(cluster: str) -> None:
    return None


async def test_replacing_a_deployment_with_its_undefaulted_manifest_keeps_its_generation() -> None:
    """kube defaults what it decodes before comparing specs: only a real change is a new generation."""
    from kcp_apiserver.registry.admission import AdmissionChain
    from kcp_apiserver.registry.store import Registry
    from kcp_apiserver.storage.memory import MemoryStorage

    registry = Registry(MemoryStorage(), admit=AdmissionChain([]), ensure_cluster=_no_cluster_setup)
    res = deployments()
    created = await registry.create(res, "c1", "default", deployment())
    assert created["metadata"]["generation"] == 1
    same = await registry.update(res, "c1", "default", "web", deployment())
    assert same["metadata"]["generation"] == 1 and same["spec"]["replicas"] == 1
    changed = await registry.update(res, "c1", "default", "web", deployment(replicas=3))
    assert changed["metadata"]["generation"] == 2


def test_a_value_of_the_wrong_type_gets_the_schemas_causes_and_is_not_defaulted_away() -> None:
    res = deployments()
    obj = deployment(strategy="fast", selector={"matchLabels": "app=web"})
    res.strategy.prepare_for_create(obj)
    assert obj["spec"]["strategy"] == "fast"  # left for validation to refuse, not replaced by the default
    assert messages(res, obj) == [
        'spec.strategy: Invalid value: "string": spec.strategy in body must be of type object: "string"']


def test_kube_does_not_ask_for_a_default_the_served_schema_does_not_keep() -> None:
    """kube requires a container's imagePullPolicy and a pod's dnsPolicy, which its defaults always set;
    a schema without them cannot keep them, and the object is valid all the same."""
    schema: Any = copy.deepcopy(DEPLOYMENT_SCHEMA)
    pod = schema["properties"]["spec"]["properties"]["template"]["properties"]["spec"]["properties"]
    del pod["dnsPolicy"], pod["containers"]["items"]["properties"]["imagePullPolicy"]
    res = deployments(schema=schema)
    obj = deployment()
    res.strategy.prepare_for_create(obj)
    assert "dnsPolicy" not in obj["spec"]["template"]["spec"]
    assert "imagePullPolicy" not in obj["spec"]["template"]["spec"]["containers"][0]
    assert messages(res, obj) == []
    old = copy.deepcopy(obj)
    obj["spec"]["replicas"] = -1
    res.strategy.prepare_for_update(obj, old)
    assert messages(res, obj, old) == ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
