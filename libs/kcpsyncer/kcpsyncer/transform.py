"""Upstream object → the downstream object the syncer applies, and whether the downstream copy is current.

Only what the upstream object says goes down: server-set metadata (uid,
resourceVersion, managedFields, ...) and status are stripped, so the apply
under field manager `kcp-syncer` owns exactly the user's fields and the
physical cluster keeps its own (defaults, and a Service's addresses: see `ALLOCATED_BY_THE_CLUSTER`); the
clusters' statuses kept in annotations upstream (`summary.py`) stay there. Provenance
goes into labels and annotations. The spec hash annotation records what was
applied, so neither a downstream status change nor a restart re-applies an
object that is already as it should be.

Replicas set downstream through the scale subresource (an HPA, `kubectl scale`: kube's interface for
autoscalers) belong to the physical cluster: while another manager owns them that way, the apply
leaves `spec.replicas` out instead of taking it back.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kcpcommon.informer import strip_managed_fields
from kcpcommon.keys import CLUSTER_ANNOTATION

from .names import (
    FIELD_MANAGER,
    OWNER_LABEL,
    SPEC_HASH_ANNOTATION,
    STATUS_ANNOTATION_PREFIX,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAME_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    owner,
)

Obj = Mapping[str, Any]

# set by a server, meaningless (or refused) on another one
SERVER_SET_METADATA = frozenset({
    "uid", "resourceVersion", "managedFields", "creationTimestamp", "generation", "ownerReferences",
    "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName", "namespace"})
DROPPED_ANNOTATIONS = frozenset({CLUSTER_ANNOTATION, "kubectl.kubernetes.io/last-applied-configuration"})
NOT_SYNCED = frozenset({"apiVersion", "kind", "metadata", "status"})
# A Service's cluster IPs and node ports in kcp come from kcp's own range (or were requested from it): each
# physical cluster allocates its own, from its own range and pool, shared by every tenant synced to it, so
# they never go down (a pinned one could not be promised there). A headless Service (clusterIP None) stays
# headless; ipFamilies/ipFamilyPolicy go down only when they ask for more than kcp's IPv4 SingleStack.
ALLOCATED_BY_THE_CLUSTER = ("clusterIP", "clusterIPs")
KCP_IP_FAMILIES = {"ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}
HEADLESS = "None"


def downstream_object(upstream: Obj, *, api_version: str, kind: str, namespace: str | None,
                      logical_cluster: str, sync_target: str, scaled_downstream: bool = False) -> dict[str, Any]:
    """The apply body for `upstream` in downstream namespace `namespace` (None: cluster-scoped); without
    `spec.replicas` when the downstream copy is `scaled_downstream`."""
    meta = upstream.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    labels[OWNER_LABEL] = owner(logical_cluster, sync_target)
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()
                   if k not in DROPPED_ANNOTATIONS and not str(k).startswith(STATUS_ANNOTATION_PREFIX)}
    annotations[UPSTREAM_CLUSTER_ANNOTATION] = logical_cluster
    if meta.get("namespace"):
        annotations[UPSTREAM_NAMESPACE_ANNOTATION] = str(meta["namespace"])
    annotations[UPSTREAM_NAME_ANNOTATION] = str(meta.get("name") or "")
    metadata: dict[str, Any] = {"name": meta.get("name")}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    metadata["annotations"] = annotations
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    for field, value in upstream.items():
        if field not in NOT_SYNCED:
            body[field] = copy.deepcopy(value)
    if scaled_downstream and isinstance(body.get("spec"), dict):
        body["spec"].pop("replicas", None)
    if api_version == "v1" and kind == "Service" and isinstance(body.get("spec"), dict):
        _leave_addresses_to_the_cluster(body["spec"])
    annotations[SPEC_HASH_ANNOTATION] = spec_hash(body)
    return body


def _leave_addresses_to_the_cluster(spec: dict[str, Any]) -> None:
    """Drop what the physical cluster allocates itself from a Service's spec (see ALLOCATED_BY_THE_CLUSTER)."""
    if spec.get("clusterIP") != HEADLESS:
        for field in ALLOCATED_BY_THE_CLUSTER:
            spec.pop(field, None)
    for field, kcp_value in KCP_IP_FAMILIES.items():
        if spec.get(field) == kcp_value:
            spec.pop(field)
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.pop("nodePort", None)


def scaled_downstream(live: Obj | None) -> bool:
    """Whether another manager than the syncer set `spec.replicas` of `live` through the scale subresource."""
    entries = ((live or {}).get("metadata") or {}).get("managedFields") or ()
    return any(isinstance(entry, Mapping) and entry.get("subresource") == "scale"
               and entry.get("manager") != FIELD_MANAGER
               and "f:replicas" in (((entry.get("fieldsV1") or {}).get("f:spec")) or {}) for entry in entries)


def keep_scale_owners(obj: dict[str, Any]) -> dict[str, Any]:
    """The syncer's cache transform: managedFields go (often a third of an object, and nothing else the
    syncer reads is there), except the entries written through the scale subresource (`scaled_downstream`)."""
    meta = obj.get("metadata")
    kept = [entry for entry in (meta.get("managedFields") or () if isinstance(meta, Mapping) else ())
            if isinstance(entry, Mapping) and entry.get("subresource") == "scale"]
    strip_managed_fields(obj)
    if kept:
        obj["metadata"]["managedFields"] = kept
    return obj


def spec_hash(body: Obj) -> str:
    """A digest of an apply body (its own hash annotation excluded): what the syncer last meant to apply."""
    meta = dict(body.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != SPEC_HASH_ANNOTATION}
    meta["annotations"] = annotations
    text = json.dumps({**body, "metadata": meta}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def contains(live: Any, desired: Any) -> bool:
    """True if every field of `desired` is in `live` with the same value (lists: same length, item-wise).

    Extra fields in `live` are the server's (defaults, allocations): they do not make it differ.
    """
    if isinstance(desired, Mapping):
        return isinstance(live, Mapping) and all(k in live and contains(live[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return (isinstance(live, list) and len(live) == len(desired)
                and all(contains(a, b) for a, b in zip(live, desired, strict=True)))
    return bool(live == desired)


def up_to_date(desired: Obj, live: Obj | None) -> bool:
    """The downstream object carries what `desired` says, and was last applied from the same body.

    The hash catches fields removed upstream (still present downstream: `contains` would pass);
    `contains` catches hand edits downstream (the hash annotation would still match).
    """
    if live is None:
        return False
    want = ((desired.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)
    have = ((live.get("metadata") or {}).get("annotations") or {}).get(SPEC_HASH_ANNOTATION)
    return want == have and contains(live, desired)


def merge_patch(current: Any, desired: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns `current` into `desired`; {} when they are equal."""
    if not isinstance(current, Mapping) or not isinstance(desired, Mapping):
        return copy.deepcopy(desired)
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if key not in current:
            patch[key] = copy.deepcopy(value)
        elif current[key] != value:
            if isinstance(value, Mapping) and isinstance(current[key], Mapping):
                patch[key] = merge_patch(current[key], value)
            else:
                patch[key] = copy.deepcopy(value)
    for key in current:
        if key not in desired:
            patch[key] = None
    return patch


def upstream_status(upstream: Obj, downstream: Obj, applied_hash: str) -> Any:
    """The downstream status as the upstream object should carry it.

    `observedGeneration` counts the downstream object's generations, which are not the upstream
    object's (a repaired hand edit bumps one and not the other). It is translated: the upstream
    generation once the downstream controller has observed a copy of the current upstream spec
    (`applied_hash`), else one less, so `kubectl rollout status` upstream waits as it should.
    """
    status = downstream.get("status")
    if not isinstance(status, Mapping) or "observedGeneration" not in status:
        return status
    up_generation = _int((upstream.get("metadata") or {}).get("generation"))
    if up_generation <= 0:
        return status
    down_meta = downstream.get("metadata") or {}
    current = (down_meta.get("annotations") or {}).get(SPEC_HASH_ANNOTATION) == applied_hash
    observed = _int(status.get("observedGeneration"))
    caught_up = current and observed >= _int(down_meta.get("generation"))
    return {**status, "observedGeneration": up_generation if caught_up else max(0, min(observed, up_generation - 1))}


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def status_patch(upstream: Obj, downstream: Obj, applied_hash: str = "") -> dict[str, Any] | None:
    """The merge patch that gives `upstream` the downstream status; None if it already has it."""
    return status_change(upstream.get("status"), upstream_status(upstream, downstream, applied_hash))


def status_change(have: Any, want: Any) -> dict[str, Any] | None:
    """The merge patch of the status subresource from `have` to `want`; None if there is nothing to write."""
    if want is None or have == want:
        return None
    return {"status": merge_patch(have or {}, want)}
