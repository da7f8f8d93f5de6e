"""The escalation check: a Role or binding grants only what its writer holds, unless escalate or bind."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.escalation import EscalationCheck
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.builtin.rbac import RESOURCES
from kcp_apiserver.registry.resource import Resource

ROLE, ROLE_BINDING, CLUSTER_ROLE, CLUSTER_ROLE_BINDING = RESOURCES
BOB = UserInfo("bob", groups=("devs", "system:authenticated"))
ANN = {"kcp.io/cluster": "c"}
READ_CM = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}


def held(index: PolicyIndex, rules: list[dict[str, Any]], *, namespace: str = "default") -> None:
    """Bob holds `rules` in `namespace` ("" = cluster-wide) of logical cluster c."""
    index.observe_cluster_role({"metadata": {"name": "bobs", "annotations": ANN}, "rules": rules}, False)
    meta: dict[str, Any] = {"name": "bobs", "annotations": ANN}
    if namespace:
        meta["namespace"] = namespace
    index.observe_binding({"metadata": meta, "roleRef": {"kind": "ClusterRole", "name": "bobs"},
                           "subjects": [{"kind": "User", "name": "bob"}]}, False)


def attrs(res: Any, obj: dict[str, Any], *, user: UserInfo = BOB, operation: str = CREATE,
          old: dict[str, Any] | None = None) -> Attributes:
    """A write as the filters describe it: a create's request names no object, an update's does."""
    namespace = "default" if res.namespaced else ""
    name = obj["metadata"]["name"] if operation == UPDATE else ""
    ctx = RequestContext(RequestInfo("c", "", True, operation.lower(), "apis", res.group, "v1", namespace, res.plural,
                                     name), user=user)
    return Attributes(ctx, res, operation, namespace, obj["metadata"]["name"], obj, old)


def role(rules: list[dict[str, Any]], name: str = "r") -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": rules}


def binding(kind: str, name: str) -> dict[str, Any]:
    return {"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind,
                                                    "name": name},
            "subjects": [{"kind": "User", "name": "someone"}]}


@pytest.fixture
def index() -> PolicyIndex:
    return PolicyIndex()


@pytest.fixture
def check(index: PolicyIndex) -> EscalationCheck:
    async def get(res: Resource, cluster: str, namespace: str, name: str) -> dict[str, Any]:
        """The registry's read: the index's objects stand in for storage, NotFound as kube words it."""
        if res.kind == "Role":
            policy = index.clusters.get(cluster)
            rules = policy.roles.get((namespace, name)) if policy is not None else None
            if rules is not None:
                return {"metadata": {"name": name, "namespace": namespace}, "rules": [r.to_dict() for r in rules]}
        elif index.cluster_role(cluster, name) is not None:
            return {"metadata": {"name": name},
                    "rules": [r.to_dict() for r in index.cluster_role_rules(cluster, name)]}
        raise st.not_found(res.plural, name, res.group)

    return EscalationCheck(RBACAuthorizer(index), get)


async def test_a_role_within_what_the_writer_holds_passes(index: PolicyIndex, check: EscalationCheck) -> None:
    held(index, [READ_CM])
    await check.validate(attrs(ROLE, role([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])))


async def test_a_role_granting_more_is_refused_with_kubes_message(index: PolicyIndex,
                                                                  check: EscalationCheck) -> None:
    held(index, [READ_CM])
    with pytest.raises(st.APIError) as refused:
        await check.validate(attrs(ROLE, role([{"apiGroups": [""], "resources": ["configmaps", "secrets"],
                                                "verbs": ["get"]}], name="more")))
    assert refused.value.code == 403
    assert refused.value.message == (
        'roles.rbac.authorization.k8s.io "more" is forbidden: user "bob" (groups=["devs" "system:authenticated"]) '
        'is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')


async def test_rights_in_another_namespace_do_not_count(index: PolicyIndex, check: EscalationCheck) -> None:
    held(index, [READ_CM], namespace="other")
    with pytest.raises(st.APIError):
        await check.validate(attrs(ROLE, role([READ_CM])))
    with pytest.raises(st.APIError):  # a ClusterRole needs cluster-wide rights
        await check.validate(attrs(CLUSTER_ROLE, role([READ_CM])))


async def test_escalate_lifts_the_role_check(index: PolicyIndex, check: EscalationCheck) -> None:
    held(index, [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}])
    await check.validate(attrs(ROLE, role([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])))


async def test_an_aggregation_rule_needs_full_authority(index: PolicyIndex, check: EscalationCheck) -> None:
    held(index, [READ_CM], namespace="")
    aggregating = {"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{}]}, "rules": []}
    with pytest.raises(st.APIError) as refused:
        await check.validate(attrs(CLUSTER_ROLE, aggregating))
    assert refused.value.message.endswith("must have cluster-admin privileges to use the aggregationRule")


async def test_an_update_the_garbage_collector_makes_is_not_an_escalation(check: EscalationCheck) -> None:
    big = role([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    orphaned = {**big, "metadata": {"name": "r", "finalizers": ["orphan"], "resourceVersion": "7",
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o",
                                                         "uid": "u"}]}}
    await check.validate(attrs(ROLE, orphaned, operation=UPDATE, old=big))


async def test_any_other_update_of_a_role_not_held_is_refused(index: PolicyIndex, check: EscalationCheck) -> None:
    """As kube: relabelling a ClusterRole could aggregate its rules into a role others hold."""
    held(index, [READ_CM], namespace="")
    big = role([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], name="big")
    relabelled = {**big, "metadata": {"name": "big", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}}
    with pytest.raises(st.APIError) as refused:
        await check.validate(attrs(CLUSTER_ROLE, relabelled, operation=UPDATE, old=big))
    assert refused.value.code == 403
    assert "is attempting to grant RBAC permissions not currently held" in refused.value.message


async def test_escalate_by_resource_name_lifts_the_check_on_that_roles_updates_only(
        index: PolicyIndex, check: EscalationCheck) -> None:
    """kube asks for `escalate` on the request's name, and a create's request names none."""
    held(index, [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"],
                  "resourceNames": ["r"]}])
    everything = role([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    await check.validate(attrs(ROLE, everything, operation=UPDATE, old=role([])))
    with pytest.raises(st.APIError):
        await check.validate(attrs(ROLE, everything))
    with pytest.raises(st.APIError):
        await check.validate(attrs(ROLE, role(everything["rules"], name="other"), operation=UPDATE,
                                   old=role([], name="other")))


async def test_dropping_an_aggregation_rule_needs_full_authority(index: PolicyIndex, check: EscalationCheck) -> None:
    held(index, [READ_CM], namespace="")
    aggregating = {"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{}]}, "rules": []}
    with pytest.raises(st.APIError) as refused:
        await check.validate(attrs(CLUSTER_ROLE, role([], name="agg"), operation=UPDATE, old=aggregating))
    assert refused.value.message.endswith("must have cluster-admin privileges to use the aggregationRule")


async def test_binding_a_role_not_fully_held_is_refused_unless_bind(index: PolicyIndex,
                                                                   check: EscalationCheck) -> None:
    held(index, [READ_CM])
    await check.validate(attrs(ROLE_BINDING, binding("ClusterRole", "bobs")))
    with pytest.raises(st.APIError) as refused:
        await check.validate(attrs(ROLE_BINDING, binding("ClusterRole", "edit")))
    assert refused.value.message.startswith('rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "bob"')
    index.observe_role({"metadata": {"name": "binder", "namespace": "default", "annotations": ANN},
                        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                                   "verbs": ["bind"], "resourceNames": ["edit"]}]}, False)
    index.observe_binding({"metadata": {"name": "binder", "namespace": "default", "annotations": ANN},
                           "roleRef": {"kind": "Role", "name": "binder"},
                           "subjects": [{"kind": "User", "name": "bob"}]}, False)
    await check.validate(attrs(ROLE_BINDING, binding("ClusterRole", "edit")))
    with pytest.raises(st.APIError):  # bind in namespace default says nothing of cluster-wide bindings
        await check.validate(attrs(CLUSTER_ROLE_BINDING, binding("ClusterRole", "edit")))


async def test_system_masters_are_exempt(check: EscalationCheck) -> None:
    admin = UserInfo("kcp-admin", groups=("system:masters",))
    await check.validate(attrs(CLUSTER_ROLE_BINDING, binding("ClusterRole", "cluster-admin"), user=admin))


@pytest.mark.parametrize(("res", "kind", "resource"), [(ROLE_BINDING, "Role", "roles"),
                                                        (ROLE_BINDING, "ClusterRole", "clusterroles"),
                                                        (CLUSTER_ROLE_BINDING, "ClusterRole", "clusterroles")])
async def test_binding_a_role_that_does_not_exist_is_not_found(index: PolicyIndex, check: EscalationCheck,
                                                               res: Resource, kind: str, resource: str) -> None:
    """Nothing to compare bob's rights with: kube answers the role's NotFound, else whoever creates that role
    later grants it to bob's subjects unawares."""
    held(index, [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "clusterrolebindings"],
                  "verbs": ["create", "update"]}], namespace="")
    with pytest.raises(st.APIError) as missing:
        await check.validate(attrs(res, binding(kind, "does-not-exist")))
    assert (missing.value.code, missing.value.reason) == (404, "NotFound")
    assert missing.value.message == f'{resource}.rbac.authorization.k8s.io "does-not-exist" not found'
    # an update is judged the same (the role may have been deleted since)
    with pytest.raises(st.APIError) as missing:
        await check.validate(attrs(res, binding(kind, "does-not-exist"), operation=UPDATE,
                                   old=binding(kind, "does-not-exist") | {"subjects": []}))
    assert missing.value.code == 404


async def test_bind_on_the_name_of_a_role_that_does_not_exist_yet_allows_the_binding(
        index: PolicyIndex, check: EscalationCheck) -> None:
    held(index, [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["bind"],
                  "resourceNames": ["later"]}])
    await check.validate(attrs(ROLE_BINDING, binding("Role", "later")))
    with pytest.raises(st.APIError) as missing:
        await check.validate(attrs(ROLE_BINDING, binding("Role", "another")))
    assert missing.value.code == 404


async def test_adding_subjects_to_a_binding_of_a_role_not_held_is_refused(index: PolicyIndex,
                                                                          check: EscalationCheck) -> None:
    """The roleRef cannot change, but the subjects can: each update is judged as kube's storage does."""
    held(index, [READ_CM])
    admins = binding("ClusterRole", "admin") | {"subjects": [{"kind": "User", "name": "root"}]}
    joined = admins | {"subjects": [{"kind": "User", "name": "root"}, {"kind": "User", "name": "bob"}]}
    with pytest.raises(st.APIError) as refused:
        await check.validate(attrs(ROLE_BINDING, joined, operation=UPDATE, old=admins))
    assert refused.value.code == 403
    assert refused.value.message.startswith('rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "bob"')
    # the garbage collector's writes are not judged
    await check.validate(attrs(ROLE_BINDING, admins | {"metadata": {"name": "b", "finalizers": ["orphan"]}},
                               operation=UPDATE, old=admins))
