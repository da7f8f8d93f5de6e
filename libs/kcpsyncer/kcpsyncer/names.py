"""The names the syncer writes: labels, annotations, the finalizer and the downstream namespace mapping.

A physical cluster may serve many logical clusters (and several kcp
SyncTargets), so every namespace is mapped: upstream (logical cluster,
namespace) becomes downstream `kcp-<hash>`, the hash stable across restarts
and syncers. A cluster-scoped object is mapped the same way, by (logical cluster, name). The namespace's annotation says where it came from, because a
logical cluster name (`root:org`) is not a valid label value.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kcpcommon.keys import ASSIGNMENT_LABEL as ASSIGNMENT_LABEL  # upstream: this object goes to that SyncTarget

# upstream, one annotation per SyncTarget of a split object: a JSON patch of its spec for that cluster (specdiff.py),
# and that cluster's status (summary.py)
from kcpcommon.keys import SPEC_DIFF_ANNOTATION_PREFIX as SPEC_DIFF_ANNOTATION_PREFIX
from kcpcommon.keys import STATE_LABEL_PREFIX as STATE_LABEL_PREFIX
from kcpcommon.keys import STATE_UPSYNC as STATE_UPSYNC
from kcpcommon.keys import STATUS_ANNOTATION_PREFIX as STATUS_ANNOTATION_PREFIX

# upstream, one label per SyncTarget: `state.workload.kcp.io/<target>: Sync` assigns an object to several
STATE_SYNC = "Sync"
FIELD_MANAGER = "kcp-syncer"

# downstream provenance
OWNER_LABEL = "syncer.kcp.io/owner"  # hash of (logical cluster, sync target): the downstream informers' selector
UPSTREAM_CLUSTER_ANNOTATION = "syncer.kcp.io/upstream-cluster"
UPSTREAM_NAMESPACE_ANNOTATION = "syncer.kcp.io/upstream-namespace"
UPSTREAM_NAME_ANNOTATION = "syncer.kcp.io/upstream-name"
SPEC_HASH_ANNOTATION = "syncer.kcp.io/spec-hash"  # what was last applied, so a restart does not re-apply all
NAMESPACE_LOCATOR_ANNOTATION = "kcp.io/namespace-locator"
# on a downstream namespace: which SyncTarget's syncer made it, across workspaces (kcpcommon.keys.sync_target_key).
# The owner label hashes the logical cluster and the target's name only, and two workspaces' SyncTargets of one
# name may share a physical cluster: this tells a placed workspace's namespace from its own SyncTarget's.
SYNC_TARGET_KEY_ANNOTATION = "syncer.kcp.io/sync-target-key"
# on a downstream namespace of ours with nothing synced left: what keeps it (objects the syncer did not make, or a
# workload's leftovers such as a StatefulSet's retained claims), `persistentvolumeclaims/data-web-0, ...`
KEPT_ANNOTATION = "syncer.kcp.io/kept-for"

HEARTBEAT_GROUP_VERSION = "workload.kcp.io/v1alpha1"

DEFAULT_RESOURCES: tuple[str, ...] = (
    "deployments.apps", "statefulsets.apps", "daemonsets.apps", "services", "configmaps", "secrets", "serviceaccounts",
    "persistentvolumeclaims", "jobs.batch", "ingresses.networking.k8s.io", "storageclasses.storage.k8s.io",
    "priorityclasses.scheduling.k8s.io", "ingressclasses.networking.k8s.io", "runtimeclasses.node.k8s.io",
    "pods", "replicasets.apps")  # mirrored up, not synced down (upsync.py)

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(digest: bytes, length: int) -> str:
    number = int.from_bytes(digest, "big")
    out = []
    for _ in range(length):
        number, digit = divmod(number, 36)
        out.append(_ALPHABET[digit])
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def downstream_namespace(logical_cluster: str, namespace: str) -> str:
    """`kcp-<hash>` for an upstream namespace: the same for every syncer, distinct per tenant."""
    digest = hashlib.sha256(f"{logical_cluster}\x00{namespace}".encode()).digest()
    return "kcp-" + _base36(digest, 16)


@functools.lru_cache(maxsize=4096)
def downstream_name(logical_cluster: str, name: str) -> str:
    """`kcp-<hash>` for a tenant's cluster-scoped object (a StorageClass, a PriorityClass...): a physical
    cluster has one name space for them, shared by every tenant synced to it."""
    digest = hashlib.sha256(f"{logical_cluster}\x00{name}".encode()).digest()
    return "kcp-" + _base36(digest, 16)


def namespace_locator(logical_cluster: str, namespace: str) -> str:
    """The annotation value that locates a downstream namespace's upstream (JSON, as kcp writes it)."""
    return json.dumps({"logicalCluster": logical_cluster, "namespace": namespace}, sort_keys=True)


@functools.lru_cache(maxsize=256)
def owner(logical_cluster: str, sync_target: str) -> str:
    """The provenance label value of one syncer's downstream objects (a valid label value)."""
    digest = hashlib.sha256(f"{logical_cluster}\x00{sync_target}".encode()).digest()
    return _base36(digest, 20)


def syncer_finalizer(sync_target: str) -> str:
    """The upstream finalizer that holds a deleted object until its downstream copy is gone."""
    return f"workload.kcp.io/syncer-{sync_target}"


def state_label(sync_target: str) -> str:
    """The label that assigns an object to `sync_target` among others (kcp's transparent multi-cluster)."""
    return STATE_LABEL_PREFIX + sync_target


def assigned_to(labels: Mapping[str, Any] | None, sync_target: str) -> bool:
    """The single assignment label names `sync_target`, or its state label says Sync."""
    labels = labels or {}
    return labels.get(ASSIGNMENT_LABEL) == sync_target or labels.get(state_label(sync_target)) == STATE_SYNC
