"""What the cluster controller reads from a physical cluster: its Nodes' capacity and its API types.

Only the Kubernetes API is used (discovery, CRDs, OpenAPI v3 or v2, Nodes), so any conformant cluster
serves: k3s, kind, EKS or a kcp-sim-cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kcpcommon.dynamic import DynamicClient
from kcpcommon.errors import APINotFoundError
from kcpcommon.quantity import format_quantity, parse_quantity

from .openapi import crd_schema

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class ImportedType:
    """One resource type as a physical cluster serves it."""

    resource: str  # plural.group as in spec.resources ("services" for the core group)
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    schema: dict[str, Any] = field(compare=False, hash=False)
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = True
    scale: bool = False


def split_resource(resource: str) -> tuple[str, str]:
    """("deployments", "apps") from "deployments.apps"; ("services", "") from "services"."""
    plural, _, group = resource.partition(".")
    return plural, group


def group_path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


async def preferred_version(client: DynamicClient, group: str) -> str:
    if not group:
        return "v1"
    doc = await client.request("GET", f"/apis/{group}")
    return str(doc["preferredVersion"]["version"])


class SchemaCache:
    """A cluster's OpenAPI v3 schemas, converted once per version of their document.

    kube's `/openapi/v3` index names each group version's document with a hash (`?hash=`), so a discovery round
    whose hashes did not move fetches and converts nothing. The documents are megabytes (core/v1 is read for
    pods, services, configmaps...): decoding and inlining them on every round held the cluster controller's
    event loop, where push-mode syncers and their tunnels run, for up to a quarter of a second.
    `begin_round()` before each round reads the index again.
    """

    def __init__(self) -> None:
        self._index: dict[str, str] | None = None  # group-version path -> its document's URL (with the hash)
        self._schemas: dict[tuple[str, str], dict[str, Any]] = {}  # (document URL, kind) -> converted schema

    def begin_round(self) -> None:
        self._index = None

    async def schema(self, client: DynamicClient, group: str, version: str, kind: str) -> dict[str, Any]:
        if self._index is None:
            try:
                paths = (await client.request("GET", "/openapi/v3")).get("paths") or {}
            except APINotFoundError:  # kube before 1.24 serves only /openapi/v2 (its `definitions` are alike)
                paths = {}
            self._index = {gv: str(entry.get("serverRelativeURL") or "") for gv, entry in paths.items()}
            live = set(self._index.values())
            self._schemas = {key: found for key, found in self._schemas.items() if key[0] in live}
        url = self._index.get(group_path(group, version).lstrip("/"), "")
        if "hash=" not in url:
            return crd_schema(await _document(client, group, version), group, version, kind)
        found = self._schemas.get((url, kind))
        if found is None:
            parts = urlsplit(url)
            document = await client.request("GET", client.below_base(parts.path), query=parse_qsl(parts.query))
            found = self._schemas[(url, kind)] = crd_schema(document, group, version, kind)
        return copy.deepcopy(found)  # what is kept stays as converted whatever a caller does with its copy


async def _document(client: DynamicClient, group: str, version: str) -> Mapping[str, Any]:
    try:
        return await client.request("GET", f"/openapi/v3{group_path(group, version)}")  # type: ignore[no-any-return]
    except APINotFoundError:  # kube before 1.24 serves only /openapi/v2 (its `definitions` are alike)
        return await client.request("GET", "/openapi/v2")  # type: ignore[no-any-return]


async def read_type(client: DynamicClient, resource: str, schemas: SchemaCache | None = None) -> ImportedType:
    """The type of `resource` on the cluster: discovery for its names, its CRD or OpenAPI (v3, else v2) for its schema
    (through `schemas` when given: see SchemaCache).

    APINotFoundError when the cluster does not serve it.
    """
    plural, group = split_resource(resource)
    version = await preferred_version(client, group)
    doc = await client.request("GET", group_path(group, version))
    entries = {r["name"]: r for r in doc.get("resources") or []}
    entry = entries.get(plural)
    if entry is None:
        raise APINotFoundError(f"the cluster serves no {resource}", status=404, reason="NotFound")
    schema = await _crd_schema(client, plural, group, version)
    if schema is None:
        schema = await (schemas or SchemaCache()).schema(client, group, version, entry["kind"])
    props = schema.get("properties") or {}
    replicas = "replicas" in ((props.get("spec") or {}).get("properties") or {})
    return ImportedType(resource=resource, group=group, version=version, kind=entry["kind"], plural=plural,
                        singular=entry.get("singularName") or entry["kind"].lower(),
                        namespaced=bool(entry.get("namespaced")), schema=schema,
                        short_names=tuple(entry.get("shortNames") or ()), categories=tuple(entry.get("categories") or ()),
                        status=f"{plural}/status" in entries, scale=f"{plural}/scale" in entries and replicas)


async def _crd_schema(client: DynamicClient, plural: str, group: str, version: str) -> dict[str, Any] | None:
    """The schema of the cluster's CRD for the type, or None when the type is built in."""
    if not group:
        return None
    try:
        crd = await client.request("GET", f"{CRD_PATH}/{plural}.{group}")
    except APINotFoundError:
        return None
    for served in crd.get("spec", {}).get("versions") or []:
        if served.get("name") == version:
            schema = (served.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, dict):
                return schema
    return None


async def node_resources(client: DynamicClient) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) summed over the cluster's Nodes."""
    nodes = await client.request("GET", "/api/v1/nodes")
    items = nodes.get("items") or []
    return (sum_resources(n.get("status", {}).get("capacity") or {} for n in items),
            sum_resources(n.get("status", {}).get("allocatable") or {} for n in items))


def sum_resources(lists: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Resource lists (Nodes', SyncTargets') added up by name; a value that is no Quantity is left out."""
    totals: dict[str, Any] = {}
    for resources in lists:
        for name, value in resources.items():
            try:
                totals[name] = totals.get(name, 0) + parse_quantity(str(value))
            except ValueError:
                continue
    return {name: format_quantity(total, name) for name, total in sorted(totals.items())}
