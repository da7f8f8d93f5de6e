"""kube's bootstrap RBAC in every logical cluster (issue 28 item 4): the ~70 ClusterRoles and their bindings,
held once and shown in each logical cluster as born with it, and granting what kube's grant."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from kcp_apiserver.apimachinery.request import ANONYMOUS, AUTHENTICATED, RequestInfo, UserInfo
from kcp_apiserver.rbac import defaults
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import PolicyIndex
from kcp_apiserver.registry.builtin.rbac import RESOURCES as RBAC_RESOURCES
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.kcp import kcp_config
from kcp_apiserver.storage.keys import scope_prefix
from kcpcommon.kubetypes import IMPORTED_LABEL

Obj = dict[str, Any]
ADMIN = {"Authorization": "Bearer admin-token"}
RBAC = "/apis/rbac.authorization.k8s.io/v1"
SOME_OF_KUBES = ("admin", "edit", "view", "cluster-admin", "system:aggregate-to-view", "system:basic-user",
                 "system:discovery", "system:public-info-viewer", "system:heapster", "system:kube-scheduler",
                 "system:kube-controller-manager", "system:node", "system:node-proxier", "system:monitoring",
                 "system:controller:deployment-controller", "system:controller:namespace-controller",
                 "system:certificates.k8s.io:kubelet-serving-approver")


def request(cluster: str, verb: str, group: str, resource: str, namespace: str = "default", name: str = "",
            subresource: str = "") -> RequestInfo:
    return RequestInfo(cluster, "", True, verb, "apis", group, "v1", namespace, resource, name, subresource)


def path(cluster: str, url: str) -> RequestInfo:
    return RequestInfo(cluster, url, False, "get")


# -- the data ----------------------------------------------------------------------------------


def test_kubes_bootstrap_roles_are_all_there_labelled_and_annotated_as_kube_does() -> None:
    names = [role["metadata"]["name"] for role in defaults.CLUSTER_ROLES]
    assert len(names) == len(set(names)) and len(names) >= 60
    assert set(SOME_OF_KUBES) <= set(names)
    assert sum(name.startswith("system:controller:") for name in names) >= 30
    for obj in (*defaults.CLUSTER_ROLES, *defaults.CLUSTER_ROLE_BINDINGS):
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def test_every_default_binding_names_a_default_role_and_controllers_their_service_accounts() -> None:
    roles = {role["metadata"]["name"] for role in defaults.CLUSTER_ROLES}
    bindings = {b["metadata"]["name"]: b for b in defaults.CLUSTER_ROLE_BINDINGS}
    assert all(b["roleRef"]["name"] in roles for b in bindings.values())
    assert bindings["system:controller:job-controller"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"}]
    assert "subjects" not in bindings["system:node"]  # kube leaves it empty: the Node authorizer grants nodes
    assert bindings["system:kube-scheduler"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}]


def test_a_default_shows_the_uid_and_creation_time_of_the_cluster_that_shows_it() -> None:
    index = PolicyIndex()
    one = index.default_object("ClusterRole", "one", "view", created="2026-01-02T03:04:05Z")
    two = index.default_object("ClusterRole", "two", "view", created="2026-02-02T03:04:05Z")
    assert one is not None and two is not None
    assert one["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert two["metadata"]["creationTimestamp"] == "2026-02-02T03:04:05Z"
    assert one["metadata"]["uid"] != two["metadata"]["uid"]
    assert one["metadata"]["annotations"]["kcp.io/cluster"] == "one"


# -- what they grant -----------------------------------------------------------------------------


def test_the_defaults_grant_what_kubes_grant() -> None:
    authz = RBACAuthorizer(PolicyIndex())
    someone = UserInfo("someone", groups=(AUTHENTICATED,))
    assert authz.allows(someone, request("c", "create", "authorization.k8s.io", "selfsubjectaccessreviews", ""))
    assert authz.allows(someone, request("c", "create", "authentication.k8s.io", "selfsubjectreviews", ""))
    assert authz.allows(someone, path("c", "/apis"))
    assert not authz.allows(someone, request("c", "list", "apps", "deployments"))
    for url in ("/version", "/healthz", "/readyz", "/livez"):
        assert authz.allows(ANONYMOUS, path("c", url))
    assert not authz.allows(ANONYMOUS, path("c", "/apis"))
    assert not authz.allows(ANONYMOUS, request("c", "create", "authorization.k8s.io", "selfsubjectaccessreviews", ""))
    scheduler = UserInfo("system:kube-scheduler", groups=(AUTHENTICATED,))
    assert authz.allows(scheduler, request("c", "create", "", "pods", name="p", subresource="binding"))
    assert authz.allows(scheduler, request("c", "update", "coordination.k8s.io", "leases", "kube-system",
                                           "kube-scheduler"))
    assert not authz.allows(scheduler, request("c", "update", "coordination.k8s.io", "leases", "kube-system",
                                               "kube-controller-manager"))
    controller = UserInfo("system:serviceaccount:kube-system:deployment-controller",
                          groups=("system:serviceaccounts", AUTHENTICATED))
    assert authz.allows(controller, request("c", "update", "apps", "deployments", name="web", subresource="status"))
    assert not authz.allows(controller, request("c", "delete", "apps", "deployments", name="web"))
    monitor = UserInfo("prometheus", groups=("system:monitoring", AUTHENTICATED))
    assert authz.allows(monitor, path("c", "/metrics"))
    assert not authz.allows(someone, path("c", "/metrics"))


# -- served ---------------------------------------------------------------------------------------


class UserHeaderAuthenticator:
    """Test-only: `X-Test-User: <name>` is an authenticated user of that name."""

    async def authenticate(self, req: web.Request) -> UserInfo | None:
        name = req.headers.get("X-Test-User")
        return UserInfo(name, uid=f"uid-{name}", groups=(AUTHENTICATED,)) if name else None


@pytest.fixture
async def served(etcd_endpoint: str, serve: Any) -> tuple[APIServer, TestClient[Any, Any]]:
    config = kcp_config([etcd_endpoint], "admin-token", identity=f"boot-{uuid.uuid4().hex[:6]}")
    config.authenticators = [UserHeaderAuthenticator(), *config.authenticators]
    server, client = await serve(config)
    return server, client


async def born(client: TestClient[Any, Any], cluster: str) -> str:
    """Makes the logical cluster (its first write) and returns its `default` namespace's creation time."""
    made = await client.post(f"/clusters/{cluster}/api/v1/namespaces", headers=ADMIN,
                             json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    assert made.status == 201, await made.text()
    ns = await client.get(f"/clusters/{cluster}/api/v1/namespaces/default", headers=ADMIN)
    return str((await ns.json())["metadata"]["creationTimestamp"])


async def names(client: TestClient[Any, Any], url: str, **params: str) -> tuple[list[str], Obj]:
    reply = await client.get(url, headers=ADMIN, params=params)
    assert reply.status == 200, await reply.text()
    body = await reply.json()
    return [item["metadata"]["name"] for item in body["items"]], body


async def test_every_logical_cluster_lists_kubes_roles_and_none_is_stored(
        served: tuple[APIServer, TestClient[Any, Any]]) -> None:
    server, client = served
    fresh, used = f"fresh-{uuid.uuid4().hex[:6]}", f"used-{uuid.uuid4().hex[:6]}"
    await born(client, used)
    for cluster in ("admin", fresh, used):
        roles, _ = await names(client, f"/clusters/{cluster}{RBAC}/clusterroles")
        assert len(roles) >= 60 and set(SOME_OF_KUBES) <= set(roles) and roles == sorted(roles)
        bindings, _ = await names(client, f"/clusters/{cluster}{RBAC}/clusterrolebindings")
        assert {"system:controller:deployment-controller", "system:kube-scheduler"} <= set(bindings)
    # limit and continue page through them all, in order, with kube's remainingItemCount
    everything, _ = await names(client, f"/clusters/{used}{RBAC}/clusterroles")
    paged, token = [], ""
    while True:
        page, body = await names(client, f"/clusters/{used}{RBAC}/clusterroles", limit="25",
                                 **({"continue": token} if token else {}))
        paged += page
        token = body["metadata"].get("continue", "")
        if not token:
            break
        assert len(page) == 25 and body["metadata"]["remainingItemCount"] == len(everything) - len(paged)
    assert paged == everything
    # held once: not one RBAC object is stored for a logical cluster that has none of its own
    for res in RBAC_RESOURCES:
        for cluster in (fresh, used):
            stored, _, _ = await server.storage.list(scope_prefix(res.prefix, cluster, None))
            assert stored == [], (res.plural, cluster)


async def test_the_defaults_are_as_old_as_their_logical_cluster(
        served: tuple[APIServer, TestClient[Any, Any]]) -> None:
    _, client = served
    first, second = f"first-{uuid.uuid4().hex[:6]}", f"second-{uuid.uuid4().hex[:6]}"
    first_born = await born(client, first)
    while time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) <= first_born:  # timestamps count seconds
        await asyncio.sleep(0.05)
    second_born = await born(client, second)
    assert second_born > first_born
    for cluster, created in ((first, first_born), (second, second_born)):
        for kind in ("clusterroles/view", "clusterrolebindings/cluster-admin"):
            reply = await client.get(f"/clusters/{cluster}{RBAC}/{kind}", headers=ADMIN)
            assert (await reply.json())["metadata"]["creationTimestamp"] == created, (cluster, kind)


async def until_status(client: TestClient[Any, Any], url: str, headers: dict[str, str], wanted: int) -> None:
    """RBAC objects reach the authorizer through a watch: poll until the answer changes, with a deadline."""
    for _ in range(200):
        if (await client.get(url, headers=headers)).status == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{url} never answered {wanted}")


def imported_deployments() -> Obj:
    """Deployments as the cluster controller imports them from a physical cluster (kcp serves them then)."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "deployments.apps", "labels": {IMPORTED_LABEL: "true"}},
            "spec": {"group": "apps", "scope": "Namespaced",
                     "names": {"plural": "deployments", "singular": "deployment", "kind": "Deployment"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


async def test_a_user_bound_to_view_lists_deployments_and_one_bound_to_edit_creates_them(
        served: tuple[APIServer, TestClient[Any, Any]]) -> None:
    _, client = served
    cluster = f"apps-{uuid.uuid4().hex[:6]}"
    base = f"/clusters/{cluster}"
    made = await client.post(f"{base}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", headers=ADMIN,
                             json=imported_deployments())
    assert made.status == 201, await made.text()
    deployments = f"{base}/apis/apps/v1/namespaces/default/deployments"
    await until_status(client, deployments, ADMIN, 200)
    dora, erin = {"X-Test-User": "dora"}, {"X-Test-User": "erin"}
    assert (await client.get(deployments, headers=dora)).status == 403
    for user, role in (("dora", "view"), ("erin", "edit")):
        bound = await client.post(f"{base}{RBAC}/namespaces/default/rolebindings", headers=ADMIN, json={
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
        assert bound.status == 201, await bound.text()
    await until_status(client, deployments, dora, 200)
    web_deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "app:1"}]}}}}
    assert (await client.post(deployments, headers=dora, json=web_deployment)).status == 403
    await until_status(client, deployments, erin, 200)
    assert (await client.post(deployments, headers=erin, json=web_deployment)).status == 201
    # system:basic-user: any authenticated user may ask what it may do
    review = await client.post(f"{base}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", headers=dora, json={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "group": "apps", "resource": "deployments",
                                        "namespace": "default"}}})
    assert review.status == 201 and (await review.json())["status"]["allowed"] is False


async def test_public_paths_are_open_through_system_public_info_viewer(
        served: tuple[APIServer, TestClient[Any, Any]]) -> None:
    """Anonymous requests are accepted for the public paths only (as kube's AnonymousAuthConfigurableEndpoints
    does); what lets them through is the binding, as in kube: a cluster that narrows it closes them."""
    _, client = served
    cluster = f"closed-{uuid.uuid4().hex[:6]}"
    assert (await client.get("/version")).status == 200
    assert (await client.get(f"/clusters/{cluster}/healthz")).status == 200
    assert (await client.get("/apis")).status == 401
    binding = f"/clusters/{cluster}{RBAC}/clusterrolebindings/system:public-info-viewer"
    shown = await (await client.get(binding, headers=ADMIN)).json()
    shown["subjects"] = [s for s in shown["subjects"] if s["name"] == AUTHENTICATED]
    replaced = await client.put(binding, headers=ADMIN, json=shown)
    assert replaced.status == 200, await replaced.text()
    await until_status(client, f"/clusters/{cluster}/version", {}, 403)
    denied = await (await client.get(f"/clusters/{cluster}/healthz")).json()
    assert denied["message"] == 'forbidden: User "system:anonymous" cannot get path "/healthz"'
    assert (await client.get(f"/clusters/{cluster}/version", headers={"X-Test-User": "dora"})).status == 200
    assert (await client.get("/version")).status == 200  # other logical clusters keep kube's default
