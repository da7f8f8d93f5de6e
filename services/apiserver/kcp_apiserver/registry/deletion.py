"""Deletion propagation: which garbage-collector finalizer a DELETE leaves on an object.

A DELETE names a propagation policy (or the deprecated `orphanDependents`);
the registry records it as a finalizer that the garbage collector acts on:
`orphan` (take the owner's reference off its dependents, then let the owner
go) or `foregroundDeletion` (the owner stays until its blocking dependents are
gone). Background needs no finalizer: the owner goes at once and the collector
deletes its dependents afterwards. As in kube, the options win over a
finalizer already on the object, which wins over the type's default.
"""

from __future__ import annotations

from kcp_apiserver.apimachinery.deleteoptions import BACKGROUND, FOREGROUND, ORPHAN, Propagation
from kcp_apiserver.apimachinery.validation import FINALIZER_FOREGROUND, FINALIZER_ORPHAN
from kcp_apiserver.registry.resource import Resource

GC_FINALIZERS = (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)

# built-in versions older than cascading deletion keep orphaning by default, as their kube strategies do
_ORPHAN_BY_DEFAULT = frozenset({
    ("", "v1", "ReplicationController"),
    ("batch", "v1", "Job"),
    ("batch", "v1beta1", "CronJob"),
    ("batch", "v2alpha1", "CronJob"),
    *((group, version, kind)
      for group, version in (("extensions", "v1beta1"), ("apps", "v1beta1"), ("apps", "v1beta2"))
      for kind in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet")),
})
# kinds whose strategy does not take part in garbage collection at all (kube's `rest.Unsupported`)
_UNSUPPORTED = frozenset({("", "Event"), ("events.k8s.io", "Event")})


def default_policy(res: Resource) -> str | None:
    """The type's own policy when a DELETE names none; None = the type takes no part in collection."""
    if not res.is_custom and (res.group, res.kind) in _UNSUPPORTED:
        return None
    if not res.is_custom and (res.group, res.version, res.kind) in _ORPHAN_BY_DEFAULT:
        return ORPHAN
    return BACKGROUND


def _wanted(existing: list[str], propagation: Propagation) -> str | None:
    """The collector finalizer to carry: options first, then the one already there."""
    if propagation.orphan_dependents is not None:
        return FINALIZER_ORPHAN if propagation.orphan_dependents else None
    if propagation.policy == ORPHAN:
        return FINALIZER_ORPHAN
    if propagation.policy == FOREGROUND:
        return FINALIZER_FOREGROUND
    if propagation.policy == BACKGROUND:
        return None
    for finalizer in existing:
        if finalizer in GC_FINALIZERS:
            return finalizer
    return ""  # nothing decided: the type's default


def deletion_finalizers(res: Resource, existing: list[str], propagation: Propagation) -> list[str]:
    """The object's finalizers once this DELETE has recorded its propagation."""
    default = default_policy(res)
    if default is None:
        return list(existing)
    wanted = _wanted(existing, propagation)
    if wanted == "":
        wanted = FINALIZER_ORPHAN if default == ORPHAN else None
    kept = [f for f in existing if f not in GC_FINALIZERS]
    return [*kept, wanted] if wanted else kept

