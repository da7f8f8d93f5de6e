"""A deleted APIBinding takes its bound objects with it, as a deleted CRD does in kube: every object of each
bound type in the consumer is deleted (finalizers honoured), then the binding's finalizer goes. Meanwhile the
types are still served, so that objects' finalizers can finish, but take no new objects (see admission)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import structlog

from kcp_apiserver.apimachinery.request import system_context
from kcp_apiserver.apis.types import API_BINDING, FINALIZER
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.registry.store import Registry
from kcp_apiserver.storage.etcd import Storage
from kcp_apiserver.storage.keys import scope_prefix

log = structlog.get_logger("apibindings")


async def delete_bound_objects(storage: Storage, registry: Registry, cluster: str,
                               served: list[Resource]) -> int:
    """Delete what the binding's types hold in `cluster`; how many objects remain (finalizers still pending)."""
    remaining = 0
    for res in {r.prefix: r for r in served}.values():  # a type's versions share one prefix
        async for _ in registry.delete_pages(res, cluster, ""):
            pass  # page by page, nothing kept, as a CRD's cleanup does
        remaining += await storage.count(scope_prefix(res.prefix, cluster, None))
    return remaining


async def drop_finalizer(registry: Registry, cluster: str, cached: Mapping[str, Any]) -> None:
    binding = copy.deepcopy(dict(cached))
    binding["metadata"]["finalizers"] = [f for f in binding["metadata"].get("finalizers") or [] if f != FINALIZER]
    await registry.update(API_BINDING, cluster, "", binding["metadata"]["name"], binding, ctx=system_context(cluster))
    log.info("apibinding deleted with its objects", cluster=cluster, name=binding["metadata"]["name"])
