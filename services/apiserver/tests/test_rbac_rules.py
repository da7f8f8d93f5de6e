"""kube's RBAC rule matching and its Covers check (the escalation rule), without a server."""

from __future__ import annotations

from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.rbac.rules import Rule, uncovered


def rule(verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None,
         names: list[str] | None = None, urls: list[str] | None = None) -> Rule:
    return Rule.from_dict({"verbs": verbs, "apiGroups": groups, "resources": resources, "resourceNames": names,
                           "nonResourceURLs": urls})


def resource(verb: str, res: str, *, group: str = "", name: str = "", sub: str = "", ns: str = "default"
             ) -> RequestInfo:
    return RequestInfo("c", "", True, verb, "apis" if group else "api", group, "v1", ns, res, name, sub)


def path(verb: str, url: str) -> RequestInfo:
    return RequestInfo("c", url, False, verb)


def test_verbs_groups_and_resources_must_all_match() -> None:
    r = rule(["get", "list"], [""], ["configmaps"])
    assert r.allows(resource("get", "configmaps", name="x"))
    assert r.allows(resource("list", "configmaps"))
    assert not r.allows(resource("delete", "configmaps", name="x"))
    assert not r.allows(resource("get", "secrets", name="x"))
    assert not r.allows(resource("get", "configmaps", group="apps", name="x"))


def test_stars_match_everything_of_their_field() -> None:
    assert rule(["*"], ["*"], ["*"]).allows(resource("deletecollection", "deployments", group="apps"))
    assert rule(["*"], ["*"], ["*"]).allows(resource("get", "deployments", group="apps", name="d", sub="scale"))
    assert not rule(["*"], ["*"], ["*"]).allows(path("get", "/healthz"))


def test_subresources_need_their_own_grant_or_a_star_prefix() -> None:
    assert not rule(["get"], ["apps"], ["deployments"]).allows(resource("get", "deployments", group="apps",
                                                                       name="d", sub="scale"))
    assert rule(["get"], ["apps"], ["deployments/scale"]).allows(resource("get", "deployments", group="apps",
                                                                         name="d", sub="scale"))
    assert rule(["get"], ["apps"], ["*/scale"]).allows(resource("get", "replicasets", group="apps", name="r",
                                                               sub="scale"))
    assert not rule(["get"], ["apps"], ["*/scale"]).allows(resource("get", "replicasets", group="apps", name="r"))


def test_resource_names_limit_to_named_objects_so_never_lists_nor_creates() -> None:
    r = rule(["get", "list", "create"], [""], ["configmaps"], names=["one"])
    assert r.allows(resource("get", "configmaps", name="one"))
    assert not r.allows(resource("get", "configmaps", name="two"))
    assert not r.allows(resource("list", "configmaps"))
    assert not r.allows(resource("create", "configmaps"))


def test_non_resource_urls_match_exactly_or_by_a_trailing_star() -> None:
    r = rule(["get"], urls=["/healthz", "/apis/*"])
    assert r.allows(path("get", "/healthz"))
    assert not r.allows(path("get", "/healthz/etcd"))
    assert r.allows(path("get", "/apis/apps/v1"))
    assert not r.allows(path("post", "/apis/apps/v1"))
    assert not r.allows(resource("get", "configmaps", name="x"))
    assert rule(["*"], urls=["*"]).allows(path("put", "/anything"))


def test_compact_strings_read_as_kubes() -> None:
    assert rule(["get"], [""], ["secrets"]).compact() == '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
    assert rule(["get"], urls=["/x"]).compact() == '{NonResourceURLs:["/x"], Verbs:["get"]}'


def test_covers_breaks_rules_down_and_reports_what_is_not_held() -> None:
    held = [rule(["get", "list"], [""], ["configmaps"]), rule(["*"], ["apps"], ["deployments"])]
    assert uncovered(held, [rule(["get"], [""], ["configmaps"]), rule(["delete"], ["apps"], ["deployments"])]) == []
    missing = uncovered(held, [rule(["get", "delete"], ["", "apps"], ["configmaps"])])
    assert [m.compact() for m in missing] == [
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}',
        '{APIGroups:["apps"], Resources:["configmaps"], Verbs:["delete"]}',
        '{APIGroups:["apps"], Resources:["configmaps"], Verbs:["get"]}',
    ]


def test_covers_honours_names_subresource_stars_and_urls() -> None:
    named = [rule(["get"], [""], ["configmaps"], names=["a", "b"])]
    assert uncovered(named, [rule(["get"], [""], ["configmaps"], names=["a"])]) == []
    assert uncovered(named, [rule(["get"], [""], ["configmaps"])])  # all names is more than two names
    assert uncovered([rule(["get"], ["apps"], ["*/scale"])], [rule(["get"], ["apps"], ["deployments/scale"])]) == []
    assert uncovered([rule(["get"], ["apps"], ["*/scale"])], [rule(["get"], ["apps"], ["deployments"])])
    assert uncovered([rule(["get"], urls=["/apis/*"])], [rule(["get"], urls=["/apis/apps"])]) == []
    assert uncovered([rule(["get"], urls=["/apis"])], [rule(["get"], urls=["/apis/apps"])])
    assert uncovered([rule(["*"], ["*"], ["*"])], [rule(["get"], urls=["/healthz"])])  # resources never cover URLs
