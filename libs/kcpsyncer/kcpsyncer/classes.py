"""The classes a workload names (StorageClass, PriorityClass, RuntimeClass, IngressClass), renamed for the
physical cluster.

A tenant's class goes down under its mapped name (`names.downstream_name`), so the fields that name it are
rewritten in the referring objects going down (a PVC's and a volumeClaimTemplate's `storageClassName`, a pod
template's `priorityClassName`/`runtimeClassName`, an Ingress's `ingressClassName`), and back (`rename` with
the inverse mapping) for what comes up. A name the tenant has no class of is the physical cluster's own class
(its `standard` StorageClass) and passes unchanged. A tenant's class never becomes the cluster's default
(`confine`): that would change every other tenant's claims and pods there. Which one a name is, is decided when the referrer first goes
down and kept while the downstream copy names it (`ClassNames`): a class deleted before its users (as
`kubectl delete -f` does) must not change an immutable `storageClassName` under a live claim.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from kcpcommon.dynamic import DynamicResource
from kcpcommon.errors import APIClientError, APINotFoundError
from kcpcommon.keys import ObjectKey

from .names import downstream_name
from .objects import POD_TEMPLATES, Obj
from .synced import SyncedType

STORAGE_CLASSES = "storageclasses.storage.k8s.io"
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
RUNTIME_CLASSES = "runtimeclasses.node.k8s.io"
INGRESS_CLASSES = "ingressclasses.networking.k8s.io"
POD_FIELDS = {"priorityClassName": PRIORITY_CLASSES, "runtimeClassName": RUNTIME_CLASSES}
# kind -> path to the pod spec of a kind that holds pods (a CronJob's one level deeper)
POD_SPECS: dict[str, tuple[str, ...]] = {"Pod": ("spec",), **{kind: (*path, "spec") for kind, path in POD_TEMPLATES.items()}}

Reference = tuple[MutableMapping[str, Any], str, str]  # (the mapping holding the field, the field, class resource)
Names = Mapping[tuple[str, str], str]  # (class resource, name) -> the name to write instead


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def references(kind: str, obj: Any) -> Iterator[Reference]:
    """Every field of `obj` (of `kind`) that names a class, with a value."""
    holders: list[tuple[Any, str, str]] = []
    pod_spec = _at(obj, POD_SPECS[kind]) if kind in POD_SPECS else None
    holders += [(pod_spec, field, resource) for field, resource in POD_FIELDS.items()]
    if kind == "PersistentVolumeClaim":
        holders.append((_at(obj, ("spec",)), "storageClassName", STORAGE_CLASSES))
    if kind == "StatefulSet":
        for template in _at(obj, ("spec", "volumeClaimTemplates")) or ():
            holders.append((_at(template, ("spec",)), "storageClassName", STORAGE_CLASSES))
    if kind == "Ingress":
        holders.append((_at(obj, ("spec",)), "ingressClassName", INGRESS_CLASSES))
    for holder, field, resource in holders:
        if isinstance(holder, MutableMapping) and isinstance(holder.get(field), str) and holder[field]:
            yield holder, field, resource


def named(kind: str, obj: Any) -> set[tuple[str, str]]:
    """(class resource, name) of every class `obj` names."""
    return {(resource, holder[field]) for holder, field, resource in references(kind, obj)}


def rename(kind: str, obj: Any, names: Names) -> None:
    """Rewrite in place the class names `names` maps (down: to the mapped names; up: the inverse)."""
    for holder, field, resource in references(kind, obj):
        holder[field] = names.get((resource, holder[field]), holder[field])


class MissingClass(Exception):
    """A referrer names a class that neither the logical cluster nor the physical cluster has (yet)."""

    def __init__(self, resource: str, kind: str, name: str) -> None:
        super().__init__(f"waiting for {kind} {name!r}: neither this logical cluster nor the SyncTarget has it")
        self.resource, self.name = resource, name


class ClassNames:
    """Decides, per referrer going down, which of the classes it names are the tenant's (mapped)."""

    def __init__(self, types: Mapping[str, SyncedType], *, logical_cluster: str) -> None:
        self._types = types
        self._lc = logical_cluster
        self._clusters_own: set[tuple[str, str]] = set()  # (class resource, name) the physical cluster has

    async def mapping(self, kind: str, up: Obj, down: Obj | None) -> dict[tuple[str, str], str]:
        """(class resource, name) -> mapped name, for the tenant's classes among those `up` names; raises
        `MissingClass` for a name no class answers to yet, on a referrer not yet down with it."""
        wanted = named(kind, up)
        if not wanted:
            return {}
        have = named(kind, down) if down is not None else set()
        out = {}
        for resource, name in sorted(wanted):
            typ = self._types.get(resource)
            if typ is None:  # classes of that kind are not synced: every name is the cluster's
                continue
            mapped = downstream_name(self._lc, name)
            if (resource, mapped) in have:
                out[(resource, name)] = mapped
            elif (resource, name) in have:
                continue  # decided when it went down: the cluster's
            elif await self._tenant_has(typ, name):
                out[(resource, name)] = mapped
            elif not await self._cluster_has(typ, resource, name):
                raise MissingClass(resource, typ.down.kind, name)
        return out

    async def _cluster_has(self, typ: SyncedType, resource: str, name: str) -> bool:
        """Whether the physical cluster has a class of that name of its own (one it cannot be asked about
        counts as had: the name then passes unchanged, as it always did)."""
        if (resource, name) not in self._clusters_own and await exists(typ.down_resource, name, forbidden=True):
            self._clusters_own.add((resource, name))
        return (resource, name) in self._clusters_own

    async def _tenant_has(self, typ: SyncedType, name: str) -> bool:
        """Whether the logical cluster has that class: the cache, else kcp."""
        return typ.upstream(ObjectKey(self._lc, "", name)) is not None or await exists(typ.up_resource, name)


async def exists(resource: DynamicResource, name: str, *, forbidden: bool | None = None) -> bool:
    """Whether `name` exists: only a 404 naming it means no; a 403 means `forbidden` when given; anything
    else raises (the key is retried, nothing decided on a guess)."""
    try:
        await resource.get(name)
    except APINotFoundError as exc:
        if exc.details.get("name") == name:
            return False
        raise
    except APIClientError as exc:
        if exc.status != 403 or forbidden is None:
            raise
        return forbidden
    return True


# a class marked the cluster's default would become every tenant's default there
DEFAULT_CLASS_ANNOTATIONS = {"StorageClass": "storageclass.kubernetes.io/is-default-class",
                             "IngressClass": "ingressclass.kubernetes.io/is-default-class"}


def confine(kind: str, body: MutableMapping[str, Any]) -> None:
    """Take off a tenant's class what would make it the physical cluster's default for every tenant: a
    StorageClass's or IngressClass's default annotation, a PriorityClass's `globalDefault`."""
    annotation = DEFAULT_CLASS_ANNOTATIONS.get(kind)
    annotations = (body.get("metadata") or {}).get("annotations")
    if annotation and isinstance(annotations, MutableMapping):
        annotations.pop(annotation, None)
    if kind == "PriorityClass":
        body.pop("globalDefault", None)


def inverse(names: Names) -> dict[tuple[str, str], str]:
    """The mapping that takes the mapped names back to the tenant's."""
    return {(resource, mapped): name for (resource, name), mapped in names.items()}

