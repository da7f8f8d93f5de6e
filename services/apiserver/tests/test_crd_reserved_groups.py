"""A tenant's CRD must never reach storage the server owns: kube's and kcp's own groups are reserved,
and a CRD the server cannot serve (written by an older version) stops neither startup nor serving."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from etcd3aio import Etcd3Client

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.apiextensions.reserved import INTERNAL_PREFIX, storage_conflict
from kcp_apiserver.apimachinery.request import AUTHENTICATED, UserInfo
from kcp_apiserver.filters.authentication import StaticTokenAuthenticator
from kcp_apiserver.filters.authorization import AlwaysAllow
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.server.app import APIServer
from kcp_apiserver.server.kcp import kcp_config
from kcp_apiserver.storage.election import ELECTION_PREFIX
from kcp_apiserver.storage.keys import CLUSTERS_PREFIX, object_key, resource_prefix

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRD_PREFIX = resource_prefix("apiextensions.k8s.io", "customresourcedefinitions")
ADMIN = {"Authorization": "Bearer admin-token"}
TENANT = {"Authorization": "Bearer tenant-token"}  # a user of its logical cluster, not in system:masters
APPROVAL = "api-approved.kubernetes.io"
OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

Obj = dict[str, Any]


def crd(group: str, plural: str, kind: str, *, version: str = "v1", annotations: dict[str, str] | None = None,
        scope: str = "Namespaced") -> Obj:
    meta: Obj = {"name": f"{plural}.{group}"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta,
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": OPEN, "status": OPEN}}}}]}}


def cluster() -> str:
    return f"/clusters/rg-{uuid.uuid4().hex[:8]}"


async def start(etcd_endpoint: str) -> tuple[APIServer, TestClient[Any, Any]]:
    config = kcp_config([etcd_endpoint], "admin-token", identity=f"reserved-{uuid.uuid4().hex[:6]}")
    tenant = StaticTokenAuthenticator({"tenant-token": UserInfo("alice", groups=(AUTHENTICATED,))})
    # the tenant may write CRDs in its logical clusters (as with a cluster-admin binding there): what is
    # judged here is the reserved groups, not RBAC
    config = dataclasses.replace(config, authenticators=[*config.authenticators, tenant], authorizer=AlwaysAllow())
    server = APIServer(config)
    await server.start()
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    return server, client


@pytest.fixture
async def api(etcd_endpoint: str) -> AsyncIterator[TestClient[Any, Any]]:
    server, client = await start(etcd_endpoint)
    try:
        yield client
    finally:
        await client.close()
        await server.stop()


async def post(client: TestClient[Any, Any], path: str, body: Obj, headers: dict[str, str]) -> tuple[int, Obj]:
    resp = await client.post(path, json=body, headers=headers)
    return resp.status, await resp.json()


async def condition(client: TestClient[Any, Any], path: str, type_: str, timeout: float = 10.0) -> Obj:
    """The CRD's condition of this type, once the CRD controller has set one."""
    deadline = time.monotonic() + timeout
    body: Obj = {}
    while time.monotonic() < deadline:
        resp = await client.get(path, headers=ADMIN)
        body = await resp.json()
        found = [c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") == type_]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {type_} condition on {path}: {body}")


async def established(client: TestClient[Any, Any], path: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await condition(client, path, "Established")).get("status") == "True":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never established")


async def refused(client: TestClient[Any, Any], path: str, timeout: float = 10.0) -> Obj:
    """The Established condition once it says False (the server will not serve this CRD)."""
    deadline = time.monotonic() + timeout
    cond = await condition(client, path, "Established", timeout)
    while cond["status"] != "False" and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        cond = await condition(client, path, "Established", timeout)
    assert cond["status"] == "False", (path, cond)
    return cond


async def served(client: TestClient[Any, Any], path: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await client.get(path, headers=ADMIN)).status == 200:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never served")


# -- refused when written --------------------------------------------------------------------------

async def test_a_crd_over_the_logical_cluster_markers_is_refused(api: TestClient[Any, Any]) -> None:
    """kcp keeps its logical-cluster markers under /registry/kcp.io/logicalclusters/: a CRD there would
    crash that watch cache on every new logical cluster and list every cluster's name through `*`."""
    where = cluster()
    status, body = await post(api, f"{where}{CRDS}", crd("kcp.io", "logicalclusters", "LogicalCluster",
                                                        scope="Cluster"), TENANT)
    assert (status, body["reason"]) == (403, "Forbidden"), body
    assert body["message"] == ('customresourcedefinitions.apiextensions.k8s.io "logicalclusters.kcp.io" is '
                               "forbidden: kcp.io is a reserved group")
    assert body["details"] == {"name": "logicalclusters.kcp.io", "group": "apiextensions.k8s.io",
                               "kind": "customresourcedefinitions"}
    status, body = await post(api, f"{where}{CRDS}", crd("kcp.io", "logicalclusters", "LogicalCluster",
                                                        scope="Cluster"), ADMIN)
    assert status == 403, body  # not even the admin: the keys are the server's own
    assert (await api.get(f"{where}{CRDS}/logicalclusters.kcp.io", headers=ADMIN)).status == 404
    # a new logical cluster is born as before, and `*` lists no cluster names
    born = cluster()
    assert (await api.get(f"{born}/api/v1/namespaces/default", headers=ADMIN)).status == 404
    status, _ = await post(api, f"{born}/api/v1/namespaces/default/configmaps",
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, ADMIN)
    assert status == 201
    assert (await api.get("/clusters/*/apis/kcp.io/v1/logicalclusters", headers=ADMIN)).status == 404


async def test_a_crd_over_the_crd_storage_is_refused_even_when_approved(api: TestClient[Any, Any]) -> None:
    """customresourcedefinitions.apiextensions.k8s.io at v2 would store its objects among every
    logical cluster's CRDs."""
    where = cluster()
    body = crd("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", version="v2",
               scope="Cluster")
    status, reply = await post(api, f"{where}{CRDS}", body, TENANT)
    assert (status, reply["reason"]) == (422, "Invalid"), reply  # kube's API approval rule comes first
    assert reply["details"]["causes"] == [{
        "reason": "FieldValueRequired", "field": f"metadata.annotations[{APPROVAL}]",
        "message": f'Required value: protected groups must have approval annotation "{APPROVAL}", see '
                   "https://github.com/kubernetes/enhancements/pull/1111"}]
    body["metadata"]["annotations"] = {APPROVAL: "unapproved, testing"}
    for who in (TENANT, ADMIN):
        status, reply = await post(api, f"{where}{CRDS}", body, who)
        assert (status, reply["reason"]) == (403, "Forbidden"), reply
        assert reply["message"] == (
            'customresourcedefinitions.apiextensions.k8s.io "customresourcedefinitions.apiextensions.k8s.io" is '
            "forbidden: the API server stores customresourcedefinitions.apiextensions.k8s.io itself")
    # the same for a built-in type of the core group, spelled as its storage spells it
    status, reply = await post(api, f"{where}{CRDS}", crd("core", "configmaps", "ConfigMap", version="v2"), ADMIN)
    assert status == 422, reply  # a group needs a dot
    assert (await api.get(f"{where}/apis/apiextensions.k8s.io/v2", headers=ADMIN)).status == 404


async def test_kcp_groups_are_reserved_except_its_system_crds_for_the_admin(api: TestClient[Any, Any]) -> None:
    where = cluster()
    sync_targets = crd("workload.kcp.io", "synctargets", "SyncTarget", version="v1alpha1", scope="Cluster")
    status, reply = await post(api, f"{where}{CRDS}", sync_targets, TENANT)
    assert status == 403, reply
    assert reply["message"].endswith("forbidden: workload.kcp.io is a reserved group")
    status, reply = await post(api, f"{where}{CRDS}", crd("tenancy.kcp.io", "widgets", "Widget"), ADMIN)
    assert status == 403 and reply["message"].endswith("tenancy.kcp.io is a reserved group"), reply
    # the cluster controller installs SyncTargets with the admin identity: a system CRD of kcp's
    status, reply = await post(api, f"{where}{CRDS}", sync_targets, ADMIN)
    assert status == 201, reply
    await established(api, f"{where}{CRDS}/synctargets.workload.kcp.io")
    await served(api, f"{where}/apis/workload.kcp.io/v1alpha1/synctargets")
    # an update by the tenant is refused as well, a status write by the server is not
    current = await (await api.get(f"{where}{CRDS}/synctargets.workload.kcp.io", headers=ADMIN)).json()
    current["metadata"]["labels"] = {"mine": "now"}
    resp = await api.put(f"{where}{CRDS}/synctargets.workload.kcp.io", json=current, headers=TENANT)
    assert resp.status == 403, await resp.text()


async def test_imported_kube_workload_types_stay_allowed(api: TestClient[Any, Any]) -> None:
    """kcp imports a physical cluster's APIs (apps, batch, networking.k8s.io...) as CRDs."""
    where = cluster()
    for group, plural, kind in (("apps", "deployments", "Deployment"), ("batch", "jobs", "Job"),
                                ("policy", "poddisruptionbudgets", "PodDisruptionBudget")):
        status, reply = await post(api, f"{where}{CRDS}", crd(group, plural, kind), TENANT)
        assert status == 201, reply
    ingresses = crd("networking.k8s.io", "ingresses", "Ingress")
    status, reply = await post(api, f"{where}{CRDS}", ingresses, TENANT)
    assert status == 422 and reply["details"]["causes"][0]["field"] == f"metadata.annotations[{APPROVAL}]"
    ingresses["metadata"]["annotations"] = {APPROVAL: "https://github.com/kcp-dev/kubernetes/pull/4"}
    status, reply = await post(api, f"{where}{CRDS}", ingresses, TENANT)
    assert status == 201, reply
    await established(api, f"{where}{CRDS}/deployments.apps")
    await served(api, f"{where}/apis/apps/v1/namespaces/default/deployments")


# -- bad data already in etcd ------------------------------------------------------------------------

def stored_crd(cluster_name: str, body: Obj, *, established_: bool = True) -> Obj:
    """A CRD as an older server would have stored it: established, never validated by this one."""
    meta = body.setdefault("metadata", {})
    meta.update({"uid": uuid.uuid4().hex, "creationTimestamp": "2024-01-01T00:00:00Z"})
    meta.setdefault("annotations", {})["kcp.io/cluster"] = cluster_name
    if established_:
        names = (body.get("spec") or {}).get("names") if isinstance(body.get("spec"), dict) else None
        body["status"] = {"acceptedNames": names or {}, "storedVersions": ["v1"], "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found",
             "lastTransitionTime": "2024-01-01T00:00:00Z"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    return body


async def put_raw(etcd: Etcd3Client, key: str, obj: Obj) -> None:
    assert etcd.kv is not None
    await etcd.kv.put(key, orjson.dumps(obj))


def broken_crds(name: str) -> dict[str, Obj]:
    """One of each kind of CRD this server must not serve, by name."""
    no_spec = {"apiVersion": "apiextensions.k8s.io/v2", "kind": "CustomResourceDefinition",
               "metadata": {"name": "junk"}, "spec": "not a spec"}
    over_configmaps = crd("core", "configmaps", "ConfigMap", version="v2")
    over_markers = crd("kcp.io", "logicalclusters", "LogicalCluster", scope="Cluster")
    bad_schema = crd(f"bad{name}.example.com", "gadgets", "Gadget")
    bad_schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"type": "object", "properties": "nope"}
    no_versions = crd(f"nov{name}.example.com", "things", "Thing")
    no_versions["spec"]["versions"] = None
    return {"junk": no_spec, "configmaps.core": over_configmaps, "logicalclusters.kcp.io": over_markers,
            f"gadgets.bad{name}.example.com": bad_schema, f"things.nov{name}.example.com": no_versions}


async def test_broken_crds_in_etcd_stop_neither_startup_nor_serving(etcd_endpoint: str, etcd: Etcd3Client) -> None:
    name = uuid.uuid4().hex[:8]
    tenant = f"old-{name}"
    keys = []
    for crd_name, body in broken_crds(name).items():
        keys.append(object_key(CRD_PREFIX, tenant, "", crd_name))
        await put_raw(etcd, keys[-1], stored_crd(tenant, body))
    server, client = await start(etcd_endpoint)  # starts although every one of them is there
    try:
        good = cluster()
        status, reply = await post(client, f"{good}{CRDS}", crd(f"good{name}.example.com", "widgets", "Widget"), ADMIN)
        assert status == 201, reply
        await established(client, f"{good}{CRDS}/widgets.good{name}.example.com")
        await served(client, f"{good}/apis/good{name}.example.com/v1/namespaces/default/widgets")
        where = f"/clusters/{tenant}{CRDS}"
        reasons = {crd_name: (await refused(client, f"{where}/{crd_name}"))["reason"]
                   for crd_name in broken_crds(name)}
        assert reasons == {"junk": "InvalidSpec", "configmaps.core": "ReservedStorage",
                           "logicalclusters.kcp.io": "ReservedStorage",
                           f"gadgets.bad{name}.example.com": "InvalidSchema",
                           f"things.nov{name}.example.com": "InvalidSpec"}
        cond = await refused(client, f"{where}/configmaps.core")
        assert cond["message"] == "the API server stores configmaps itself"
        # the built-in ConfigMaps are still the built-in ones, and `*` lists no cluster names
        status, reply = await post(client, f"/clusters/{tenant}/api/v1/namespaces/default/configmaps",
                                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, ADMIN)
        assert status == 201 and reply["apiVersion"] == "v1", reply
        assert (await client.get(f"/clusters/{tenant}/apis/core/v2/namespaces/default/configmaps",
                                 headers=ADMIN)).status == 404
        assert (await client.get("/clusters/*/apis/kcp.io/v1/logicalclusters", headers=ADMIN)).status == 404
        # one more broken CRD while running: the follower goes on serving what comes after it
        late = object_key(CRD_PREFIX, tenant, "", "late")
        keys.append(late)
        await put_raw(etcd, late, stored_crd(tenant, {"apiVersion": "apiextensions.k8s.io/v1",
                                                      "kind": "CustomResourceDefinition",
                                                      "metadata": {"name": "late"}, "spec": {"group": 7}}))
        status, reply = await post(client, f"{good}{CRDS}", crd(f"after{name}.example.com", "widgets", "Widget"),
                                   ADMIN)
        assert status == 201, reply
        await served(client, f"{good}/apis/after{name}.example.com/v1/namespaces/default/widgets")
        assert (await refused(client, f"{where}/late"))["reason"] == "InvalidSpec"
        # the garbage collector follows established CRDs' objects: never the server's own keys
        sentinel = f"sentinel{name}.example.com"
        status, reply = await post(client, f"{good}{CRDS}", crd(sentinel, "widgets", "Widget"), ADMIN)
        assert status == 201, reply
        await established(client, f"{good}{CRDS}/widgets.{sentinel}")
        deadline = time.monotonic() + 10
        while resource_prefix(sentinel, "widgets") not in server.caches.caches and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # only the collector watches it: nothing lists it
        assert resource_prefix(sentinel, "widgets") in server.caches.caches
        assert [prefix for prefix in server.caches.caches if prefix.startswith(INTERNAL_PREFIX)] == []
    finally:
        await client.close()
        await server.stop()
        for key in keys:
            assert etcd.kv is not None
            await etcd.kv.delete(key)


def test_the_servers_own_keys_are_where_no_crd_may_store() -> None:
    """A CRD of group kcp.io would store under INTERNAL_PREFIX: the server's markers and elections live there."""
    assert CLUSTERS_PREFIX.startswith(INTERNAL_PREFIX) and ELECTION_PREFIX.startswith(INTERNAL_PREFIX)
    assert resource_prefix("kcp.io", "logicalclusters") == CLUSTERS_PREFIX


def test_storage_conflicts_name_what_the_server_keeps_there() -> None:
    builtins = (*BUILTINS, CRD)
    assert storage_conflict("core", "configmaps", builtins) == "the API server stores configmaps itself"
    assert storage_conflict("", "secrets", builtins) == "the API server stores secrets itself"
    assert storage_conflict("rbac.authorization.k8s.io", "roles", builtins) == (
        "the API server stores roles.rbac.authorization.k8s.io itself")
    # events.k8s.io Events are kept with core Events: a CRD would shadow the group's resource all the same
    assert storage_conflict("events.k8s.io", "events", builtins) == (
        "the API server serves events.events.k8s.io itself")
    assert storage_conflict("kcp.io", "anything", builtins) == "the API server stores anything.kcp.io itself"
    assert storage_conflict("example.com", "widgets", builtins) is None
    assert storage_conflict("apps", "deployments", builtins) is None  # kcp imports them as CRDs


@pytest.mark.parametrize("acting_as", [{"Impersonate-User": "kcp-admin", "Impersonate-Group": "system:masters"},
                                       {"Impersonate-User": "system:apiserver", "Impersonate-Group": "system:masters"}])
async def test_an_impersonated_master_is_still_the_tenant_for_kcps_groups(api: TestClient[Any, Any],
                                                                         acting_as: dict[str, str]) -> None:
    """Whoever may impersonate (everyone, with AlwaysAllow) acts as a master, but kcp's groups ask who
    authenticated: the tenant."""
    where = cluster()
    whoami = await api.post(f"{where}/apis/authentication.k8s.io/v1/selfsubjectreviews", headers={**TENANT, **acting_as},
                            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert "system:masters" in (await whoami.json())["status"]["userInfo"]["groups"]
    sync_targets = crd("workload.kcp.io", "synctargets", "SyncTarget", version="v1alpha1", scope="Cluster")
    status, reply = await post(api, f"{where}{CRDS}", sync_targets, {**TENANT, **acting_as})
    assert status == 403, reply
    assert reply["message"].endswith("forbidden: workload.kcp.io is a reserved group")
    status, reply = await post(api, f"{where}{CRDS}", crd("tenancy.kcp.io", "widgets", "Widget"),
                               {**TENANT, **acting_as})
    assert status == 403, reply
    # the admin acting as a tenant is the tenant too
    status, reply = await post(api, f"{where}{CRDS}", sync_targets, {**ADMIN, "Impersonate-User": "alice"})
    assert status == 403, reply
