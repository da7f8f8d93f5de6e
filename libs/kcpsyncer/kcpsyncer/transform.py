"""Upstream object → the downstream object the syncer applies, and whether the downstream copy is current.

Only what the upstream object says goes down: server-set metadata (uid,
resourceVersion, managedFields, ...) and status are stripped, so the apply
under field manager `kcp-syncer` owns exactly the user's fields and the
physical cluster keeps its own (defaults, and a Service's addresses: see `ALLOCATED_BY_THE_CLUSTER`); the
clusters' statuses kept in annotations upstream (`summary.py`) and the per-target spec diffs stay there.
An object split across targets has this target's spec diff applied to its spec first (`specdiff.py`), so
what goes down, and its hash, is the diffed spec. Provenance
goes into labels and annotations. The spec hash annotation records what was
applied, so neither a downstream status change nor a restart re-applies an
object that is already as it should be (and a change of this target's diff alone does re-apply it).

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
from kcpcommon.quantity import try_parse_quantity

from .classes import Names, confine, rename
from .names import (
    FIELD_MANAGER,
    OWNER_LABEL,
    SPEC_DIFF_ANNOTATION_PREFIX,
    SPEC_HASH_ANNOTATION,
    STATE_LABEL_PREFIX,
    STATUS_ANNOTATION_PREFIX,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAME_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    owner,
)
from .objects import CLAIM_TEMPLATES, POD_TEMPLATES
from .specdiff import diffed_spec, is_split

Obj = Mapping[str, Any]

# set by a server, meaningless (or refused) on another one
SERVER_SET_METADATA = frozenset({
    "uid", "resourceVersion", "managedFields", "creationTimestamp", "generation", "ownerReferences",
    "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName", "namespace"})
DROPPED_ANNOTATIONS = frozenset({CLUSTER_ANNOTATION, "kubectl.kubernetes.io/last-applied-configuration"})
# the clusters' statuses and the per-target spec diffs are kcp's business: another target's never changes this one's copy
KCP_ONLY_ANNOTATION_PREFIXES = (STATUS_ANNOTATION_PREFIX, SPEC_DIFF_ANNOTATION_PREFIX)
NOT_SYNCED = frozenset({"apiVersion", "kind", "metadata", "status"})
# A Service's cluster IPs and node ports in kcp come from kcp's own range (or were requested from it): each
# physical cluster allocates its own, from its own range and pool, shared by every tenant synced to it, so
# they never go down (a pinned one could not be promised there). A headless Service (clusterIP None) stays
# headless; ipFamilies/ipFamilyPolicy go down only when they ask for more than kcp's IPv4 SingleStack.
ALLOCATED_BY_THE_CLUSTER = ("clusterIP", "clusterIPs")
KCP_IP_FAMILIES = {"ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}
HEADLESS = "None"
# `protocol` is a key of the port lists (a Service's ports, a container's) that kube defaults to TCP; kube before
# 1.21 cannot merge an apply whose port omits it (a 500: "associative list with keys has an element that omits
# key field protocol"), so the syncer says what the cluster would default anyway.
DEFAULT_PROTOCOL = "TCP"
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def downstream_object(upstream: Obj, *, api_version: str, kind: str, namespace: str | None,
                      logical_cluster: str, sync_target: str, scaled_downstream: bool = False,
                      name: str | None = None, class_names: Names | None = None,
                      live: Obj | None = None, autoscaled: bool = False) -> dict[str, Any]:
    """The apply body for `upstream` in downstream namespace `namespace` (None: cluster-scoped), named `name`
    (default: the upstream name), with the classes it names renamed by `class_names` (classes.py); without
    `spec.replicas` when the downstream copy is `scaled_downstream`, and with the `live` copy's when an
    autoscaler synced with it scales it (`autoscaled`: the syncer's apply still owns the field on a cluster
    that records no scale writes, so leaving it out would reset it; the hash leaves it out, so a scaling
    alone is no reason to apply; the live copy's resourceVersion makes that apply conditional on it); what kube never lets change once the `live` downstream copy exists
    (IMMUTABLE_AFTER_CREATE) as that copy has it. `sync_target`'s spec diff, if any, applies to the spec first
    (raises specdiff.InvalidSpecDiff)."""
    meta = upstream.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()
              if not str(k).startswith(STATE_LABEL_PREFIX)}  # where kcp assigns it: another target's never matters
    labels[OWNER_LABEL] = owner(logical_cluster, sync_target)
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()
                   if k not in DROPPED_ANNOTATIONS and not str(k).startswith(KCP_ONLY_ANNOTATION_PREFIXES)}
    annotations[UPSTREAM_CLUSTER_ANNOTATION] = logical_cluster
    if meta.get("namespace"):
        annotations[UPSTREAM_NAMESPACE_ANNOTATION] = str(meta["namespace"])
    annotations[UPSTREAM_NAME_ANNOTATION] = str(meta.get("name") or "")
    metadata: dict[str, Any] = {"name": name or meta.get("name")}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    metadata["annotations"] = annotations
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    for field, value in upstream.items():
        if field not in NOT_SYNCED:
            body[field] = copy.deepcopy(value)
    if is_split(upstream, sync_target):  # before the syncer's own changes: the diff's paths are the user's spec's
        body["spec"] = diffed_spec(upstream, sync_target, body.get("spec"))
    if class_names:
        rename(kind, body, class_names)
    confine(kind, body)
    live_replicas = ((live or {}).get("spec") or {}).get("replicas")
    keep_live_replicas = autoscaled and not scaled_downstream and live_replicas is not None
    if (scaled_downstream or keep_live_replicas) and isinstance(body.get("spec"), dict):
        body["spec"].pop("replicas", None)
    if api_version == "v1" and kind == "Service" and isinstance(body.get("spec"), dict):
        _leave_addresses_to_the_cluster(body["spec"])
    _name_port_protocols(body)
    mark_pod_template(body, owner=labels[OWNER_LABEL], logical_cluster=logical_cluster,
                      namespace=str(meta.get("namespace") or ""))
    if live is not None:
        _keep_immutable(kind, body, live)
    annotations[SPEC_HASH_ANNOTATION] = spec_hash(body)
    if keep_live_replicas and isinstance(body.get("spec"), dict):
        body["spec"]["replicas"] = live_replicas
        # the live replicas come from a cache that may not have seen the autoscaler's latest scale yet: the
        # apply holds only if the object is still the one read (else 409, and the retry reads a fresher copy)
        live_version = ((live or {}).get("metadata") or {}).get("resourceVersion")
        if live_version:
            metadata["resourceVersion"] = str(live_version)
    return body


# fields kube refuses to change after create that the syncer writes itself (claim templates carry the mirror's
# marks: a StatefulSet synced before they were marked must keep the templates it was created with)
IMMUTABLE_AFTER_CREATE: dict[str, tuple[tuple[str, ...], ...]] = {"StatefulSet": (("spec", "volumeClaimTemplates"),)}


def _keep_immutable(kind: str, body: dict[str, Any], live: Obj) -> None:
    for path in IMMUTABLE_AFTER_CREATE.get(kind, ()):
        holder, value = _at(body, path[:-1]), _at(live, path)
        if not isinstance(holder, dict):
            continue
        if value is None:
            holder.pop(path[-1], None)
        else:
            holder[path[-1]] = copy.deepcopy(value)


def mark_pod_template(body: dict[str, Any], *, owner: str, logical_cluster: str, namespace: str) -> None:
    """Give the pods and claims `body` will make downstream this syncer's owner label and their upstream
    namespace: the mirror (upsync.py) finds them by that label."""
    if not namespace:
        return
    templates: list[Any] = []
    pod_path = POD_TEMPLATES.get(str(body.get("kind")))
    if pod_path is not None:
        templates.append(_at(body, pod_path))
    claims_path = CLAIM_TEMPLATES.get(str(body.get("kind")))
    if claims_path is not None:
        claims = _at(body, claims_path)
        templates.extend(claims if isinstance(claims, list) else [])
    for template in templates:
        if not isinstance(template, dict):
            continue
        template_meta = template.setdefault("metadata", {})
        template_meta.setdefault("labels", {})[OWNER_LABEL] = owner
        annotations = template_meta.setdefault("annotations", {})
        annotations[UPSTREAM_CLUSTER_ANNOTATION] = logical_cluster
        annotations[UPSTREAM_NAMESPACE_ANNOTATION] = namespace


def unmark_pod_template(body: dict[str, Any]) -> None:
    """Take `mark_pod_template`'s marks off the pod template of a mirrored object (a downstream ReplicaSet), so
    its template in kcp equals its Deployment's there (how kubectl tells the NewReplicaSet)."""
    pod_path = POD_TEMPLATES.get(str(body.get("kind")))
    template = _at(body, pod_path) if pod_path is not None else None
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    if not isinstance(template_meta, dict):
        return
    for part, marks in (("labels", (OWNER_LABEL,)),
                        ("annotations", (UPSTREAM_CLUSTER_ANNOTATION, UPSTREAM_NAMESPACE_ANNOTATION))):
        values = template_meta.get(part)
        if isinstance(values, dict):
            for mark in marks:
                values.pop(mark, None)
            if not values:
                del template_meta[part]


def _at(body: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        body = body.get(part) if isinstance(body, dict) else None
    return body


def _name_port_protocols(body: dict[str, Any]) -> None:
    """Give every port of a Service, a Pod or a pod template that omits its protocol kube's default
    (DEFAULT_PROTOCOL): the same object on any cluster, and one that kube < 1.21 can apply."""
    spec = body.get("spec")
    if body.get("kind") == "Service" and isinstance(spec, dict):
        _default_protocols(spec.get("ports"))
        return
    pod_spec: Any = body if body.get("kind") == "Pod" else _pod_template(body)
    pod_spec = pod_spec.get("spec") if isinstance(pod_spec, dict) else None
    if not isinstance(pod_spec, dict):
        return
    for field in CONTAINER_LISTS:
        for container in pod_spec.get(field) or ():
            if isinstance(container, dict):
                _default_protocols(container.get("ports"))


def _default_protocols(ports: Any) -> None:
    for port in ports if isinstance(ports, list) else ():
        if isinstance(port, dict) and not port.get("protocol"):
            port["protocol"] = DEFAULT_PROTOCOL


def _pod_template(body: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template of a workload kind (objects.POD_TEMPLATES), or None."""
    path = POD_TEMPLATES.get(str(body.get("kind")))
    template = _at(body, path) if path is not None else None
    return template if isinstance(template, dict) else None


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


# maps of resource name -> Quantity (a container's requests and limits, a node's capacity, a quota's
# hard and used): a real cluster stores these canonical (`0.5` reads back `500m`), so text differs
QUANTITY_MAPS = frozenset({"limits", "requests", "capacity", "allocatable", "hard", "used"})


def same_value(live: Any, desired: Any, parent: str | None = None) -> bool:
    """Equal, or the same quantity spelt otherwise in one of `QUANTITY_MAPS` (kube's canonical text
    downstream against the user's upstream: never a reason to write)."""
    if live == desired:
        return True
    if parent not in QUANTITY_MAPS or not isinstance(live, str | int | float) or not isinstance(desired, str | int | float):
        return False
    have, want = try_parse_quantity(live), try_parse_quantity(desired)
    return have is not None and have == want


def contains(live: Any, desired: Any, name: str | None = None) -> bool:
    """True if every field of `desired` is in `live` with the same value (lists: same length, item-wise).

    Extra fields in `live` are the server's (defaults, allocations): they do not make it differ.
    Quantities compare by value (`same_value`); `name` is the key `desired` sits under.
    """
    if isinstance(desired, Mapping):
        return isinstance(live, Mapping) and all(
            k in live and (contains(live[k], v, k) if isinstance(v, Mapping | list) else same_value(live[k], v, name))
            for k, v in desired.items())
    if isinstance(desired, list):
        return (isinstance(live, list) and len(live) == len(desired)
                and all(contains(a, b) for a, b in zip(live, desired, strict=True)))
    return same_value(live, desired)


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


def merge_patch(current: Any, desired: Any, name: str | None = None) -> Any:
    """The JSON merge patch (RFC 7386) that turns `current` into `desired`; {} when they are equal.

    A quantity only spelt otherwise (`same_value`) is left as it is."""
    if not isinstance(current, Mapping) or not isinstance(desired, Mapping):
        return copy.deepcopy(desired)
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        if key not in current:
            patch[key] = copy.deepcopy(value)
        elif not same_value(current[key], value, name):
            if isinstance(value, Mapping) and isinstance(current[key], Mapping):
                sub = merge_patch(current[key], value, key)
                if sub:
                    patch[key] = sub
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
