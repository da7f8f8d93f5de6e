"""The built-in types kcp serves: only what a logical cluster itself needs, one module per API group."""

from __future__ import annotations

from kcp_apiserver.registry.builtin import coordination, core, events, rbac
from kcp_apiserver.registry.builtin.core import NAMESPACE, SERVICE_ACCOUNT, prepare_namespace
from kcp_apiserver.registry.resource import Resource

BUILTINS: tuple[Resource, ...] = (*core.RESOURCES, *events.RESOURCES, *coordination.RESOURCES, *rbac.RESOURCES)

__all__ = ["BUILTINS", "NAMESPACE", "SERVICE_ACCOUNT", "prepare_namespace"]
