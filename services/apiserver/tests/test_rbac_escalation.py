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
    namespace = "default" if res.namespaced else ""
    ctx = RequestContext(RequestInfo("c", ""), user=user)
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
    return EscalationCheck(RBACAuthorizer(index))


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


async def test_an_unchanged_role_update_is_not_an_escalation(index: PolicyIndex, check: EscalationCheck) -> None:
    big = role([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    relabelled = {**big, "metadata": {"name": "r", "labels": {"a": "b"}}}
    await check.validate(attrs(ROLE, relabelled, operation=UPDATE, old=big))


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
