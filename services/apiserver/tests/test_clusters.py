"""A logical cluster is born, on its first write, with the namespaces every kube cluster has."""

from __future__ import annotations

import asyncio
import uuid

from etcd3aio import Etcd3Client

from kcp_apiserver.registry.builtin import NAMESPACE, SERVICE_ACCOUNT
from kcp_apiserver.registry.clusters import LogicalClusters
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.keys import cluster_marker, scope_prefix

KUBE_NAMESPACES = ["default", "kube-node-lease", "kube-public", "kube-system"]


async def test_a_new_cluster_has_exactly_kubes_four_namespaces_active(etcd: Etcd3Client) -> None:
    storage, cluster = Storage(etcd), f"born-{uuid.uuid4().hex[:8]}"
    # two servers writing first at once: one creates everything, the other finds it done
    await asyncio.gather(LogicalClusters(storage).ensure(cluster), LogicalClusters(storage).ensure(cluster))
    listed, _, _ = await storage.list(scope_prefix(NAMESPACE.prefix, cluster, None))
    namespaces = {s.obj["metadata"]["name"]: s.obj for s in listed}
    assert sorted(namespaces) == KUBE_NAMESPACES
    for name, ns in namespaces.items():
        assert ns["status"] == {"phase": "Active"} and ns["spec"] == {"finalizers": ["kubernetes"]}
        assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}
        assert ns["metadata"]["annotations"] == {"kcp.io/cluster": cluster}
    assert len({ns["metadata"]["uid"] for ns in namespaces.values()}) == 4
    assert await storage.exists(cluster_marker(cluster))


async def test_each_system_namespace_is_born_with_its_default_service_account(etcd: Etcd3Client) -> None:
    storage, cluster = Storage(etcd), f"born-{uuid.uuid4().hex[:8]}"
    await LogicalClusters(storage).ensure(cluster)
    listed, _, _ = await storage.list(scope_prefix(SERVICE_ACCOUNT.prefix, cluster, None))
    accounts = sorted((s.obj["metadata"]["namespace"], s.obj["metadata"]["name"]) for s in listed)
    assert accounts == [(ns, "default") for ns in KUBE_NAMESPACES]
    for stored in listed:
        meta = stored.obj["metadata"]
        assert stored.obj["kind"] == "ServiceAccount" and stored.obj["apiVersion"] == "v1"
        assert meta["annotations"] == {"kcp.io/cluster": cluster} and meta["uid"] and meta["creationTimestamp"]
