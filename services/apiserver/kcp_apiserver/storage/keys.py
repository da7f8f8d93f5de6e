"""etcd key layout: /registry/<group>/<resource>/<cluster>/[<namespace>/]<name>.

The logical cluster sits right under the resource, so one range read over
/registry/<group>/<resource>/ covers every logical cluster (the `*` view).
"""

from __future__ import annotations

# one key type for the server and the controllers: (cluster, namespace or "", name)
from kcpcommon.keys import ObjectKey

__all__ = ["CLUSTERS_PREFIX", "ROOT", "ObjectKey", "cluster_marker", "object_key", "parse_key", "resource_prefix",
           "scope_prefix"]

ROOT = "/registry"
CLUSTERS_PREFIX = f"{ROOT}/kcp.io/logicalclusters/"


def resource_prefix(group: str, resource: str) -> str:
    return f"{ROOT}/{group or 'core'}/{resource}/"


def scope_prefix(res_prefix: str, cluster: str | None, namespace: str | None) -> str:
    """Prefix for one logical cluster (and namespace); None cluster = all clusters."""
    if cluster is None:
        return res_prefix
    if namespace:
        return f"{res_prefix}{cluster}/{namespace}/"
    return f"{res_prefix}{cluster}/"


def object_key(res_prefix: str, cluster: str, namespace: str, name: str) -> str:
    if namespace:
        return f"{res_prefix}{cluster}/{namespace}/{name}"
    return f"{res_prefix}{cluster}/{name}"


def parse_key(res_prefix: str, key: str, namespaced: bool) -> ObjectKey:
    rest = key[len(res_prefix):]
    if namespaced:
        cluster, namespace, name = rest.split("/", 2)
        return ObjectKey(cluster, namespace, name)
    cluster, name = rest.split("/", 1)
    return ObjectKey(cluster, "", name)


def cluster_marker(cluster: str) -> str:
    return CLUSTERS_PREFIX + cluster
