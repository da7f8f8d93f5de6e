"""What a CRD may not take: storage the server owns, and kcp's own API groups.

Every logical cluster's objects live under /registry/<group>/<resource>/ and the server keeps its
own keys (logical-cluster markers, leader election) under /registry/kcp.io/. A CRD whose objects
would land on a built-in type's keys, or on the server's, would let one tenant read or break every
other tenant's data, so such a CRD is refused when written and never served when found in etcd.

kube's own groups (*.k8s.io, *.kubernetes.io) need kube's API-approval annotation (see validation).
kcp's groups (kcp.io and below) are reserved besides, as kcp's ReservedCRDGroups admission does:
only the server itself may write CRDs there, and a member of system:masters may write the system
CRDs the configuration names. That is how kcp's own CRDs get installed: the cluster controller
creates `synctargets.workload.kcp.io` in a logical cluster with the admin identity. Membership is
judged on the identity that authenticated as well as on the one acted as: a tenant who may impersonate
`system:masters` (or `system:apiserver`) in a cluster of its own is still a tenant.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kcp_apiserver.apiextensions.fields import get, get_str
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import SYSTEM, SYSTEM_MASTERS, RequestContext
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.registry.resource import Resource
from kcp_apiserver.storage.keys import ROOT, resource_prefix

INTERNAL_PREFIX = f"{ROOT}/kcp.io/"  # the server's own keys: logical-cluster markers, leader election
KCP_GROUP = "kcp.io"


def _overlap(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def storage_conflict(group: str, plural: str, builtins: Iterable[Resource]) -> str | None:
    """Why a CRD's objects may not be stored at /registry/<group>/<plural>/, or None when they may.

    The answer names what the server keeps there itself: a built-in type (whose keys the CRD's
    would overlap, or whose group and resource it would shadow) or the server's own keys.
    """
    prefix = resource_prefix(group, plural)
    if _overlap(prefix, INTERNAL_PREFIX):
        return f"the API server stores {plural}.{group} itself"
    for res in builtins:
        if _overlap(prefix, res.prefix):
            return f"the API server stores {res.group_resource} itself"
        if (res.group, res.plural) == (group, plural):
            return f"the API server serves {res.group_resource} itself"
    return None


def reserved_group(group: str, reserved: Iterable[str]) -> str | None:
    """The reserved group `group` is or falls under, if any."""
    for name in reserved:
        if group == name or group.endswith("." + name):
            return name
    return None


@dataclass(frozen=True)
class ReservedGroups:
    """API groups tenants may not define CRDs in, and the CRDs there the server's configuration installs."""

    groups: tuple[str, ...] = (KCP_GROUP,)
    system_crds: frozenset[str] = frozenset()  # CRD names, `<plural>.<group>`

    def allows(self, ctx: RequestContext, crd_name: str) -> bool:
        """The server's own writes may go anywhere; system:masters may install the system CRDs, if it is
        who authenticated (an impersonator must be a member too)."""
        if ctx.impersonator is None and ctx.user == SYSTEM:
            return True
        authenticated = ctx.impersonator or ctx.user
        return (SYSTEM_MASTERS in authenticated.groups and SYSTEM_MASTERS in ctx.user.groups
                and crd_name in self.system_crds)


def _forbidden(name: str, why: str) -> st.APIError:
    """kube's NewForbidden for a CRD, as admission plugins answer."""
    return st.APIError(403, "Forbidden",
                       f'customresourcedefinitions.apiextensions.k8s.io "{name}" is forbidden: {why}',
                       {"name": name, "group": "apiextensions.k8s.io", "kind": "customresourcedefinitions"})


class ReservedCRDs:
    """Validating admission for CRD writes: kcp's reserved groups, then the storage the server owns.

    Runs after the CRD's own validation (as admission does in kube), so a CRD that reaches it has a
    well-formed group and plural.
    """

    def __init__(self, crd_prefix: str, builtins: Iterable[Resource], groups: ReservedGroups) -> None:
        self.crd_prefix = crd_prefix
        self.builtins = tuple(builtins)
        self.groups = groups

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource.prefix != self.crd_prefix or attrs.operation not in (CREATE, UPDATE):
            return
        spec = get(attrs.obj, "spec")
        group, plural = get_str(spec, "group"), get_str(get(spec, "names"), "plural")
        name = attrs.name or get_str(get(attrs.obj, "metadata"), "name")
        reserved = reserved_group(group, self.groups.groups)
        if reserved is not None and not self.groups.allows(attrs.ctx, name):
            raise _forbidden(name, f"{group} is a reserved group")
        why = storage_conflict(group, plural, self.builtins)
        if why is not None:
            raise _forbidden(name, why)
