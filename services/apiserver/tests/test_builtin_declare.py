"""Built-in types declared from kube's schemas of any shipped release, and what they publish."""

from __future__ import annotations

import pytest

from kcp_apiserver.endpoints import discovery, openapi
from kcp_apiserver.endpoints.nonresource import version_info
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.actions import Action, ActionCall, ActionResult
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.builtin.declare import UnknownKind, for_release, kube_resource
from kcp_apiserver.registry.scale import BuiltinScale, to_scale


async def _noop(call: ActionCall) -> ActionResult:
    return ActionResult()


def test_the_wheel_ships_several_releases_oldest_first() -> None:
    assert builtinschemas.RELEASES[0] == "1.25"
    assert builtinschemas.newest_release() == builtinschemas.RELEASES[-1]
    assert [int(r.split(".")[1]) for r in builtinschemas.RELEASES] == sorted(int(r.split(".")[1]) for r in builtinschemas.RELEASES)


def test_a_kind_is_declared_from_its_releases_schema() -> None:
    old = kube_resource("", "v1", "Pod", "pods", namespaced=True, release="1.25")
    new = kube_resource("", "v1", "Pod", "pods", namespaced=True, release=builtinschemas.newest_release())
    assert (old.definition, old.singular, old.release) == ("io.k8s.api.core.v1.Pod", "pod", "1.25")
    assert old.type_schema is not new.type_schema
    assert old.type_schema is builtinschemas.type_schema("io.k8s.api.core.v1.Pod", "1.25")  # one per (name, release)
    spec = builtinschemas.definitions("1.25")["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert "schedulingGates" not in spec  # 1.26 added it
    assert "schedulingGates" in builtinschemas.definitions(builtinschemas.newest_release())["io.k8s.api.core.v1.PodSpec"][
        "properties"]
    with pytest.raises(UnknownKind):
        kube_resource("apps", "v1", "Nothing", "nothings", namespaced=True)


def test_kcps_own_types_follow_another_release() -> None:
    moved = for_release(BUILTINS, "1.25")
    assert {r.release for r in moved if r.definition} == {"1.25"}
    assert [r.plural for r in moved] == [r.plural for r in BUILTINS]
    assert for_release(BUILTINS, builtinschemas.DEFAULT_RELEASE)[0] is BUILTINS[0]


def test_openapi_publishes_each_resources_release() -> None:
    pods = kube_resource("", "v1", "Pod", "pods", namespaced=True, release="1.25")
    defs = openapi._definitions_for([pods], v2=True)
    assert "schedulingGates" not in defs["io.k8s.api.core.v1.PodSpec"]["properties"]


def test_discovery_lists_scale_and_declared_subresources_with_their_kinds() -> None:
    deployments = kube_resource("apps", "v1", "Deployment", "deployments", namespaced=True, has_status=True,
                                scale=BuiltinScale())
    pods = kube_resource("", "v1", "Pod", "pods", namespaced=True, has_status=True, actions=(
        Action("eviction", ("create",), _noop, ("policy", "v1", "Eviction")), Action("log", ("get",), _noop)))
    apps = {r["name"]: r for r in discovery.resource_list("apps", "v1", [deployments])["resources"]}
    assert apps["deployments/scale"] == {"name": "deployments/scale", "singularName": "", "namespaced": True,
                                         "group": "autoscaling", "version": "v1", "kind": "Scale",
                                         "verbs": ["get", "patch", "update"]}
    core = {r["name"]: r for r in discovery.resource_list("", "v1", [pods])["resources"]}
    assert (core["pods/eviction"]["group"], core["pods/eviction"]["kind"], core["pods/eviction"]["verbs"]) == (
        "policy", "Eviction", ["create"])
    assert (core["pods/log"]["kind"], core["pods/log"]["verbs"]) == ("Pod", ["get"])
    aggregated = discovery.aggregated([pods], core=True)["items"][0]["versions"][0]["resources"][0]
    assert {s["subresource"] for s in aggregated["subresources"]} == {"status", "eviction", "log"}


def test_a_builtin_scale_formats_its_selector_as_kube() -> None:
    deployments = kube_resource("apps", "v1", "Deployment", "deployments", namespaced=True, scale=BuiltinScale())
    obj = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"replicas": 3, "selector": {
        "matchLabels": {"tier": "a", "app": "web"}}}, "status": {"replicas": 2}}
    scale = to_scale(deployments, obj)
    assert (scale["spec"], scale["status"]) == ({"replicas": 3}, {"replicas": 2, "selector": "app=web,tier=a"})


def test_version_reports_the_release() -> None:
    info = version_info("1.25", "+sim")
    assert (info["major"], info["minor"], info["gitVersion"]) == ("1", "25", "v1.25.0+sim")
