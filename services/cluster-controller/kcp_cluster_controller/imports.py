"""Publishing the physical clusters' types as CRDs in each logical cluster, negotiated between clusters.

Per logical cluster, the importer remembers each SyncTarget's view of each type it syncs. The CRD
it publishes for a type holds the lowest common denominator of those views (see negotiation.py)
and is labelled as imported; a SyncTarget whose view lacks fields of the published schema is
reported incompatible, naming the fields another cluster has and it lacks. A CRD that was not imported (created by hand) is never
touched: the clusters' views are only checked against it. When the last SyncTarget syncing a
type leaves, its imported CRD is deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from kcpcommon import patchmeta
from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APIAlreadyExistsError, APIConflictError, APINotFoundError
from kcpcommon.kubetypes import IMPORTED_LABEL

from .negotiation import lowest_common_denominator, missing
from .physical import CRD_PATH, ImportedType
from .printer import printer_columns

log = structlog.get_logger("kcp-cluster-controller.imports")

IMPORTED_FROM = "workload.kcp.io/imported-from"
SCHEMA_DIGEST = "workload.kcp.io/schema-digest"
API_APPROVAL = "api-approved.kubernetes.io"
# kube's own API review approved these types; the annotation records where, as kube's protected groups require
KUBE_API_REVIEW = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/1111-api-approval"


def crd_name(plural: str, group: str) -> str:
    """kcp names core-group CRDs `<plural>.core`."""
    return f"{plural}.{group or 'core'}"


def _protected(group: str) -> bool:
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


@dataclass(frozen=True)
class Verdict:
    """How one SyncTarget's view of one type compares with what is published."""

    resource: str
    missing: tuple[str, ...]
    hand_made: bool


def crd_for(views: list[ImportedType], schema: dict[str, Any], targets: list[str]) -> dict[str, Any]:
    """The CRD publishing the negotiated `schema`; its patch strategies ride in an annotation (kcpcommon.patchmeta)."""
    first = views[0]
    crd_schema, patch_meta = patchmeta.split(schema)
    version: dict[str, Any] = {"name": first.version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": crd_schema}}
    subresources: dict[str, Any] = {}
    if all(v.status for v in views):
        subresources["status"] = {}
    if all(v.scale for v in views):
        subresources["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    if subresources:
        version["subresources"] = subresources
    columns = printer_columns(first.group, first.kind)
    if columns:
        version["additionalPrinterColumns"] = columns
    names: dict[str, Any] = {"plural": first.plural, "singular": first.singular, "kind": first.kind,
                             "listKind": f"{first.kind}List"}
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    annotations = {IMPORTED_FROM: ",".join(sorted(targets)), SCHEMA_DIGEST: digest([version, patch_meta])}
    if patch_meta:
        annotations[patchmeta.PATCH_ANNOTATION] = patchmeta.encode(patch_meta)
    if _protected(first.group):
        annotations[API_APPROVAL] = KUBE_API_REVIEW
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": crd_name(first.plural, first.group), "labels": {IMPORTED_LABEL: "true"},
                         "annotations": annotations},
            "spec": {"group": first.group, "scope": "Namespaced" if first.namespaced else "Cluster",
                     "names": names, "versions": [version]}}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


class Importer:
    """The types each SyncTarget of each logical cluster serves, and the CRDs published from them."""

    def __init__(self, kcp: Callable[[str], DynamicClient]) -> None:
        self._kcp = kcp
        self._views: dict[str, dict[str, dict[str, ImportedType]]] = {}  # cluster -> target -> resource -> view

    def targets(self, cluster: str) -> list[str]:
        return sorted(self._views.get(cluster, {}))

    def set_views(self, cluster: str, target: str, views: dict[str, ImportedType]) -> bool:
        """Record a SyncTarget's views; True when they changed."""
        known = self._views.setdefault(cluster, {})
        old = known.get(target)
        changed = old is None or {r: digest(v.schema) for r, v in old.items()} != \
            {r: digest(v.schema) for r, v in views.items()}
        known[target] = views
        return changed

    def has_views(self, cluster: str, target: str) -> bool:
        return target in self._views.get(cluster, {})

    def forget(self, cluster: str, target: str) -> set[str]:
        """Drop a SyncTarget's views; returns the resources it imported."""
        views = self._views.get(cluster, {}).pop(target, {})
        if cluster in self._views and not self._views[cluster]:
            del self._views[cluster]
        return set(views)

    async def kcp_serves_natively(self, cluster: str, resource: str, view: ImportedType) -> bool:
        """kcp serves some types itself (ConfigMaps, Secrets, ServiceAccounts): nothing to import."""
        client = self._kcp(cluster)
        try:
            await client.request("GET", f"{CRD_PATH}/{crd_name(view.plural, view.group)}")
            return False
        except APINotFoundError:
            pass
        path = f"/apis/{view.group}/{view.version}" if view.group else f"/api/{view.version}"
        try:
            doc = await client.request("GET", path)
        except APINotFoundError:
            return False
        return any(r.get("name") == view.plural for r in doc.get("resources") or [])

    async def publish(self, cluster: str, resource: str) -> dict[str, Verdict]:
        """Create, update or delete the CRD of `resource` in `cluster`; each target's verdict on it."""
        holders = {t: views[resource] for t, views in self._views.get(cluster, {}).items() if resource in views}
        client = self._kcp(cluster)
        resource_crd = client.resource("apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False)
        if not holders:
            await self._delete_imported(resource_crd, resource)
            return {}
        views = [holders[t] for t in sorted(holders)]
        name = crd_name(views[0].plural, views[0].group)
        try:
            existing: dict[str, Any] | None = await resource_crd.get(name)
        except APINotFoundError:
            existing = None
        hand_made = existing is not None and (existing["metadata"].get("labels") or {}).get(IMPORTED_LABEL) != "true"
        if hand_made:
            assert existing is not None
            published = _served_schema(existing, views[0].version)
        else:
            published = lowest_common_denominator(v.schema for v in views)
            await self._apply(resource_crd, existing, crd_for(views, published, list(holders)))
        if hand_made:
            return {t: Verdict(resource, tuple(missing(published, view.schema)) if published else (), True)
                    for t, view in holders.items()}
        return {t: Verdict(resource, _lacks(view, [v for o, v in holders.items() if o != t]), False)
                for t, view in holders.items()}

    async def _apply(self, resource_crd: Any, existing: dict[str, Any] | None, wanted: dict[str, Any]) -> None:
        name = wanted["metadata"]["name"]
        if existing is None:
            try:
                await resource_crd.create(wanted)
                log.info("imported type published", crd=name, sync_targets=wanted["metadata"]["annotations"][IMPORTED_FROM])
            except APIAlreadyExistsError:
                raise APIConflictError(f"{name} appeared meanwhile", status=409, reason="Conflict") from None
            return
        annotations = existing["metadata"].get("annotations") or {}
        if annotations.get(SCHEMA_DIGEST) == wanted["metadata"]["annotations"][SCHEMA_DIGEST] and \
                annotations.get(IMPORTED_FROM) == wanted["metadata"]["annotations"][IMPORTED_FROM]:
            return
        wanted["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        await resource_crd.replace(wanted)
        log.info("imported type renegotiated", crd=name, sync_targets=wanted["metadata"]["annotations"][IMPORTED_FROM])

    async def _delete_imported(self, resource_crd: Any, resource: str) -> None:
        plural, _, group = resource.partition(".")
        name = crd_name(plural, group)
        try:
            existing = await resource_crd.get(name)
        except APINotFoundError:
            return
        if (existing["metadata"].get("labels") or {}).get(IMPORTED_LABEL) == "true":
            try:
                await resource_crd.delete(name)
                log.info("imported type removed: no SyncTarget syncs it any more", crd=name)
            except APINotFoundError:
                pass


def _lacks(view: ImportedType, others: list[ImportedType]) -> tuple[str, ...]:
    """The fields some other cluster has and this one lacks: this cluster narrows the published schema."""
    fields: dict[str, None] = {}
    for other in others:
        fields.update(dict.fromkeys(f for f in missing(other.schema, view.schema) if not _in_status(f)))
    return tuple(fields)


def _in_status(path: str) -> bool:
    """Status is written by the physical cluster itself: a status field it lacks never blocks syncing."""
    return any(part.split("[")[0] == "status" for part in path.split("."))


def _served_schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    versions = crd.get("spec", {}).get("versions") or []
    for served in versions:
        if served.get("name") == version:
            return dict((served.get("schema") or {}).get("openAPIV3Schema") or {})
    return dict(((versions[0] if versions else {}).get("schema") or {}).get("openAPIV3Schema") or {})
