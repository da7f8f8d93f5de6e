"""kcp's own APIs (SyncTarget, Location) published as APIExports, so a workspace binds them instead of holding a
CRD of its own, as kcp's do: `--api-export-workspace W` makes, in W, an APIResourceSchema per CRD this package
ships (named after a digest of its spec, so a changed CRD is a new schema that the export rolls out) and the
exports `workload.kcp.io` (SyncTargets) and `scheduling.kcp.io` (Locations). A workspace that binds one (with
`bind` on it, granted in W) serves the type under the export's identity; this controller then lists those
objects across every workspace as `<plural>:<identity>` beside the CRDs' own."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import structlog

from kcpcommon.backoff import Backoff
from kcpcommon.clients import ClientFactory
from kcpcommon.errors import APIAlreadyExistsError, APIClientError
from kcpcommon.keys import ObjectKey
from kcpcommon.store import Indexer

log = structlog.get_logger("kcp-cluster-controller.exports")

APIS = "apis.kcp.io/v1alpha1"
EXPORTS = {"workload.kcp.io": ("synctarget-crd.yaml",),
           "scheduling.kcp.io": ("location-crd.yaml", "placement-crd.yaml")}


DROPPED_METADATA = frozenset({"kcp.io/cluster", "kubectl.kubernetes.io/last-applied-configuration"})


def schema_from_crd(crd: dict[str, Any]) -> dict[str, Any]:
    """The APIResourceSchema serving what `crd` serves (kcp's `<prefix>.<plural>.<group>` name). Its labels and
    annotations go along: an imported kube type's (the imported label, its patch strategies) make kcp serve the
    bound type as kube serves it."""
    spec = crd["spec"]
    versions = [{**{k: v for k, v in version.items() if k != "schema"},
                 "schema": (version.get("schema") or {}).get("openAPIV3Schema") or {}}
                for version in spec["versions"]]
    body = {"group": spec["group"], "names": spec["names"], "scope": spec["scope"], "versions": versions}
    meta = crd.get("metadata") or {}
    kept = {part: {k: v for k, v in (meta.get(part) or {}).items() if k not in DROPPED_METADATA}
            for part in ("labels", "annotations")}
    kept = {part: values for part, values in kept.items() if values}
    digest = hashlib.sha256(json.dumps([body, kept], sort_keys=True).encode()).hexdigest()[:10]
    return {"apiVersion": APIS, "kind": "APIResourceSchema",
            "metadata": {"name": f"v{digest}.{spec['names']['plural']}.{spec['group'] or 'core'}", **kept},
            "spec": body}


async def publish(kcp: ClientFactory, workspace: str, crds: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Make (or bring up to date) each export of `crds` (export name -> its CRDs) in `workspace`; its identity
    once the server gave it one. Retried until kcp answers."""
    client = kcp.dynamic(workspace)
    schemas = client.resource(APIS, "apiresourceschemas", namespaced=False)
    exports = client.resource(APIS, "apiexports", namespaced=False)
    backoff = Backoff(initial=0.5, cap=10.0)
    identities: dict[str, str] = {}
    for name, exported in crds.items():
        made = [schema_from_crd(crd) for crd in exported]
        while name not in identities:
            try:
                for schema in made:
                    try:
                        await schemas.create(schema)
                    except APIAlreadyExistsError:
                        pass  # named after its spec: the same
                wanted = {"latestResourceSchemas": [schema["metadata"]["name"] for schema in made]}
                try:
                    export = await exports.create({"apiVersion": APIS, "kind": "APIExport",
                                                   "metadata": {"name": name}, "spec": wanted})
                except APIAlreadyExistsError:
                    export = await exports.get(name)
                    if (export.get("spec") or {}).get("latestResourceSchemas") != wanted["latestResourceSchemas"]:
                        export = await exports.patch(name, {"spec": wanted})
                identity = (export.get("status") or {}).get("identityHash")
                if identity:
                    identities[name] = str(identity)
                    log.info("kcp API exported", workspace=workspace, export=name, schemas=wanted["latestResourceSchemas"])
                    continue
                await asyncio.sleep(backoff.next())  # the server gives it its identity
            except APIClientError as exc:
                delay = backoff.next()
                log.warning("cannot export a kcp API yet", workspace=workspace, export=name, error=str(exc),
                            retry_in=round(delay, 2))
                await asyncio.sleep(delay)
    return identities


class Merged:
    """One type's objects read from several informers' caches: the CRDs' and an export's. Their keys never meet:
    a workspace serves a group/resource from a CRD or from one binding, never both."""

    def __init__(self, *caches: Indexer) -> None:
        self.caches = caches

    def get(self, key: ObjectKey) -> Any:
        return next((found for cache in self.caches if (found := cache.get(key)) is not None), None)

    def get_copy(self, key: ObjectKey) -> dict[str, Any] | None:
        return next((found for cache in self.caches if (found := cache.get_copy(key)) is not None), None)

    def by_index(self, name: str, value: str) -> list[Any]:
        return [obj for cache in self.caches for obj in cache.by_index(name, value)]

    def index_keys(self, name: str, value: str) -> set[ObjectKey]:
        return set().union(*(cache.index_keys(name, value) for cache in self.caches))
