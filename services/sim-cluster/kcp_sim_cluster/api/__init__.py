"""The API a simulated cluster serves: kube's workload types as built-in types, for one release."""

from __future__ import annotations

import functools

from kcp_apiserver.embedding import BUILTINS, CRD, REVIEWS, Resource, for_release
from kcp_sim_cluster.api import (
    apps,
    autoscaling,
    batch,
    classes,
    core,
    networking,
    policy,
    quota,
    replication,
    scheduling,
)


@functools.cache
def resources(release: str) -> tuple[Resource, ...]:
    """Every built-in type of a simulated cluster, described by `release`'s schemas: kcp's own
    (namespaces, configmaps, secrets, serviceaccounts, events, leases, RBAC and its reviews, CRDs) and the
    workload types."""
    return (*for_release((*BUILTINS, *REVIEWS, CRD), release), *core.resources(release), *apps.resources(release),
            *batch.resources(release), *networking.resources(release), *policy.resources(release),
            *scheduling.resources(release), *classes.resources(release), *replication.resources(release),
            *quota.resources(release), *autoscaling.resources(release))


def resource(release: str, group: str, plural: str) -> Resource:
    """One of them, by group and plural (for the control plane and tests)."""
    found = next((r for r in resources(release) if r.group == group and r.plural == plural), None)
    if found is None:
        raise LookupError(f"no {plural}.{group or 'core'} in Kubernetes {release}")
    return found
