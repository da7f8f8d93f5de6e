"""Served end to end in-process: what a tenant's admin may impersonate. A grant in its logical cluster
reaches nothing beyond it (other clusters, `/clusters/*`, `admin`), and `system:masters`, kcp's superuser
group, is impersonated only by a grant in `admin`; even then kcp's reserved API groups stay closed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from kcp_apiserver.apimachinery.request import AUTHENTICATED, UserInfo
from kcp_apiserver.filters.authentication import StaticTokenAuthenticator
from kcp_apiserver.server.kcp import kcp_config

ADMIN = {"Authorization": "Bearer admin-token"}
ALICE = {"Authorization": "Bearer alice-token"}  # cluster-admin of her own logical cluster, no more
AS_SOMEONE = {**ALICE, "Impersonate-User": "someone"}
AS_MASTER = {**ALICE, "Impersonate-User": "root", "Impersonate-Group": "system:masters"}
RBAC = "/apis/rbac.authorization.k8s.io/v1"
SYNC_TARGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "synctargets.workload.kcp.io"},
    "spec": {"group": "workload.kcp.io", "scope": "Cluster",
             "names": {"plural": "synctargets", "kind": "SyncTarget"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture
async def client(etcd_endpoint: str, serve: Any) -> TestClient[Any, Any]:
    config = kcp_config([etcd_endpoint], "admin-token", identity=f"imp-{uuid.uuid4().hex[:6]}")
    config.authenticators = [*config.authenticators,
                             StaticTokenAuthenticator({"alice-token": UserInfo("alice", groups=(AUTHENTICATED,))})]
    return (await serve(config))[1]


def prefix(cluster: str) -> str:
    return "" if cluster == "admin" else f"/clusters/{cluster}"


async def create(client: TestClient[Any, Any], cluster: str, path: str, body: dict[str, Any]) -> None:
    created = await client.post(f"{prefix(cluster)}{path}", headers=ADMIN, json=body)
    assert created.status == 201, await created.text()


async def bind_alice(client: TestClient[Any, Any], cluster: str, role: str) -> None:
    await create(client, cluster, f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"alice-{role}-{uuid.uuid4().hex[:6]}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": "alice"}]})


async def whoami(client: TestClient[Any, Any], cluster: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    resp = await client.post(f"{prefix(cluster)}/apis/authentication.k8s.io/v1/selfsubjectreviews", headers=headers,
                             json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return resp.status, await resp.json()


async def until_allowed(client: TestClient[Any, Any], cluster: str, headers: dict[str, str]) -> None:
    """RBAC objects reach the authorizer through a watch."""
    for _ in range(200):
        if (await whoami(client, cluster, headers))[0] == 201:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never allowed in {cluster}")


async def test_a_tenant_admin_impersonates_in_its_own_cluster_only(client: TestClient[Any, Any]) -> None:
    home, other = f"home-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    await bind_alice(client, home, "cluster-admin")
    await until_allowed(client, home, AS_SOMEONE)
    assert (await whoami(client, home, AS_SOMEONE))[1]["status"]["userInfo"]["username"] == "someone"
    for path in (f"/clusters/{other}/api/v1/configmaps", "/clusters/*/api/v1/configmaps", "/api/v1/configmaps"):
        denied = await client.get(path, headers=AS_SOMEONE)
        assert denied.status == 403, path
        assert (await denied.json())["message"] == (
            'users "someone" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the '
            'cluster scope')


async def test_impersonating_system_masters_needs_a_grant_in_admin(client: TestClient[Any, Any]) -> None:
    home = f"home-{uuid.uuid4().hex[:6]}"
    await bind_alice(client, home, "cluster-admin")
    await until_allowed(client, home, AS_SOMEONE)
    denied = await client.get(f"/clusters/{home}/api/v1/secrets", headers=AS_MASTER)
    assert denied.status == 403
    assert (await denied.json())["message"] == (
        'groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" '
        'at the cluster scope')
    created = await client.post(f"/clusters/{home}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                headers=AS_MASTER, json=SYNC_TARGETS_CRD)
    assert created.status == 403, await created.text()
    # kcp's admin may hand the group out, in admin
    masters = f"impersonate-masters-{home}"
    await create(client, "admin", f"{RBAC}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": masters},
        "rules": [{"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"],
                   "resourceNames": ["system:masters"]}]})
    await bind_alice(client, "admin", masters)
    await until_allowed(client, home, AS_MASTER)
    assert (await client.get(f"/clusters/{home}/api/v1/secrets", headers=AS_MASTER)).status == 200
    # and still kcp's groups ask who authenticated: a tenant
    created = await client.post(f"/clusters/{home}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                headers=AS_MASTER, json=SYNC_TARGETS_CRD)
    assert created.status == 403, await created.text()
    assert (await created.json())["message"].endswith("forbidden: workload.kcp.io is a reserved group")
