"""Conversion between what is stored and what a request sees, in both directions, in one place.

Into storage: the requested version's apiVersion becomes the storage version, and a type stored in
another type's shape (events.k8s.io Events as core Events) is converted. Out of storage: the stored
object gets the requested version's apiVersion and the CRD's defaults (kube defaults on read too).
Across logical clusters (`*`), each object is shown by its own cluster's definition of the resource.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kcp_apiserver.registry.catalog import Catalog
from kcp_apiserver.registry.resource import Obj, Resource
from kcpcommon.keys import CLUSTER_ANNOTATION

Presenter = Callable[[str, Obj], Obj]  # (the object's logical cluster, stored object) -> what the client sees


def to_storage(res: Resource, obj: Obj) -> Obj:
    """A request's object in the shape it is stored in (kind and apiVersion already checked)."""
    obj["apiVersion"] = res.storage_api_version  # conversion None: only apiVersion differs between versions
    return res.to_storage(obj) if res.to_storage is not None else obj


def present(res: Resource, obj: Obj) -> Obj:
    """A stored object as the requested version shows it: its apiVersion, and defaults applied on read."""
    if res.from_storage is not None:
        return res.from_storage(obj)
    if not res.is_custom:
        return obj
    defaults = res.type_schema is not None and res.type_schema.has_defaults
    if obj.get("apiVersion") == res.api_version and not defaults:
        return obj
    out = copy.deepcopy(obj) if defaults else dict(obj)
    out["apiVersion"] = res.api_version
    if defaults and res.type_schema is not None:
        res.type_schema.default(out)
    return out


def stored_view(res: Resource) -> Callable[[Obj], Obj] | None:
    """How selectors see a stored object: field paths name the requested shape, not the stored one."""
    return res.from_storage


def presenter(catalog: Catalog, res: Resource, wildcard: bool) -> Presenter:
    """present() for one request: across clusters (`*`) each object by its own cluster's CRD."""
    if not (wildcard and res.is_custom):
        return lambda _cluster, obj: present(res, obj)
    return lambda cluster, obj: present(catalog.in_cluster(res, cluster), obj)


def cluster_of(obj: Obj) -> str:
    return str((obj.get("metadata", {}).get("annotations") or {}).get(CLUSTER_ANNOTATION, ""))


def variant(res: Resource) -> tuple[Any, ...]:
    """What tells two presentations of the same stored event apart (encoded once per variant)."""
    return (res.api_version, res.schema_digest)
