"""Served end to end in-process: an identity that belongs to one logical cluster (as a service
account's does) is refused everywhere else and under /clusters/*, even when bindings there name it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from kcp_apiserver.apimachinery.request import AUTHENTICATED, UserInfo
from kcp_apiserver.server.kcp import kcp_config

ADMIN = {"Authorization": "Bearer admin-token"}
BOT = "system:serviceaccount:default:bot"


class ClusterHeaderAuthenticator:
    """Test-only: `X-Test-SA: <cluster>` is the service account default/bot of that logical cluster."""

    async def authenticate(self, request: web.Request) -> UserInfo | None:
        cluster = request.headers.get("X-Test-SA")
        if not cluster:
            return None
        return UserInfo(BOT, uid="u", cluster=cluster,
                        groups=("system:serviceaccounts", "system:serviceaccounts:default", AUTHENTICATED))


@pytest.fixture
async def client(etcd_endpoint: str, serve: Any) -> TestClient[Any, Any]:
    config = kcp_config([etcd_endpoint], "admin-token", identity=f"rbac-{uuid.uuid4().hex[:6]}")
    config.authenticators = [ClusterHeaderAuthenticator(), *config.authenticators]
    return (await serve(config))[1]


async def bind_bot_as_cluster_admin(client: TestClient[Any, Any], cluster: str) -> None:
    prefix = "" if cluster == "admin" else f"/clusters/{cluster}"
    created = await client.post(f"{prefix}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", headers=ADMIN, json={
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"bot-{uuid.uuid4().hex[:6]}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]})
    assert created.status == 201, await created.text()


async def until_status(client: TestClient[Any, Any], path: str, headers: dict[str, str], wanted: int) -> None:
    for _ in range(200):
        if (await client.get(path, headers=headers)).status == wanted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never answered {wanted}")


async def test_a_cluster_bound_identity_is_refused_outside_its_cluster(client: TestClient[Any, Any]) -> None:
    home, other = f"home-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    for cluster in (home, other, "admin"):
        await bind_bot_as_cluster_admin(client, cluster)
    bot = {"X-Test-SA": home}
    await until_status(client, f"/clusters/{home}/api/v1/namespaces/default/configmaps", bot, 200)
    denied = await client.get(f"/clusters/{other}/api/v1/namespaces/default/configmaps", headers=bot)
    assert denied.status == 403
    assert (await denied.json())["message"] == (
        f'configmaps is forbidden: User "{BOT}" cannot list resource "configmaps" in API group "" in the namespace '
        '"default"')
    wildcard = await client.get("/clusters/*/api/v1/configmaps", headers=bot)
    assert wildcard.status == 403
    review = await client.post(f"/clusters/{other}/apis/authorization.k8s.io/v1/subjectaccessreviews",
                               headers=ADMIN, json={
                                   "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                                   "spec": {"resourceAttributes": {"verb": "list", "resource": "configmaps"},
                                            "user": BOT}})
    # a review asks about the name, as the other cluster's own service account default/bot would be
    assert review.status == 201 and (await review.json())["status"]["allowed"] is True
    await until_status(client, f"/clusters/{other}/api/v1/namespaces/default/configmaps", {"X-Test-SA": other}, 200)


async def test_impersonating_keeps_the_requesters_cluster(client: TestClient[Any, Any]) -> None:
    home, other = f"home-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    await bind_bot_as_cluster_admin(client, home)
    bot = {"X-Test-SA": home}
    await until_status(client, f"/clusters/{home}/api/v1/namespaces/default/configmaps", bot, 200)
    escaped = await client.get(f"/clusters/{other}/api/v1/namespaces/default/configmaps",
                               headers={**bot, "Impersonate-User": "kcp-admin", "Impersonate-Group": "system:masters"})
    assert escaped.status == 403
    mine = await client.post(f"/clusters/{home}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             headers={**bot, "Impersonate-User": "someone"},
                             json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert mine.status == 201
    assert (await mine.json())["status"]["userInfo"] == {"username": "someone", "groups": [AUTHENTICATED]}


async def test_a_local_subject_access_review_answers_in_its_namespace_only(client: TestClient[Any, Any]) -> None:
    cluster = f"lsar-{uuid.uuid4().hex[:6]}"
    path = f"/clusters/{cluster}/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews"

    def review(namespace: str) -> dict[str, Any]:
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
                "metadata": {"namespace": "team"},
                "spec": {"user": "bob", "resourceAttributes": {"namespace": namespace, "verb": "get",
                                                                "resource": "configmaps"}}}

    answered = await client.post(path, headers=ADMIN, json=review("team"))
    assert answered.status == 201
    assert (await answered.json())["status"] == {"allowed": False}
    elsewhere = await client.post(path, headers=ADMIN, json=review("other"))
    assert elsewhere.status == 400
    assert (await elsewhere.json())["message"] == ('spec.resourceAttributes.namespace must match namespace: '
                                                   '"other" != "team"')
