"""`deployments.apps` → what to call on each side (group/version, plural, kind, scope, status subresource).

The types are resolved on both sides from discovery: the physical cluster's
preferred version, and kcp's (where the cluster controller imported it as a
CRD). A type not served (yet) on one side is not synced until it is.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from kcpcommon.dynamic import DynamicClient, DynamicResource
from kcpcommon.errors import APIClientError, APINotFoundError


@dataclass(frozen=True)
class APIType:
    """One served resource type."""

    api_version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool

    def resource(self, client: DynamicClient) -> DynamicResource:
        return client.resource(self.api_version, self.plural, namespaced=self.namespaced)


def split(resource: str) -> tuple[str, str]:
    """(plural, group) of `plural.group`; the core group is ""."""
    plural, _, group = resource.partition(".")
    return plural, group


async def resolve(client: DynamicClient, resource: str) -> APIType | None:
    """The type as `client`'s server serves it; None if it does not."""
    plural, group = split(resource)
    try:
        if group:
            doc = await client.request("GET", f"/apis/{group}")
            group_version = str(((doc or {}).get("preferredVersion") or {}).get("groupVersion") or "")
            if not group_version:
                return None
            listing = await client.request("GET", f"/apis/{group_version}")
        else:
            group_version = "v1"
            listing = await client.request("GET", "/api/v1")
    except APINotFoundError:
        return None
    names = {str(r.get("name")): r for r in (listing or {}).get("resources") or []}
    entry = names.get(plural)
    if entry is None:
        return None
    return APIType(group_version, plural, str(entry.get("kind") or ""), bool(entry.get("namespaced")),
                   f"{plural}/status" in names)


async def namespaced_listable(client: DynamicClient) -> list[APIType]:
    """Every namespaced type `client`'s server can list, at its group's preferred version: what a namespace
    may hold. A group whose listing fails (an aggregated API that is down) is left out."""
    versions = ["v1"]
    try:
        groups = await client.request("GET", "/apis")
    except APINotFoundError:
        groups = {}
    for group in (groups or {}).get("groups") or []:
        group_version = str((group.get("preferredVersion") or {}).get("groupVersion") or "")
        if group_version:
            versions.append(group_version)
    listings = await asyncio.gather(*(_resources(client, gv) for gv in versions))
    return [APIType(group_version, str(entry.get("name")), str(entry.get("kind") or ""), True, False)
            for group_version, listing in zip(versions, listings, strict=True) for entry in listing
            if entry.get("namespaced") and "/" not in str(entry.get("name") or "/")
            and "list" in (entry.get("verbs") or ())]


async def _resources(client: DynamicClient, group_version: str) -> list[dict[str, Any]]:
    path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    try:
        listing = await client.request("GET", path)
    except APIClientError:
        return []
    return [r for r in (listing or {}).get("resources") or [] if isinstance(r, dict)]
