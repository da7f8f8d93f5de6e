"""Pods and claims up: the physical cluster's pods and PersistentVolumeClaims of the workloads this syncer
placed, mirrored into kcp (one code path for every kind of `MIRRORED`).

A tenant debugs through kcp (`kubectl get pods -l app=x -w`, `describe pod`, `delete pod`) without a
physical cluster's kubeconfig, so each syncer mirrors the pods its workloads made into the user's namespace,
under their own names, labelled `state.workload.kcp.io/<target>: Upsync` (never the assignment label:
nothing mirrored goes down). The down path marks every pod template and claim template (a StatefulSet's
`volumeClaimTemplates`) it applies with this syncer's owner label and the upstream namespace
(`transform.mark_pod_template`), so one downstream reflector per kind selected by the owner label sees exactly
these objects and knows where each belongs. A claim is also a synced-down kind (a user's own, applied to
kcp): a downstream object the down path applied (it names its upstream object) is never mirrored, and a kcp
object of the same name that is not a mirror copy is never overwritten or deleted.

The owner chain comes up too, so `kubectl describe pod` through kcp says "Controlled By" as on a cluster.
A copy's ownerReferences point at kcp's objects of the same chain (`OwnerLookup`, answered from the syncer's
caches): a downstream owner the down path applied (a pinned Deployment, a StatefulSet, a Job) becomes
the kcp object it was synced from, and a downstream owner that is itself mirrored becomes its kcp copy. So
the ReplicaSets a synced Deployment makes downstream are mirrored as well (only those controlled by a
synced-down object; `OWNED_ONLY`), and kcp shows Deployment -> ReplicaSet -> Pod. An owner kcp does not
hold yet is left out and the key retried until it appears; a uid is never made up. A Deployment split across
targets (`specdiff.py`) is the exception: its ReplicaSets are not mirrored (the splitter keeps the root's
revisions in kcp), and its pods' copies are controlled by the revision of their ReplicaSet's pod template
(`revisions.py`), Deployment -> revision -> Pod; no copy is made until kcp holds that revision. Their
ReplicaSets' Events stay on the cluster. The references never set
blockOwnerDeletion, and kcp's garbage collector leaves objects with an `Upsync` state label alone: a mirror
lives exactly as long as its downstream object, never less because an owner in kcp went.

The downstream pod is the truth: its spec, labels, annotations and status are copied up (its binding to a
node binds the copy through kcp's pods/binding; another spec change, which kube's Pod validation refuses on
update, recreates the copy); once both caches have listed, a copy
without its downstream pod is deleted. The one write that goes the other way is a user's delete of a copy
while its pod still runs: the pod is deleted downstream (uid precondition), as `kubectl delete pod` would
on the cluster, and its controller there makes the replacement, which comes up in turn. A copy deleted with
`--cascade=orphan|foreground` deletes its object downstream with that policy as soon as the copy shows the
delete, not once kcp's garbage collector has let it go. A ReplicaSet copy goes as soon as its synced owner
is gone from the cluster (the ReplicaSet is garbage there), and a cluster's object that is going never gets
a new copy.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kcpcommon.dynamic import DynamicResource
from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError
from kcpcommon.keys import ObjectKey

from .metrics import UP, SyncerMetrics
from .names import (
    ASSIGNMENT_LABEL,
    OWNER_LABEL,
    STATE_LABEL_PREFIX,
    STATE_UPSYNC,
    UPSTREAM_CLUSTER_ANNOTATION,
    UPSTREAM_NAME_ANNOTATION,
    UPSTREAM_NAMESPACE_ANNOTATION,
    downstream_namespace,
    state_label,
    syncer_finalizer,
)
from .objects import Obj, meta
from .remove import propagation_of
from .synced import SyncedType, SyncKey, TypeCaches, applied_key
from .transform import contains, merge_patch, unmark_pod_template

UPSYNC = STATE_UPSYNC
# resource -> whether it is also a synced-down kind (a user's own claims and ReplicaSets go down; pods never do)
MIRRORED: dict[str, bool] = {"pods": False, "persistentvolumeclaims": True, "replicasets.apps": True}
# a going pod's copy is going too (deleted, held by the syncer's finalizer until the pod is gone): its endpoints leave
TERMINATING_MIRRORED = frozenset({"pods"})
OWNED_ONLY = frozenset({"replicasets.apps"})  # mirrored only when a synced-down object controls them
IMMUTABLE_SPEC = frozenset({"pods", "persistentvolumeclaims"})  # a spec change recreates the copy
UPSYNCED_RESOURCES = frozenset(MIRRORED)  # kcp's copies are made and removed: pull mode grants create, delete
QUEUE_PREFIX = "upsync:"  # a mirrored kind's queue keys, apart from the same kind's synced-down keys
EVENTS = "events"  # the Events of the objects synced and mirrored (the clusters' controllers') come up with them
EVENT_FIELDS = ("reason", "message", "type", "count", "firstTimestamp", "lastTimestamp", "eventTime", "source",
                "reportingComponent", "reportingInstance", "action")
SYNCER_PREFIX = "syncer.kcp.io/"


def queue_resource(resource: str) -> str:
    """The `SyncKey.resource` of a mirrored kind's keys."""
    return QUEUE_PREFIX + resource


def upstream_copy(down: Obj, *, namespace: str, sync_target: str,
                  owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The kcp copy of downstream object `down` (status included; written through its subresource); no
    assignment or state label of its own, so it is never synced down. `owners`: its kcp ownerReferences."""
    down_meta = meta(down)
    labels = {str(k): str(v) for k, v in (down_meta.get("labels") or {}).items()
              if k != OWNER_LABEL and not str(k).startswith(STATE_LABEL_PREFIX) and k != ASSIGNMENT_LABEL}
    labels[state_label(sync_target)] = UPSYNC
    annotations = {str(k): str(v) for k, v in (down_meta.get("annotations") or {}).items()
                   if not str(k).startswith(SYNCER_PREFIX)}
    body: dict[str, Any] = {"apiVersion": down.get("apiVersion", "v1"), "kind": down.get("kind", "Pod"),
                            "metadata": {"name": down_meta.get("name"), "namespace": namespace, "labels": labels,
                                         "annotations": annotations},
                            "spec": copy.deepcopy(down.get("spec") or {})}
    unmark_pod_template(body)
    if owners:
        body["metadata"]["ownerReferences"] = owners
    if down.get("status") is not None:
        body["status"] = copy.deepcopy(down["status"])
    return body


def kcp_owner_reference(down_ref: Mapping[str, Any], up: Obj) -> dict[str, Any]:
    """A downstream ownerReference pointed at kcp's object `up` of the chain (no blockOwnerDeletion: a mirror
    never holds an owner's deletion in kcp)."""
    ref: dict[str, Any] = {"apiVersion": up.get("apiVersion"), "kind": up.get("kind"),
                           "name": meta(up).get("name"), "uid": meta(up).get("uid")}
    if down_ref.get("controller"):
        ref["controller"] = True
    return ref


@dataclass(frozen=True)
class Owners:
    """A downstream object's owners seen from kcp: the references kcp holds, whether one is still missing, and
    whether its controller is an object this syncer applied (an `OWNED_ONLY` kind is mirrored only then, and not
    when that object is split: `revisions.py`)."""

    references: list[dict[str, Any]]
    missing: bool = False
    controlled_by_synced: bool = False
    controlled_by_split: bool = False  # that controller is split across targets: its ReplicaSets stay on the cluster
    awaiting: str | None = None  # the uid of a split root whose revision in kcp is missing: no new copy until it is
    controller_gone: bool = False  # its controller is an object this syncer applied that kcp no longer assigns here


OwnerLookup = Callable[[Obj], Owners]


def event_copy(down: Obj, about: Obj, *, sync_target: str) -> dict[str, Any]:
    """kcp's copy of a downstream Event: about kcp's object of that name (`about`: a copy or the user's own)."""
    about_meta = meta(about)
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": meta(down).get("name"), "namespace": about_meta.get("namespace"),
                     "labels": {state_label(sync_target): UPSYNC}},
        "involvedObject": {**(down.get("involvedObject") or {}), "namespace": about_meta.get("namespace"),
                           "name": about_meta.get("name"), "uid": about_meta.get("uid"), "resourceVersion": None}}
    body["involvedObject"] = {k: v for k, v in body["involvedObject"].items() if v is not None}
    for field_name in EVENT_FIELDS:
        if down.get(field_name) is not None:
            body[field_name] = copy.deepcopy(down[field_name])
    return body


def upstream_key(resource: str, down: Obj, logical_cluster: str) -> SyncKey | None:
    """The kcp key of a downstream object this syncer's workloads made, or None (also for one the down path
    applied: it names its upstream object, which kcp holds)."""
    annotations = meta(down).get("annotations") or {}
    namespace = annotations.get(UPSTREAM_NAMESPACE_ANNOTATION)
    # the down path's own objects name themselves (a Deployment's ReplicaSets inherit its annotations: theirs
    # name the Deployment)
    if (annotations.get(UPSTREAM_CLUSTER_ANNOTATION) != logical_cluster or not namespace
            or annotations.get(UPSTREAM_NAME_ANNOTATION) == meta(down).get("name")):
        return None
    return SyncKey(resource, str(namespace), str(meta(down).get("name") or ""))


@dataclass(frozen=True)
class Subject:
    """What a downstream Event is about, seen from kcp: the object's kcp key, and kcp's object once cached."""

    key: SyncKey
    upstream: Obj | None


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def event_subject(event: Obj, *, mirrored: Iterable[UpsyncedType], synced: Iterable[SyncedType],
                  logical_cluster: str, sync_target: str,
                  unmirrored: Callable[[UpsyncedType, Obj], bool] = lambda _typ, _down: False) -> Subject | None:
    """The kcp object a downstream Event is about, or None when that object is not one this syncer synced
    (applied down) or mirrors (made downstream by one of its workloads, and not `unmirrored`: a split
    Deployment's ReplicaSet): only those Events come up."""
    involved = event.get("involvedObject") or {}
    kind, group = involved.get("kind"), _group(str(involved.get("apiVersion") or ""))
    down_key = ObjectKey(sync_target, str(involved.get("namespace") or ""), str(involved.get("name") or ""))
    for up_typ in mirrored:
        if up_typ.down.kind == kind and _group(up_typ.down.api_version) == group:
            down = up_typ.down_informer.indexer.get(down_key)
            key = upstream_key(up_typ.name, down, logical_cluster) if down is not None else None
            if down is not None and unmirrored(up_typ, down):
                continue
            if key is not None:
                return Subject(key, up_typ.up_informer.indexer.get(ObjectKey(logical_cluster, key.namespace,
                                                                             key.name)))
    for typ in synced:
        if typ.down.kind == kind and typ.down.namespaced and _group(typ.down.api_version) == group:
            down = typ.down_informer.indexer.get(down_key)
            key = applied_key(typ.name, down, logical_cluster) if down is not None else None
            if key is not None:
                return Subject(key, typ.upstream(ObjectKey(logical_cluster, key.namespace, key.name)))
    return None


EventSubjects = Callable[[Obj], Subject | None]


@dataclass
class UpsyncedType(TypeCaches):
    """One mirrored type: kcp's copies (this target's) and the physical cluster's originals (this syncer's)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.removing: set[SyncKey] = set()  # copies we delete: their DELETED is not a user's
        self.deleted_by_user: set[SyncKey] = set()
        # copies this syncer saw in kcp: one gone from the cache that we did not remove is a user's delete, even
        # before the DELETED event's handler has said so (a retry may run in between: it must not make a new copy)
        self.seen: set[SyncKey] = set()


class Upsync:
    """Reconciles one key of a mirrored type (see the module docstring)."""

    def __init__(self, *, logical_cluster: str, sync_target: str, metrics: SyncerMetrics,
                 log: structlog.typing.FilteringBoundLogger) -> None:
        self.lc = logical_cluster
        self.target = sync_target
        self.metrics = metrics
        self.log = log

    def upstream_deleted(self, typ: UpsyncedType, key: SyncKey) -> None:
        """A copy went from kcp: a user's delete unless we removed it ourselves."""
        typ.seen.discard(key)
        if key in typ.removing:
            typ.removing.discard(key)
        else:
            typ.deleted_by_user.add(key)

    async def reconcile(self, typ: UpsyncedType, key: SyncKey, owners_of: OwnerLookup = lambda _: Owners([]),
                        before_user_delete: Callable[[Obj], Awaitable[None]] | None = None) -> bool:
        """Mirror one object; False when an owner is not in kcp yet (its reference is added on a retry).
        `before_user_delete` runs before a user's delete of a copy is carried down (its owners' turn first)."""
        down_ns = downstream_namespace(self.lc, key.namespace)
        down = typ.down_informer.indexer.get(ObjectKey(self.target, down_ns, key.name))
        up = typ.up_informer.indexer.get(ObjectKey(self.lc, key.namespace, key.name))
        if up is None and key in typ.seen and key not in typ.removing:
            typ.seen.discard(key)  # deleted in kcp, its DELETED event not handled yet
            typ.deleted_by_user.add(key)
        if key in typ.deleted_by_user:
            typ.deleted_by_user.discard(key)
            if up is None and down is not None and not meta(down).get("deletionTimestamp"):
                if before_user_delete is not None:
                    await before_user_delete(down)
                await self._delete(typ.down_resource, down_ns, down)
                self.log.info("deleted downstream: its kcp copy was deleted", resource=typ.name,
                              namespace=key.namespace, name=key.name)
                return True
        if up is not None and meta(up).get("deletionTimestamp") and down is not None \
                and not meta(down).get("deletionTimestamp"):
            # a user's delete that kcp's garbage collector finishes (`--cascade=orphan|foreground` put its
            # finalizer on the copy): the cluster's object goes now, with that policy, as it would there. Waiting
            # for the copy to go would let a ReplicaSet replace the pods the user deletes next. (Once the
            # cluster's object is going or gone, the copy follows it as any other.)
            if before_user_delete is not None:
                await before_user_delete(down)
            await self._delete(typ.down_resource, down_ns, down, propagation_policy=propagation_of(up))
            self.log.info("deleted downstream: its kcp copy is being deleted", resource=typ.name,
                          namespace=key.namespace, name=key.name, propagation=propagation_of(up))
            return True
        owners = owners_of(down) if down is not None else Owners([])
        if down is not None and typ.name in OWNED_ONLY and (not owners.controlled_by_synced
                                                             or owners.controlled_by_split or owners.controller_gone):
            # not made by one of our workloads' controllers, or by a split one's, or by one whose kcp object is
            # gone (deleted, or moved off this cluster: its copy here is going): not mirrored
            down = None
        if down is None:
            if up is not None:
                typ.removing.add(key)
                await self._release(typ, key, up)
                await self._delete(typ.up_resource, key.namespace, up)
            return True
        if owners.awaiting is not None:
            if up is None:
                return False  # its controller's revision is not in kcp yet: the copy waits for it
            # a copy made before (its revision since pruned, or the cache not listed yet): its references stay
            owners = Owners(list(meta(up).get("ownerReferences") or ()), missing=True)
        want = upstream_copy(down, namespace=key.namespace, sync_target=self.target, owners=owners.references)
        status = want.pop("status", None)
        spec_change = merge_patch(up.get("spec") or {}, want["spec"]) if up is not None else {}
        if up is not None and typ.name not in IMMUTABLE_SPEC and spec_change:
            up = await typ.up_resource.patch(key.name, {"spec": spec_change}, namespace=key.namespace)
        elif up is not None and not contains(up.get("spec"), want["spec"]):
            node = bound_since(up.get("spec") or {}, want["spec"]) if typ.name == "pods" else None
            if node:  # the cluster's scheduler placed the pod: kcp's copy is bound too, as kube binds
                await typ.up_resource.create_in(key.name, "binding", {
                    "apiVersion": "v1", "kind": "Binding", "metadata": {"name": key.name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node}}, namespace=key.namespace)
                up = await typ.up_resource.get(key.name, namespace=key.namespace)
            else:  # kube's Pod (and bound claim) validation refuses other spec changes: a new copy
                typ.removing.add(key)
                await self._delete(typ.up_resource, key.namespace, up)
                up = None
        if up is None and meta(down).get("deletionTimestamp"):
            return True  # going from the cluster (a user's delete of its copy, or its owner's): no new copy
        if typ.name in TERMINATING_MIRRORED and up is not None and meta(down).get("deletionTimestamp") \
                and not meta(up).get("deletionTimestamp"):
            await self._terminating(typ, key, up)
            return True  # the copy's status follows on its next event
        if up is None:
            try:
                up = await typ.up_resource.create(want, namespace=key.namespace)
            except APIAlreadyExistsError:  # kcp holds its own object of that name: it stays the user's
                self.log.info("not mirrored: kcp has its own object of that name", resource=typ.name,
                              namespace=key.namespace, name=key.name)
                return True
        else:
            change = _metadata_change(up, want)
            if change:
                up = await typ.up_resource.patch(key.name, {"metadata": change}, namespace=key.namespace)
        typ.seen.add(key)
        if status is not None and up.get("status") != status:
            await typ.up_resource.patch(key.name, {"status": merge_patch(up.get("status") or {}, status)},
                                        namespace=key.namespace, subresource="status")
        self.metrics.synced(UP, typ.name)
        return not owners.missing

    @staticmethod
    def event_key(event: Obj, subject: Subject | None) -> SyncKey | None:
        """The kcp key of a downstream Event about `subject` (None: not one of ours)."""
        return SyncKey(EVENTS, subject.key.namespace, str(meta(event).get("name") or "")) if subject else None

    async def reconcile_event(self, events: UpsyncedType, key: SyncKey, subject_of: EventSubjects) -> bool:
        """Mirror one Event; False when kcp has no object it is about yet (that object's reconcile makes it)."""
        down = events.down_informer.indexer.get(
            ObjectKey(self.target, downstream_namespace(self.lc, key.namespace), key.name))
        up = events.up_informer.indexer.get(ObjectKey(self.lc, key.namespace, key.name))
        subject = None if down is None else subject_of(down)
        if down is None or subject is None:  # expired downstream, or its object is no longer one of ours
            if up is not None:
                await self._delete(events.up_resource, key.namespace, up)
            return True
        if subject.upstream is None:
            return False
        want = event_copy(down, subject.upstream, sync_target=self.target)
        if up is None:
            await events.up_resource.create(want, namespace=key.namespace)
        elif any(up.get(f) != want.get(f) for f in ("involvedObject", *EVENT_FIELDS)):
            await events.up_resource.patch(key.name, {f: want.get(f) for f in ("involvedObject", *EVENT_FIELDS)},
                                           namespace=key.namespace)
        else:
            return True
        self.metrics.synced(UP, EVENTS)
        return True

    async def delete_downstream(self, resource: DynamicResource, down: Obj, *, propagation_policy: str | None,
                                why: str) -> None:
        """Delete a cluster's object (that very one: uid precondition), saying why in the log."""
        await self._delete(resource, str(meta(down).get("namespace") or ""), down,
                           propagation_policy=propagation_policy)
        self.log.info(f"deleted downstream: {why}", name=meta(down).get("name"), propagation=propagation_policy)

    async def _terminating(self, typ: UpsyncedType, key: SyncKey, up: Obj) -> None:
        """The cluster's pod is going (its preStop hooks run, its endpoints leave every Service): its copy shows it
        going too, as `kubectl get pods` shows Terminating on the cluster. Deleted, and held by this syncer's
        finalizer until the pod is gone (then `_release`), so its readers (kcp's remote endpoints) see it go."""
        finalizer = syncer_finalizer(self.target)
        typ.removing.add(key)  # its delete is ours, not a user's to carry down
        finalizers = list(meta(up).get("finalizers") or ())
        if finalizer not in finalizers:
            await typ.up_resource.patch(key.name, {"metadata": {"finalizers": [*finalizers, finalizer]}},
                                        namespace=key.namespace)
        await self._delete(typ.up_resource, key.namespace, up)
        self.log.info("copy terminating with its cluster's object", resource=typ.name, namespace=key.namespace,
                      name=key.name)

    async def _release(self, typ: UpsyncedType, key: SyncKey, up: Obj) -> None:
        """The cluster's object is gone: this syncer's finalizer leaves its copy (`_terminating`)."""
        finalizer = syncer_finalizer(self.target)
        finalizers = list(meta(up).get("finalizers") or ())
        if finalizer in finalizers:
            try:
                await typ.up_resource.patch(key.name, {"metadata": {"finalizers": [
                    f for f in finalizers if f != finalizer] or None}}, namespace=key.namespace)
            except APINotFoundError:
                pass

    @staticmethod
    async def _delete(resource: DynamicResource, namespace: str, obj: Obj, *,
                      propagation_policy: str | None = None) -> None:
        preconditions = {"uid": str(meta(obj).get("uid") or "")}
        try:
            if propagation_policy:
                await resource.delete(str(meta(obj).get("name")), namespace=namespace, preconditions=preconditions,
                                      propagation_policy=propagation_policy)
            else:
                await resource.delete(str(meta(obj).get("name")), namespace=namespace, preconditions=preconditions)
        except APINotFoundError:
            pass


def bound_since(have: Obj, want: Obj) -> str | None:
    """The node a pod was bound to after its copy was made, when that is the only change to its spec: the
    copy is bound then (a binding is the one write that sets an existing pod's nodeName), not made again."""
    node = want.get("nodeName")
    if not node or have.get("nodeName"):
        return None
    return str(node) if contains(have, {k: v for k, v in want.items() if k != "nodeName"}) else None


def _metadata_change(have: Obj, want: Obj) -> dict[str, Any]:
    """The merge patch of labels and annotations from `have` to `want` ({} when they agree)."""
    change: dict[str, Any] = {}
    for part in ("labels", "annotations"):
        current: Mapping[str, Any] = meta(have).get(part) or {}
        desired: Mapping[str, Any] = meta(want).get(part) or {}
        if dict(current) != dict(desired):
            change[part] = merge_patch(current, desired)
    if (meta(have).get("ownerReferences") or []) != (meta(want).get("ownerReferences") or []):
        change["ownerReferences"] = meta(want).get("ownerReferences") or None  # a merge patch replaces lists
    return change
