"""Object keys that carry the logical cluster: one type, one encoding.

kcp serves many logical clusters from one server, so `namespace/name` no
longer names an object: two tenants both have `default/web`. Every key in
kcpcommon (store, work queue, logs) is an `ObjectKey(cluster, namespace, name)`.

Text form (kcp's own): `cluster|namespace/name`, or `cluster|name` for a
cluster-scoped object. It is unambiguous because a logical cluster name never
holds `|` or `/` (lowercase DNS-label characters and `:`), a namespace never
holds either, and an object name never holds `/` (the API rejects it as a path
segment). So decoding splits at the first `|`, then at the first `/`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .frozen import FrozenDict, frozen_items

CLUSTER_ANNOTATION = "kcp.io/cluster"
# on a workload object: the SyncTarget (physical cluster) it goes to. The splitter writes it, the syncer
# and the cluster controller read it: a contract between daemons, so it lives here.
ASSIGNMENT_LABEL = "workloads.kcp.io/cluster"
# one label per SyncTarget: `state.workload.kcp.io/<target>: Sync` (assigned) or `Upsync` (a syncer's mirror of
# a physical cluster's object). kcp's garbage collector leaves mirrors alone: their lifetime is the syncer's.
STATE_LABEL_PREFIX = "state.workload.kcp.io/"
STATE_UPSYNC = "Upsync"
# on an object split across SyncTargets, one annotation each per target: what differs in its spec there (a JSON
# Patch, written by the splitter) and the status of its copy there (written by that target's syncer)
SPEC_DIFF_ANNOTATION_PREFIX = "experimental.spec-diff.workload.kcp.io/"
STATUS_ANNOTATION_PREFIX = "experimental.status.workload.kcp.io/"


def is_upsynced(labels: Mapping[str, Any] | None) -> bool:
    """Whether an object with these labels is a syncer's mirror copy of a downstream object."""
    return any(str(k).startswith(STATE_LABEL_PREFIX) and v == STATE_UPSYNC for k, v in (labels or {}).items())


# on a Namespace of a workspace that a Placement puts on a SyncTarget of another (compute) workspace:
# `placed.workload.kcp.io/<sync_target_key(compute workspace, target)>: Placed` (beside the assignment label,
# which names the target). The syncer of that target finds the workspaces it serves by this label, across
# every workspace; the key names the target in its workspace, as a target's name alone does not.
PLACED_LABEL_PREFIX = "placed.workload.kcp.io/"
PLACED = "Placed"


def sync_target_key(workspace: str, name: str) -> str:
    """A SyncTarget's key across workspaces (kcp's `ToSyncTargetKey`): 20 base-36 characters, a valid label
    name, stable across restarts and processes."""
    number = int.from_bytes(hashlib.sha256(f"synctarget\x00{workspace}\x00{name}".encode()).digest(), "big")
    out = []
    for _ in range(20):
        number, digit = divmod(number, 36)
        out.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return "".join(out)


def placed_keys(labels: Mapping[str, Any] | None) -> dict[str, str]:
    """The SyncTarget keys an object's placed labels name -> their value (`Placed`, or the splitter's `Draining`)."""
    return {k[len(PLACED_LABEL_PREFIX):]: str(v) for k, v in (labels or {}).items()
            if str(k).startswith(PLACED_LABEL_PREFIX)}


def placed_label(workspace: str, name: str) -> str:
    """The Namespace label that places it on SyncTarget `name` of `workspace`."""
    return PLACED_LABEL_PREFIX + sync_target_key(workspace, name)


WILDCARD_CLUSTER = "*"


@dataclass(frozen=True, order=True, slots=True)
class ObjectKey:
    """Where an object lives; `namespace` is "" for a cluster-scoped object."""

    cluster: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return _format(self)


def encode(key: ObjectKey) -> str:
    """`cluster|namespace/name`, or `cluster|name` when cluster-scoped."""
    if not key.cluster or "|" in key.cluster or "/" in key.cluster:
        raise ValueError(f"invalid logical cluster in key: {key.cluster!r}")
    if "|" in key.namespace or "/" in key.namespace:
        raise ValueError(f"invalid namespace in key: {key.namespace!r}")
    if not key.name or "/" in key.name:
        raise ValueError(f"invalid name in key: {key.name!r}")
    return _format(key)


def _format(key: ObjectKey) -> str:
    return f"{key.cluster}|{key.namespace}/{key.name}" if key.namespace else f"{key.cluster}|{key.name}"


def decode(text: str) -> ObjectKey:
    """The inverse of `encode`; raises ValueError for anything `encode` cannot produce."""
    cluster, sep, rest = text.partition("|")
    if not sep:
        raise ValueError(f"key {text!r} has no logical cluster (expected cluster|namespace/name)")
    namespace, sep, name = rest.partition("/")
    if not sep:
        namespace, name = "", rest
    key = ObjectKey(cluster, namespace, name)
    encode(key)  # validates every part
    return key


class Located(FrozenDict):
    """A read-only object that knows where it is stored (`key`). The API server's in-process informers
    hand these out, so a consumer finds an object's logical cluster without the `kcp.io/cluster`
    annotation, which a simulated physical cluster's objects do not carry."""

    __slots__ = ("key",)
    key: ObjectKey


def located(obj: Mapping[str, Any], key: ObjectKey, *, previous: Mapping[str, Any] | None = None) -> Located:
    """A frozen copy of `obj` that knows its key; what is unchanged since `previous` (the frozen state it
    replaces, if the caller holds it) is shared with it, not frozen again (see `freeze_like`)."""
    found = Located(frozen_items(obj, previous))
    found.key = key
    return found


def cluster_of(obj: Mapping[str, Any]) -> str | None:
    """The logical cluster of an object: where it is stored when it knows (`Located`), else the one the
    server stamped on it (kcp does on every object; the sim does not), if any."""
    if type(obj) is Located:
        return obj.key.cluster
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(CLUSTER_ANNOTATION)
    return value if isinstance(value, str) and value else None


def key_for(obj: Mapping[str, Any], *, cluster: str | None = None) -> ObjectKey:
    """The key of an API object.

    With `cluster=None` or `"*"` (objects from a wildcard list or watch) the
    cluster comes from the object (`cluster_of`: where a `Located` one is stored, else its
    `kcp.io/cluster` annotation); otherwise the
    caller knows which logical cluster it asked and says so.
    """
    metadata = obj.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    if cluster is None or cluster == WILDCARD_CLUSTER:
        cluster = cluster_of(obj)
        if cluster is None:
            raise ValueError(f"object {name!r} has no {CLUSTER_ANNOTATION} annotation and no cluster was given")
    return ObjectKey(cluster, metadata.get("namespace") or "", name)
