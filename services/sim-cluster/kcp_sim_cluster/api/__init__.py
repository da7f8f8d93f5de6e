"""The API a simulated cluster serves: kube's workload types as built-in types, for one release."""

from __future__ import annotations

import functools

from kcp_apiserver.registry.builtin import BUILTINS
from kcp_apiserver.registry.builtin.declare import for_release
from kcp_apiserver.registry.resource import Resource
from kcp_sim_cluster.api import apps, core


@functools.cache
def resources(release: str) -> tuple[Resource, ...]:
    """Every built-in type of a simulated cluster, described by `release`'s schemas."""
    return (*for_release(BUILTINS, release), *core.resources(release), *apps.resources(release))
