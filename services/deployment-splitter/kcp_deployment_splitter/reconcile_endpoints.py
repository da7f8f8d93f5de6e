"""Reconcile one Service's remote EndpointSlices (endpoints.py): made, updated and deleted to match the mirrored
pods it selects and the targets it is placed on. Only slices labelled as ours are ever written or deleted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kcpcommon.clients import ClientFactory
from kcpcommon.controller import Result
from kcpcommon.errors import APIAlreadyExistsError, APINotFoundError
from kcpcommon.keys import ObjectKey, key_for
from kcpcommon.store import CLUSTER_NAMESPACE_INDEX, IndexReader, cluster_namespace_value

from .endpoints import ENDPOINT_SLICES, MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL, remote_slices, slice_patch
from .names import COMPONENT

log = structlog.get_logger(COMPONENT)

SLICE_OWNER_INDEX = "splitter-remote-slices"  # our EndpointSlices by (cluster, namespace, Service name)


def slice_owner_value(cluster: str, namespace: str, service: str) -> str:
    return f"{cluster}|{namespace}|{service}"


def slice_owner_index(obj: Mapping[str, Any]) -> list[str]:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or not labels.get(SERVICE_NAME_LABEL):
        return []
    key = key_for(obj)
    return [slice_owner_value(key.cluster, key.namespace, str(labels[SERVICE_NAME_LABEL]))]


class RemoteEndpoints:
    """`reconcile(ObjectKey(cluster, namespace, service))`."""

    def __init__(self, kcp: ClientFactory, *, services: IndexReader, pods: IndexReader, slices: IndexReader) -> None:
        self.kcp = kcp
        self.services = services
        self.pods = pods  # the syncers' mirrors of the clusters' pods
        self.slices = slices  # indexed by SLICE_OWNER_INDEX

    async def reconcile(self, key: ObjectKey) -> Result | None:
        service = self.services.get(key)
        desired: dict[str, dict[str, Any]] = {}
        if service is not None and not (service.get("metadata") or {}).get("deletionTimestamp"):
            pods = self.pods.by_index(CLUSTER_NAMESPACE_INDEX, cluster_namespace_value(key.cluster, key.namespace))
            desired = remote_slices(service, pods)
        current = {str(s["metadata"]["name"]): s for s in self.slices.by_index(
            SLICE_OWNER_INDEX, slice_owner_value(key.cluster, key.namespace, key.name))}
        resource = self.kcp.dynamic(key.cluster).resource(*ENDPOINT_SLICES, namespaced=True)
        for name, body in sorted(desired.items()):
            found = current.get(name)
            if found is None:
                try:
                    await resource.create(body, namespace=key.namespace)
                except APIAlreadyExistsError:
                    return Result(requeue_after=0.5)  # made by an earlier pass the cache does not show yet
                log.info("remote endpoints made", cluster=key.cluster, namespace=key.namespace, service=key.name,
                         slice=name, endpoints=len(body["endpoints"]))
                continue
            patch = slice_patch(found, body)
            if patch is not None:
                await resource.patch(name, patch, namespace=key.namespace)
        for name in sorted(set(current) - set(desired)):
            try:
                await resource.delete(name, namespace=key.namespace)
            except APINotFoundError:
                pass
            log.info("remote endpoints removed", cluster=key.cluster, namespace=key.namespace, service=key.name,
                     slice=name)
        return None
