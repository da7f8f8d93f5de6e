"""The policy index and the RBAC authorizer: bindings by subject per logical cluster, shared defaults,
aggregation, strangers, system:masters and the wildcard rule."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apimachinery.request import RequestInfo, UserInfo
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import PolicyIndex

GROUP = "rbac.authorization.k8s.io"
T0 = "2026-03-01T10:00:00Z"
BOB = UserInfo("bob", groups=("devs", "system:authenticated"))


def meta(cluster: str, name: str, namespace: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "annotations": {"kcp.io/cluster": cluster}, "labels": labels or {}}
    if namespace:
        out["namespace"] = namespace
    return out


def role(cluster: str, name: str, rules: list[dict[str, Any]], namespace: str = "default") -> dict[str, Any]:
    return {"kind": "Role", "metadata": meta(cluster, name, namespace), "rules": rules}


def cluster_role(cluster: str, name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None,
                 aggregate: dict[str, str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "ClusterRole", "metadata": meta(cluster, name, labels=labels), "rules": rules}
    if aggregate:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": aggregate}]}
    return obj


def binding(cluster: str, name: str, kind: str, role_name: str, subjects: list[dict[str, str]],
            namespace: str = "default") -> dict[str, Any]:
    return {"kind": "RoleBinding" if namespace else "ClusterRoleBinding", "metadata": meta(cluster, name, namespace),
            "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role_name}, "subjects": subjects}


def cm(cluster: str, verb: str, namespace: str = "default", name: str = "") -> RequestInfo:
    return RequestInfo(cluster, "", True, verb, "api", "", "v1", namespace, "configmaps", name)


READ_CM = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]


def test_a_rolebinding_grants_in_its_namespace_and_cluster_only() -> None:
    index = PolicyIndex()
    authz = RBACAuthorizer(index)
    index.observe_role(role("a", "reader", READ_CM), False)
    index.observe_binding(binding("a", "bob-reads", "Role", "reader", [{"kind": "User", "name": "bob"}]), False)
    assert authz.allows(BOB, cm("a", "list"))
    assert authz.decide(BOB, cm("a", "list")).reason == ('RBAC: allowed by RoleBinding "bob-reads/default" of Role '
                                                         '"reader" to User "bob"')
    assert not authz.allows(BOB, cm("a", "list", namespace="other"))
    assert not authz.allows(BOB, cm("a", "list", namespace=""))
    assert not authz.allows(BOB, cm("b", "list"))
    assert not authz.allows(BOB, cm("a", "create"))
    index.observe_binding(binding("a", "bob-reads", "Role", "reader", []), True)
    assert not authz.allows(BOB, cm("a", "list"))


def test_groups_service_accounts_and_clusterroles_in_rolebindings() -> None:
    index = PolicyIndex()
    authz = RBACAuthorizer(index)
    index.observe_cluster_role(cluster_role("a", "cm-reader", READ_CM), False)
    index.observe_binding(binding("a", "devs", "ClusterRole", "cm-reader", [{"kind": "Group", "name": "devs"}],
                                  namespace="team"), False)
    index.observe_binding(binding("a", "bot", "ClusterRole", "cm-reader",
                                  [{"kind": "ServiceAccount", "name": "bot"}], namespace="team"), False)
    assert authz.allows(BOB, cm("a", "get", namespace="team", name="x"))
    assert not authz.allows(BOB, cm("a", "get", namespace="default", name="x"))
    bot = UserInfo("system:serviceaccount:team:bot", groups=("system:serviceaccounts", "system:authenticated"),
                   cluster="a")
    assert authz.decide(bot, cm("a", "list", namespace="team")).reason == (
        'RBAC: allowed by RoleBinding "bot/team" of ClusterRole "cm-reader" to ServiceAccount "bot/team"')
    assert authz.decide(BOB, cm("a", "list", namespace="team")).reason == (
        'RBAC: allowed by RoleBinding "devs/team" of ClusterRole "cm-reader" to Group "devs"')


def test_a_cluster_bound_identity_is_a_stranger_elsewhere_and_under_the_wildcard() -> None:
    index = PolicyIndex()
    authz = RBACAuthorizer(index)
    masters_in_a = UserInfo("system:serviceaccount:default:root", groups=("system:masters",), cluster="a")
    for cluster in ("a", "b", "*"):
        index.observe_binding(binding(cluster if cluster != "*" else "admin", "all", "ClusterRole", "cluster-admin",
                                      [{"kind": "User", "name": masters_in_a.name}], namespace=""), False)
    assert authz.allows(masters_in_a, cm("a", "delete", name="x"))
    assert not authz.allows(masters_in_a, cm("b", "get", name="x"))
    assert not authz.allows(masters_in_a, cm("*", "list", namespace=""))


def test_system_masters_may_do_anything_without_a_binding() -> None:
    authz = RBACAuthorizer(PolicyIndex())
    admin = UserInfo("kcp-admin", groups=("system:masters",))
    assert authz.allows(admin, cm("any", "deletecollection"))
    assert authz.allows(admin, RequestInfo("*", "/metrics", False, "get"))


def test_the_wildcard_needs_a_clusterrolebinding_in_admin() -> None:
    index = PolicyIndex()
    authz = RBACAuthorizer(index)
    index.observe_cluster_role(cluster_role("admin", "lister", READ_CM), False)
    index.observe_cluster_role(cluster_role("tenant", "lister", READ_CM), False)
    bob = [{"kind": "User", "name": "bob"}]
    index.observe_binding(binding("tenant", "bob", "ClusterRole", "lister", bob, namespace=""), False)
    index.observe_binding(binding("admin", "bob", "ClusterRole", "lister", bob, namespace="default"), False)
    assert not authz.allows(BOB, cm("*", "list", namespace=""))
    assert not authz.allows(BOB, cm("*", "list", namespace="default"))
    index.observe_binding(binding("admin", "bob", "ClusterRole", "lister", bob, namespace=""), False)
    assert authz.allows(BOB, cm("*", "list", namespace=""))


def test_defaults_are_in_every_cluster_until_a_cluster_stores_its_own() -> None:
    index = PolicyIndex()
    authz = RBACAuthorizer(index)
    discovery = RequestInfo("x", "/apis/apps/v1", False, "get")
    assert authz.allows(BOB, discovery)
    ssar = RequestInfo("x", "", True, "create", "apis", "authorization.k8s.io", "v1", "", "selfsubjectaccessreviews")
    assert authz.allows(BOB, ssar)
    index.observe_binding(binding("x", "system:discovery", "ClusterRole", "system:discovery",
                                  [{"kind": "Group", "name": "nobody"}], namespace=""), False)
    assert not authz.allows(BOB, discovery)
    assert authz.allows(BOB, RequestInfo("y", "/apis/apps/v1", False, "get"))
    assert index.default_object("ClusterRole", "x", "cluster-admin", created=T0)["rules"][0]["verbs"] == ["*"]


def test_aggregation_gathers_labelled_clusterroles_of_the_same_cluster() -> None:
    index = PolicyIndex()
    authz = RBACAuthorizer(index)
    leases = [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}]
    lease = RequestInfo("a", "", True, "get", "apis", "coordination.k8s.io", "v1", "default", "leases", "l")
    index.observe_binding(binding("a", "bob-views", "ClusterRole", "view", [{"kind": "User", "name": "bob"}]),
                          False)
    index.observe_binding(binding("b", "bob-views", "ClusterRole", "view", [{"kind": "User", "name": "bob"}]),
                          False)
    assert authz.allows(BOB, cm("a", "get", name="x"))
    assert not authz.allows(BOB, lease)
    index.observe_cluster_role(cluster_role("a", "leases-view", leases,
                                            labels={"rbac.authorization.k8s.io/aggregate-to-view": "true"}), False)
    assert authz.allows(BOB, lease)
    assert not authz.allows(BOB, RequestInfo("b", "", True, "get", "apis", "coordination.k8s.io", "v1", "default",
                                             "leases", "l"))
    # admin aggregates edit, which aggregates view: the tenant's rule reaches admin too
    admin = index.default_object("ClusterRole", "a", "admin", created=T0)
    assert {"verbs": ["get"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]} in admin["rules"]
    # a tenant's own aggregating role
    index.observe_cluster_role(cluster_role("a", "mine", [], aggregate={"team": "x"}), False)
    index.observe_cluster_role(cluster_role("a", "part", READ_CM, labels={"team": "x"}), False)
    index.observe_binding(binding("a", "bob-mine", "ClusterRole", "mine", [{"kind": "User", "name": "bob"}],
                                  namespace="ns2"), False)
    assert authz.allows(BOB, cm("a", "get", namespace="ns2", name="x"))


def test_an_invalid_aggregation_selector_selects_nothing_instead_of_failing() -> None:
    index = PolicyIndex()
    bad = cluster_role("a", "bad", [], aggregate={"x": "y"})
    bad["aggregationRule"]["clusterRoleSelectors"] = [{"matchExpressions": [{"key": "k", "operator": "Near"}]}]
    index.observe_cluster_role(bad, False)
    assert index.cluster_role_rules("a", "bad") == ()
