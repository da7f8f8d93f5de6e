"""Admission of a Workspace's type, as kcp's WorkspaceTypeExists plugin: on create the type is resolved (the
parent's default child type when none is given; the path filled in), its `additionalWorkspaceLabels` added,
and the create refused 403 unless the type and every type it extends can be resolved, the creator holds
verb `use` on each of them (`workspacetypes` of `tenancy.kcp.io`, named, in the type's logical cluster;
the built-in `root:universal` is everyone's) and both sides' parent/child limits allow it. A Workspace's
type never changes afterwards."""

from __future__ import annotations

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes
from kcp_apiserver.tenancy.types import WORKSPACE, WORKSPACE_TYPE
from kcp_apiserver.tenancy.workspacetypes import (
    BUILTIN,
    Lookup,
    ParentType,
    ResolvedType,
    TypeRef,
    UnresolvableType,
    limits_refusal,
    resolve,
    spec_type,
)

USE_VERB = "use"


def use_request(ref: TypeRef) -> RequestInfo:
    """What `use` of a type is, as an authorizer sees it."""
    return RequestInfo(ref.path, "", is_resource=True, verb=USE_VERB, api_prefix="apis", group=WORKSPACE_TYPE.group,
                       version=WORKSPACE_TYPE.version, resource=WORKSPACE_TYPE.plural, name=ref.name)


class WorkspaceTypeAdmission:
    def __init__(self, get_type: Lookup, parent_type: ParentType, authorizer: RBACAuthorizer) -> None:
        self.get_type = get_type
        self.parent_type = parent_type
        self.authorizer = authorizer

    def _refused(self, attrs: Attributes, why: str) -> st.APIError:
        name = attrs.name or str(((attrs.obj or {}).get("metadata") or {}).get("name") or "")
        return st.APIError(403, "Forbidden", f'{WORKSPACE.group_resource} "{name}" is forbidden: {why}',
                           {"name": name, "group": WORKSPACE.group, "kind": WORKSPACE.plural})

    async def _parent(self, cluster: str) -> ResolvedType:
        ref = await self.parent_type(cluster)
        return await resolve(self.get_type, cluster, ref.name, ref.path)

    async def _resolve(self, attrs: Attributes) -> ResolvedType:
        ref = spec_type(attrs.obj)
        try:
            if ref is None:
                parent = await self._parent(attrs.cluster)
                ref = parent.default_child()
                if ref is None:
                    raise UnresolvableType(f"spec.defaultChildWorkspaceType of workspace type {parent.ref} must "
                                           "be set, or the workspace given a type")
            return await resolve(self.get_type, attrs.cluster, ref.name, ref.path)
        except UnresolvableType as exc:
            raise self._refused(attrs, str(exc)) from exc

    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource.group_resource != WORKSPACE.group_resource or attrs.obj is None:
            return
        if attrs.operation != CREATE:
            return
        resolved = await self._resolve(attrs)
        attrs.obj.setdefault("spec", {})["type"] = resolved.ref.as_spec()
        labels = attrs.obj.setdefault("metadata", {}).setdefault("labels", {})
        for key, value in resolved.labels().items():
            labels.setdefault(key, value)

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource.group_resource != WORKSPACE.group_resource or attrs.obj is None:
            return
        if attrs.operation == UPDATE:
            old = spec_type(attrs.old)
            if old is not None and spec_type(attrs.obj) != old:
                raise self._refused(attrs, "spec.type is immutable")
            return
        if attrs.operation != CREATE:
            return
        resolved = await self._resolve(attrs)
        for ref in resolved.refs():
            if ref not in BUILTIN and not self.authorizer.allows(attrs.ctx.user, use_request(ref)):
                raise self._refused(attrs, f"unable to use workspace type {ref}: missing verb='{USE_VERB}' "
                                           "permission on workspacetypes")
        try:
            why = limits_refusal(await self._parent(attrs.cluster), resolved)
        except UnresolvableType as exc:
            why = str(exc)
        if why:
            raise self._refused(attrs, why)
