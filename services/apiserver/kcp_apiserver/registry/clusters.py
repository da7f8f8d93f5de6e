"""Logical clusters: named by URL, born on first write with kube's system namespaces (each with its
`default` ServiceAccount, written in the same transaction rather than by the controller afterwards)."""

from __future__ import annotations

import re

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.registry.builtin import NAMESPACE, SERVICE_ACCOUNT, prepare_namespace
from kcp_apiserver.storage.etcd import Storage, StorageError
from kcp_apiserver.storage.keys import cluster_marker, object_key
from kcpcommon.keys import CLUSTER_ANNOTATION

DEFAULT_CLUSTER = "admin"
WILDCARD = "*"
# what kube-apiserver's bootstrap controller creates in every cluster
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_SERVICE_ACCOUNT = "default"  # what kube's service-account controller puts in every namespace
MAX_NAME = 80
_SEGMENT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
NAME_RE = re.compile(rf"^{_SEGMENT}(:{_SEGMENT})*$")


def check_cluster_name(name: str) -> None:
    """Raise 400 unless `name` is a valid logical cluster name (or `*`)."""
    if name == WILDCARD:
        return
    if len(name) > MAX_NAME or not NAME_RE.match(name):
        raise st.bad_request(
            f'invalid logical cluster name "{name}": must consist of lower case alphanumeric characters or '
            f"'-', separated by ':', start and end with an alphanumeric character, and be at most {MAX_NAME} "
            "characters")


def system_namespace(cluster: str, name: str, created: str) -> dict:  # type: ignore[type-arg]
    from kcp_apiserver.registry.store import new_uid

    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": name, "uid": new_uid(), "creationTimestamp": created,
                       "annotations": {CLUSTER_ANNOTATION: cluster}}}
    prepare_namespace(ns, None)
    return ns


def default_service_account(cluster: str, namespace: str, created: str) -> dict:  # type: ignore[type-arg]
    from kcp_apiserver.registry.store import new_uid

    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace, "uid": new_uid(),
                         "creationTimestamp": created, "annotations": {CLUSTER_ANNOTATION: cluster}}}


class LogicalClusters:
    """Remembers which logical clusters exist; creates one on its first write."""

    def __init__(self, storage: Storage, *, stamp_cluster: bool = True) -> None:
        self.storage = storage
        self.stamp_cluster = stamp_cluster  # the `kcp.io/cluster` annotation on what it creates (see Registry)
        self.known: set[str] = set()

    async def ensure(self, cluster: str) -> None:
        if cluster in self.known:
            return
        from kcp_apiserver.registry.store import now_rfc3339

        created = now_rfc3339()
        marker = {"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
                  "metadata": {"name": cluster, "creationTimestamp": created}}
        namespaces = [(object_key(NAMESPACE.prefix, cluster, "", name), system_namespace(cluster, name, created))
                      for name in SYSTEM_NAMESPACES]
        accounts = [(object_key(SERVICE_ACCOUNT.prefix, cluster, name, DEFAULT_SERVICE_ACCOUNT),
                     default_service_account(cluster, name, created)) for name in SYSTEM_NAMESPACES]
        if not self.stamp_cluster:
            for _, obj in (*namespaces, *accounts):
                del obj["metadata"]["annotations"]
        try:
            if not await self.storage.exists(cluster_marker(cluster)):
                # all or nothing: a concurrent first write loses the race harmlessly
                await self.storage.create_many([(cluster_marker(cluster), marker), *namespaces, *accounts])
        except StorageError as exc:
            raise st.unavailable() from exc
        self.known.add(cluster)
