"""Per-team quotas on a Location: what a team's Deployments use there, and the 403 a write over it gets."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, cast

import pytest

from kcp_apiserver.admission.location_quota import EVERY_TEAM, LocationQuota, Quota, RegistryReads, usage_of
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.store import Registry
from kcpcommon.keys import CLUSTER_ANNOTATION, placed_label, sync_target_key

# kcp's Deployments are bound from the compute workspace's export: a custom type under its identity
DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments", "deployment", True, identity="abc123")
TEAM = "team-b"
EU = frozenset({sync_target_key("compute", "eu-1"), sync_target_key("compute", "eu-2")})
US = frozenset({sync_target_key("compute", "us-1")})


def deployment(name: str, replicas: int | None, namespace: str = "default", *, cpu: str = "", memory: str = "",
               labels: dict[str, str] | None = None) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "main", "resources": {"requests": requests}},
                                                                  {"name": "side"}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec}


def namespace(name: str, **targets: str) -> Obj:
    """A Namespace placed (or draining) on the named SyncTargets of `compute`."""
    return {"metadata": {"name": name, "labels": {placed_label("compute", t.replace("_", "-")): state
                                                  for t, state in targets.items()}}}


class Reads:
    """The registry as the plugin reads it, in memory; `calls` counts lists of Deployments."""

    def __init__(self, namespaces: list[Obj], deployments: list[Obj], quotas: list[Quota]) -> None:
        self.ns = {n["metadata"]["name"]: n for n in namespaces}
        self.objs = deployments
        self.quota_list = quotas
        self.calls = 0
        self.others: list[Obj] = []  # another team's Deployments (and namespaces), seen only across workspaces
        self.others_ns: list[Obj] = []

    async def namespace(self, cluster: str, name: str) -> Obj | None:
        return self.ns.get(name)

    async def quotas(self, team: str, keys: frozenset[str]) -> list[Quota]:
        return [q for q in self.quota_list if q.team in (team, EVERY_TEAM)]

    async def namespaces(self, cluster: str) -> list[Obj]:
        """This team's (no cluster annotation: the team's), plus, across workspaces, the others' (annotated)."""
        return list(self.ns.values()) + (self.others_ns if cluster == EVERY_TEAM else [])

    async def deployments(self, res: Resource, cluster: str) -> list[Obj]:
        self.calls += 1
        return self.objs + (self.others if cluster == EVERY_TEAM else [])



def write(operation: str, obj: Obj, old: Obj | None = None, subresource: str = "") -> Attributes:
    info = RequestInfo(TEAM, "", True, "update", "apis", "apps", "v1", obj["metadata"]["namespace"], "deployments",
                       obj["metadata"]["name"])
    return Attributes(RequestContext(info, user=UserInfo("bob")), DEPLOYMENTS, operation,
                      obj["metadata"]["namespace"], obj["metadata"]["name"], obj, old, subresource)


def eu_quota(**hard: str) -> Quota:
    return Quota("eu", "compute", TEAM, hard, EU)


def test_usage_is_replicas_and_replicas_times_the_templates_requests() -> None:
    assert usage_of(deployment("web", 3, cpu="250m", memory="64Mi")) == {
        "pods": 3, "cpu": Fraction(3, 4), "memory": 3 * 64 * 2**20}
    assert usage_of(deployment("web", None))["pods"] == 1  # kube's default replicas
    assert usage_of(deployment("web", 0, cpu="1"))["cpu"] == 0
    assert usage_of(None) == {}


async def test_a_scale_over_the_quota_is_refused_in_kubes_words_naming_the_location() -> None:
    web = deployment("web", 4)
    reads = Reads([namespace("default", eu_1="Placed")], [web], [eu_quota(pods="6")])
    plugin = LocationQuota(reads)
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(write(UPDATE, deployment("web", 8), web))
    assert refused.value.code == 403 and refused.value.reason == "Forbidden"
    assert refused.value.message == (
        'deployments.apps "web" is forbidden: exceeded quota: location "eu" of workspace "compute" for workspace '
        '"team-b", requested: pods=4, used: pods=4, limited: pods=6')
    assert refused.value.details == {"kind": "deployments", "name": "web", "group": "apps"}
    await plugin.validate(write(UPDATE, deployment("web", 6), web))  # up to the bound is fine


async def test_a_second_deployment_counts_every_placed_namespace_on_the_location_but_not_others() -> None:
    placed = [deployment("web", 4), deployment("api", 1, "other"), deployment("far", 9, "abroad"),
              deployment("going", 9, "leaving"),
              deployment("web", 4, labels={"state.workload.kcp.io/abc": "Upsync"})]  # a mirror
    reads = Reads([namespace("default", eu_1="Placed"), namespace("other", eu_2="Placed"),
                   namespace("abroad", us_1="Placed"), namespace("leaving", eu_1="Draining", us_1="Placed")],
                  placed, [eu_quota(pods="6")])
    plugin = LocationQuota(reads)
    await plugin.validate(write(CREATE, deployment("db", 1)))  # 4 + 1 + 1: the mirror, us and draining don't count
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(write(CREATE, deployment("db", 2)))
    assert "requested: pods=2, used: pods=5, limited: pods=6" in refused.value.message


async def test_writes_that_lower_or_keep_usage_are_allowed_even_over_the_quota() -> None:
    web = deployment("web", 8)
    reads = Reads([namespace("default", eu_1="Placed")], [web], [eu_quota(pods="2")])
    plugin = LocationQuota(reads)
    await plugin.validate(write(UPDATE, deployment("web", 5), web))
    relabelled = deployment("web", 8, labels={"tier": "front"})
    await plugin.validate(write(UPDATE, relabelled, web))
    assert reads.calls == 0  # nothing was read: a write that raises nothing is never judged


async def test_shares_mirrors_and_status_writes_are_never_judged() -> None:
    reads = Reads([namespace("default", eu_1="Placed")], [], [eu_quota(pods="1")])
    plugin = LocationQuota(reads)
    web = deployment("web", 9)
    shared = deployment("web", 9, labels={"state.workload.kcp.io/eu-1": "Sync"})  # the splitter's share: metadata
    await plugin.validate(write(UPDATE, shared, web))
    mirror = deployment("web", 9, labels={"state.workload.kcp.io/abc": "Upsync"})
    await plugin.validate(write(CREATE, mirror))
    await plugin.validate(write(UPDATE, deployment("web", 9), deployment("web", 1), subresource="status"))
    assert reads.calls == 0
    with pytest.raises(st.APIError):
        await plugin.validate(write(UPDATE, deployment("web", 9), deployment("web", 1), subresource="scale"))


async def test_unplaced_namespaces_and_other_teams_quotas_do_not_bound() -> None:
    reads = Reads([namespace("default")], [], [eu_quota(pods="1")])
    await LocationQuota(reads).validate(write(CREATE, deployment("web", 5)))
    reads = Reads([namespace("default", eu_1="Placed")], [], [Quota("eu", "compute", "team-a", {"pods": "1"}, EU)])
    await LocationQuota(reads).validate(write(CREATE, deployment("web", 5)))
    reads = Reads([namespace("default", us_1="Placed")], [], [eu_quota(pods="1")])
    await LocationQuota(reads).validate(write(CREATE, deployment("web", 5)))


async def test_cpu_and_memory_bounds_name_only_what_is_exceeded() -> None:
    web = deployment("web", 2, cpu="500m", memory="1Gi")
    reads = Reads([namespace("default", eu_1="Placed")], [web], [eu_quota(pods="100", cpu="2", memory="3Gi")])
    plugin = LocationQuota(reads)
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(write(UPDATE, deployment("web", 4, cpu="500m", memory="1Gi"), web))
    assert refused.value.message.endswith("requested: memory=2Gi, used: memory=2Gi, limited: memory=3Gi")
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(write(UPDATE, deployment("web", 2, cpu="1500m", memory="1Gi"), web))
    assert refused.value.message.endswith("requested: cpu=2, used: cpu=1, limited: cpu=2")


async def test_raising_the_quota_admits_the_next_request() -> None:
    web = deployment("web", 4)
    quota = [eu_quota(pods="6")]
    reads = Reads([namespace("default", eu_1="Placed")], [web], quota)
    plugin = LocationQuota(reads)
    with pytest.raises(st.APIError):
        await plugin.validate(write(UPDATE, deployment("web", 8), web))
    quota[0] = eu_quota(pods="10")
    await plugin.validate(write(UPDATE, deployment("web", 8), web))


class FakeRegistry:
    """The registry's reads the plugin makes: lists of one cluster's objects of a resource, by resource prefix."""

    def __init__(self, objects: dict[tuple[str, str], list[Obj]]) -> None:
        self.objects = objects  # (cluster, plural) -> objects

    async def list(self, res: Resource, cluster: str, namespace: str) -> Any:
        return type("Listed", (), {"items": self.objects.get((cluster, res.plural), [])})()


def custom(group: str, kind: str, plural: str) -> Resource:
    return Resource(group, "v1alpha1", kind, plural, kind.lower(), False)


async def test_quotas_are_found_in_the_compute_workspaces_the_teams_placements_name() -> None:
    catalog = Catalog([])
    for cluster in ("compute", "other", TEAM):
        catalog.set_crd(cluster, "types", [custom("workload.kcp.io", "SyncTarget", "synctargets"),
                                           custom("scheduling.kcp.io", "Location", "locations"),
                                           custom("scheduling.kcp.io", "Placement", "placements")])

    def target(name: str, region: str) -> Obj:
        return {"metadata": {"name": name, "labels": {"region": region}}}

    def loc(name: str, region: str, *quotas: tuple[str, dict[str, str]]) -> Obj:
        return {"metadata": {"name": name}, "spec": {"instanceSelector": {"matchLabels": {"region": region}},
                                                     "quotas": [{"workspace": w, "hard": h} for w, h in quotas]}}

    registry = FakeRegistry({
        (TEAM, "placements"): [{"metadata": {"name": "p"}, "spec": {"locationWorkspace": "compute"}},
                               {"metadata": {"name": "here"}, "spec": {}}],
        ("compute", "synctargets"): [target("eu-1", "eu"), target("eu-2", "eu"), target("us-1", "us")],
        ("compute", "locations"): [loc("eu", "eu", (TEAM, {"pods": "6"}), ("team-a", {"pods": "1"})),
                                   loc("us", "us", (TEAM, {"pods": "2"}))],
        ("other", "synctargets"): [target("eu-1", "eu")],  # never named by a Placement of the team
        ("other", "locations"): [loc("eu", "eu", (TEAM, {"pods": "0"}))],
        (TEAM, "synctargets"): [target("own", "eu")],  # the Placement without a workspace: the team's own
        (TEAM, "locations"): [loc("mine", "eu", (TEAM, {"pods": "3"}))],
    })
    reads = RegistryReads(lambda: cast(Registry, registry), catalog)
    found = await reads.quotas(TEAM, frozenset({sync_target_key("compute", "eu-1")}))
    assert [(q.location, q.workspace, q.team, dict(q.hard)) for q in found] == [
        ("eu", "compute", TEAM, {"pods": "6"}), ("us", "compute", TEAM, {"pods": "2"})]
    assert found[0].targets == EU and found[1].targets == US
    found = await reads.quotas(TEAM, frozenset({sync_target_key(TEAM, "own")}))
    assert [(q.location, q.workspace) for q in found] == [("mine", TEAM)]
    assert await reads.quotas("team-c", frozenset({sync_target_key("compute", "eu-1")})) == []


async def test_a_location_bound_for_all_workspaces_counts_every_team_placed_there() -> None:
    """`workspace: "*"`: the Location's bound for every team together; another team's Deployments count."""
    theirs = namespace("default", eu_1="Placed")
    theirs["metadata"]["annotations"] = {CLUSTER_ANNOTATION: "team-other"}
    other = deployment("web", replicas=5)
    other["metadata"]["annotations"] = {CLUSTER_ANNOTATION: "team-other"}
    reads = Reads([namespace("default", eu_1="Placed")], [deployment("web", replicas=1)],
                  [Quota("eu", "compute", EVERY_TEAM, {"pods": "8"}, EU)])
    reads.others, reads.others_ns = [other], [theirs]
    plugin = LocationQuota(reads)
    await plugin.validate(write(UPDATE, deployment("web", replicas=3), deployment("web", replicas=1)))  # 5 + 3
    with pytest.raises(st.APIError) as refused:
        await plugin.validate(write(UPDATE, deployment("web", replicas=4), deployment("web", replicas=1)))
    assert refused.value.code == 403
    assert 'exceeded quota: location "eu" of workspace "compute" for all workspaces, requested: pods=3, ' \
        "used: pods=6, limited: pods=8" in refused.value.message
