"""What the cluster controller reads from a physical cluster: its Nodes' capacity and its API types.

Only the Kubernetes API is used (discovery, CRDs, OpenAPI v3 or v2, Nodes), so any conformant cluster
serves: k3s, kind, EKS or a kcp-sim-cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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


async def read_type(client: DynamicClient, resource: str) -> ImportedType:
    """The type of `resource` on the cluster: discovery for its names, its CRD or OpenAPI (v3, else v2) for its schema.

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
        try:
            document = await client.request("GET", f"/openapi/v3{group_path(group, version)}")
        except APINotFoundError:  # kube before 1.24 serves only /openapi/v2 (its `definitions` are alike)
            document = await client.request("GET", "/openapi/v2")
        schema = crd_schema(document, group, version, entry["kind"])
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
    return (_sum(n.get("status", {}).get("capacity") or {} for n in items),
            _sum(n.get("status", {}).get("allocatable") or {} for n in items))


def _sum(lists: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    totals: dict[str, Any] = {}
    for resources in lists:
        for name, value in resources.items():
            try:
                totals[name] = totals.get(name, 0) + parse_quantity(str(value))
            except ValueError:
                continue
    return {name: format_quantity(total, name) for name, total in sorted(totals.items())}
