"""The initializing virtual workspace's pure parts: its URL, who may use it (`initialize` on the WorkspaceType,
the check tenancy.access makes), which LogicalClusters it shows, whom it acts as inside one, and which
initializers it knows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, UserInfo
from kcp_apiserver.filters.authorization import forbidden_message, judged
from kcp_apiserver.filters.requestinfo import parse, split_initializing
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.admission import DELETE, UPDATE, Attributes
from kcp_apiserver.registry.builtin import NAMESPACE
from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.tenancy.access import WorkspaceAccess, initialize_request
from kcp_apiserver.tenancy.initializing import InitializerLift, InitializingViews, owner_of, waits_for
from kcp_apiserver.tenancy.types import LOGICAL_CLUSTER, OWNER_ANNOTATION

BOB = UserInfo("bob", groups=("system:authenticated",))


def test_the_view_url_names_the_initializer_and_then_a_cluster_or_all_of_them() -> None:
    initializer, rest = split_initializing(
        "/services/initializingworkspaces/root:org:team/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters")
    assert (initializer, rest) == ("root:org:team", "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters")
    info = parse("GET", rest, watch_param=True)
    assert (info.cluster, info.verb, info.group, info.resource) == ("*", "watch", "core.kcp.io", "logicalclusters")
    initializer, rest = split_initializing("/services/initializingworkspaces/root:team/clusters/root:a/api/v1/namespaces")
    assert (initializer, rest) == ("root:team", "/clusters/root:a/api/v1/namespaces")
    assert split_initializing("/clusters/root/apis") == ("", "/clusters/root/apis")  # not the view: as it was


@pytest.mark.parametrize("path", [
    "/services/initializingworkspaces/",
    "/services/initializingworkspaces/root:team",
    "/services/initializingworkspaces/root:team/",
    "/services/initializingworkspaces/team/clusters/root:a/api",  # no path: not `<path>:<name>`
    "/services/initializingworkspaces/root:/clusters/root:a/api",  # no name
    "/services/initializingworkspaces/*:team/clusters/root:a/api",
    "/services/initializingworkspaces/Not_A:team/clusters/root:a/api",
    "/services/initializingworkspaces/root:team/apis/core.kcp.io/v1alpha1/logicalclusters",  # no cluster
    "/services/initializingworkspaces/root:team/clusters/",
])
def test_a_malformed_view_url_is_not_found(path: str) -> None:
    with pytest.raises(st.APIError) as exc:
        split_initializing(path)
    assert exc.value.code == 404


def lc(phase: str, initializers: list[str], owner: dict[str, Any] | None = None) -> Obj:
    annotations = {OWNER_ANNOTATION: json.dumps(owner)} if owner is not None else {}
    return {"metadata": {"name": "cluster", "annotations": annotations},
            "status": {"phase": phase, "initializers": initializers}}


def test_a_logical_cluster_is_shown_while_initializing_with_the_initializer_pending() -> None:
    assert waits_for(lc("Initializing", ["root:team", "root:org:x"]), "root:team")
    assert waits_for(lc("Initializing", ["root:team", "root:org:x"]), "root:org:x")
    assert not waits_for(lc("Initializing", ["root:org:x"]), "root:team")  # lifted, another one pending
    assert not waits_for(lc("Ready", ["root:team"]), "root:team")  # Ready: never shown
    assert not waits_for(lc("Initializing", []), "root:team")
    assert not waits_for({"metadata": {"name": "cluster"}}, "root:team")  # no status yet
    views = InitializingViews(lambda: None, lambda _c, _n: None)  # type: ignore[arg-type,return-value]
    shown = views.shows("root:team")
    assert shown(lc("Initializing", ["root:team"])) and not shown(lc("Initializing", ["root:other"]))


def test_inside_a_waiting_cluster_the_view_acts_as_the_workspace_s_owner() -> None:
    owner = owner_of(lc("Initializing", ["root:team"], {"username": "alice", "groups": ["team-a", "system:masters"]}))
    assert owner == UserInfo("alice", groups=("team-a", "system:masters"))
    assert owner_of(lc("Initializing", ["root:team"])) is None
    assert owner_of(lc("Initializing", ["root:team"], {"groups": ["x"]})) is None


async def test_only_initializers_a_workspace_type_makes_are_known() -> None:
    async def get(cluster: str, name: str) -> Obj | None:
        return {"spec": {"initializer": True}} if (cluster, name) == ("root:org", "team") else None

    views = InitializingViews(lambda: None, get)  # type: ignore[arg-type,return-value]
    assert await views.known("root:org:team")
    assert not await views.known("root:org:other")
    assert not await views.known("root:team")  # the type is looked up where the initializer says, nowhere else
    assert not await views.known("system:apibindings")  # the server's own


def grant(index: PolicyIndex, cluster: str, rule: dict[str, Any]) -> None:
    meta = {"name": "granted", "annotations": {"kcp.io/cluster": cluster}}
    index.observe_cluster_role({"kind": "ClusterRole", "metadata": meta, "rules": [rule]}, False)
    index.observe_binding({"kind": "ClusterRoleBinding", "metadata": meta, "subjects": [
        {"kind": "User", "name": "bob"}], "roleRef": {"kind": "ClusterRole", "name": "granted"}}, False)


def view_context(path: str, initializer: str = "root:org:team", verb: str = "GET") -> RequestContext:
    return RequestContext(parse(verb, path, watch_param=False), user=BOB, initializer=initializer)


async def test_the_view_is_authorized_by_initialize_on_the_workspace_type_only() -> None:
    index = PolicyIndex()
    access = WorkspaceAccess(RBACAuthorizer(index))
    any_request = view_context("/clusters/root:org:a/api/v1/namespaces", verb="POST")
    checked = judged(any_request)
    assert checked.info == initialize_request("root:org:team")
    assert (checked.info.cluster, checked.info.verb, checked.info.resource, checked.info.name) == (
        "root:org", "initialize", "workspacetypes", "team")
    assert forbidden_message(checked) == (
        'workspacetypes.tenancy.kcp.io "team" is forbidden: User "bob" cannot initialize resource "workspacetypes" '
        'in API group "tenancy.kcp.io" at the cluster scope')
    assert not (await access.authorize(checked)).allowed
    grant(index, "root:org:a", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})  # admin of the workspace
    assert not (await access.authorize(judged(any_request))).allowed
    grant(index, "root:org", {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"],
                              "resourceNames": ["team"], "verbs": ["initialize"]})
    assert (await access.authorize(judged(any_request))).allowed
    assert (await access.authorize(judged(view_context("/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters"))
                                   )).allowed
    assert not (await access.authorize(judged(view_context("/clusters/root:org:a/api", "root:org:other")))).allowed
    with pytest.raises(st.APIError) as exc:  # the server's own initializers have no view
        judged(view_context("/clusters/root:org:a/api", "system:apibindings"))
    assert exc.value.code == 404


def lift(before: list[str], after: list[str] | None, initializer: str = "root:team", operation: str = UPDATE,
         subresource: str = "status", resource: Any = LOGICAL_CLUSTER) -> Attributes:
    ctx = view_context("/clusters/root:a/apis/core.kcp.io/v1alpha1/logicalclusters/cluster/status", initializer,
                       verb="PATCH")
    return Attributes(ctx, resource, operation, "", "cluster", None if after is None else lc("Initializing", after),
                      lc("Initializing", before), subresource)


async def test_through_the_view_the_logical_cluster_s_status_only_loses_the_view_s_initializer() -> None:
    check = InitializerLift()
    await check.validate(lift(["root:team"], []))
    await check.validate(lift(["root:x", "root:team", "root:y"], ["root:x", "root:y"]))
    for before, after in ((["root:team"], ["root:team"]),  # nothing lifted
                          (["root:x", "root:team"], []),  # another initializer lifted too
                          (["root:x"], []),  # not the view's own
                          (["root:team"], ["root:other"])):  # one added
        with pytest.raises(st.APIError) as exc:
            await check.validate(lift(before, after))
        assert exc.value.code == 422 and 'only removing the "root:team" initializer' in exc.value.message
    for attrs in (lift(["root:team"], [], subresource=""),  # the object itself: only read
                  lift(["root:team"], None, operation=DELETE, subresource="")):
        with pytest.raises(st.APIError) as exc:
            await check.validate(attrs)
        assert exc.value.code == 405
    await check.validate(lift(["root:team"], [], operation=DELETE, subresource="", resource=NAMESPACE))  # not LCs
    plain = lift(["root:x", "root:team"], [])
    plain.ctx.initializer = ""  # not through the view: RBAC and tenancy.access decide
    await check.validate(plain)
