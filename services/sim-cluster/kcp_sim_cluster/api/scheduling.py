"""scheduling.k8s.io/v1 PriorityClasses, which the Priority admission plugin turns into pods' priorities."""

from __future__ import annotations

import functools

from kcp_apiserver.embedding import Resource, kube_resource
from kcp_sim_cluster.api import columns
from kcp_sim_cluster.api.strategy import kube_strategy


@functools.cache
def priority_classes(release: str) -> Resource:
    return kube_resource("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", namespaced=False,
                         release=release, short_names=("pc",), columns=columns.PRIORITY_CLASS,
                         strategy=kube_strategy("scheduling.k8s.io", "v1", "PriorityClass", release))


def resources(release: str) -> tuple[Resource, ...]:
    return (priority_classes(release),)
