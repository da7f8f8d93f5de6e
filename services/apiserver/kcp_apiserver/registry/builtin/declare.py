"""Declaring a built-in type from kube's real schema, for any Kubernetes release the wheel ships.

A server built from this package (kcp-sim-cluster) serves kube's workload types as built-in types:
the descriptor names the group, version and kind, and the schema, its TypeSchema and the OpenAPI
published for it all come from that release's definitions. Nothing is copied per type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.resource import Resource


class UnknownKind(LookupError):
    """The release's schemas describe no such group/version/kind."""


def kube_resource(group: str, version: str, kind: str, plural: str, *, namespaced: bool,
                  release: str = builtinschemas.DEFAULT_RELEASE, **descriptor: Any) -> Resource:
    """The descriptor of a built-in kind described by `release`'s schema; `descriptor` as `Resource`'s fields."""
    definition = builtinschemas.definition_for(group, version, kind, release)
    if definition is None:
        raise UnknownKind(f"Kubernetes {release} has no schema for {group or 'core'}/{version} {kind}")
    descriptor.setdefault("singular", kind.lower())
    return Resource(group, version, kind, plural, namespaced=namespaced, definition=definition, release=release,
                    **descriptor)


def for_release(resources: Iterable[Resource], release: str) -> tuple[Resource, ...]:
    """The same descriptors, described by another release's schemas (kcp's Namespaces as 1.25 serves them)."""
    out = []
    for res in resources:
        if res.definition is None or res.release == release:
            out.append(res)
            continue
        definition = builtinschemas.definition_for(res.group, res.version, res.kind, release) or res.definition
        out.append(dataclasses.replace(res, definition=definition, release=release, type_schema=None))
    return tuple(out)
