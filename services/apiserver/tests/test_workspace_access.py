"""Entering a workspace (kcp's `access` verb on "/"), the owner annotation, and the Workspace's table:
the decisions made without a server."""

from __future__ import annotations

import json
from typing import Any

from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo, system_context
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.tables import AGE
from kcp_apiserver.tenancy.access import WorkspaceAccess
from kcp_apiserver.tenancy.admission import WorkspaceOwner
from kcp_apiserver.tenancy.types import OWNER_ANNOTATION, WORKSPACE

BOB = UserInfo("bob", groups=("system:authenticated",))
READ_ALL_CM = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
ENTER = [{"nonResourceURLs": ["/"], "verbs": ["access"]}]


def cm(cluster: str, verb: str, namespace: str = "default", name: str = "") -> RequestInfo:
    return RequestInfo(cluster, "", True, verb, "api", "", "v1", namespace, "configmaps", name)


def access_with(cluster: str, *roles: tuple[str, list[dict[str, Any]]]) -> WorkspaceAccess:
    index = PolicyIndex()
    for name, rules in roles:
        meta = {"name": name, "annotations": {"kcp.io/cluster": cluster}}
        index.observe_cluster_role({"kind": "ClusterRole", "metadata": meta, "rules": rules}, False)
        index.observe_binding({"kind": "ClusterRoleBinding", "metadata": meta, "subjects": [
            {"kind": "User", "name": "bob"}], "roleRef": {"kind": "ClusterRole", "name": name}}, False)
    access = WorkspaceAccess(RBACAuthorizer(index))
    access.workspaces.add("root:team")
    return access


async def test_a_workspace_is_closed_to_a_user_without_access_whatever_else_it_may_do() -> None:
    access = access_with("root:team", ("reader", READ_ALL_CM))
    decision = await access.authorize(RequestContext(cm("root:team", "list", namespace=""), user=BOB))
    assert not decision.allowed
    assert decision.reason == 'access denied to workspace "root:team"'


async def test_access_lets_a_user_in_and_rbac_decides_the_rest() -> None:
    access = access_with("root:team", ("reader", READ_ALL_CM), ("enter", ENTER))
    assert (await access.authorize(RequestContext(cm("root:team", "list", namespace=""), user=BOB))).allowed
    assert not (await access.authorize(RequestContext(cm("root:team", "delete", name="x"), user=BOB))).allowed


async def test_logical_clusters_no_workspace_made_are_not_gated() -> None:
    access = access_with("flat", ("reader", READ_ALL_CM))
    assert (await access.authorize(RequestContext(cm("flat", "list", namespace=""), user=BOB))).allowed


async def test_the_creator_is_recorded_and_cannot_be_rewritten() -> None:
    owner = WorkspaceOwner()
    ws: dict[str, Any] = {"metadata": {"name": "team", "annotations": {OWNER_ANNOTATION: "forged"}}}
    await owner.admit(Attributes(RequestContext(cm("root", "create"), user=BOB), WORKSPACE, CREATE, "", "team",
                                 ws, None))
    recorded = ws["metadata"]["annotations"][OWNER_ANNOTATION]
    assert json.loads(recorded) == {"username": "bob", "groups": ["system:authenticated"]}
    edited: dict[str, Any] = {"metadata": {"name": "team", "annotations": {OWNER_ANNOTATION: "mallory"}}}
    await owner.admit(Attributes(system_context("root"), WORKSPACE, UPDATE, "", "team", edited, ws))
    assert edited["metadata"]["annotations"][OWNER_ANNOTATION] == recorded


def test_workspaces_print_kcps_columns() -> None:
    assert [c.name for c in WORKSPACE.columns] == ["Name", "Type", "Region", "Phase", "URL", AGE.name]
    assert [c.name for c in WORKSPACE.columns if c.priority] == ["Region"]  # shown with -o wide
    assert (WORKSPACE.group, WORKSPACE.version, WORKSPACE.namespaced) == ("tenancy.kcp.io", "v1alpha1", False)


def test_a_user_is_shown_the_workspaces_it_may_enter_or_created() -> None:
    access = access_with("root:mine", ("enter", ENTER))
    ctx = RequestContext(cm("root", "list", namespace=""), user=BOB)
    visible = access.visibility(WORKSPACE, ctx)
    assert visible is not None

    def ws(name: str, owner: str = "") -> dict[str, Any]:
        annotations = {"kcp.io/cluster": "root"}
        if owner:
            annotations[OWNER_ANNOTATION] = json.dumps({"username": owner})
        return {"metadata": {"name": name, "annotations": annotations}}

    assert visible(ws("mine"))  # bob may access root:mine
    assert not visible(ws("theirs", owner="alice"))
    assert visible(ws("new", owner="bob"))  # created by bob, before its binding exists
    assert access.visibility(WORKSPACE, system_context("root")) is None  # the server's own reads see all
