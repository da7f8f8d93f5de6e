"""Admission for shared APIs.

`BindPermission`: creating an APIBinding needs `bind` on the export in the provider's workspace (kcp's rule:
verb `bind`, resource `apiexports` of `apis.kcp.io`, resource name the export's name), judged for the user
who creates it; without it the create is refused 403, as kcp's admission does, and nothing is stored.

`TerminatingBindings`: while an APIBinding is deleted its types are still served, so that its objects'
finalizers can finish, but no new object is created (kube's 405 for a terminating CRD's resources).

`BoundCRDs`: a CRD of a group/resource an APIBinding of the same workspace bound is refused 409 while the
binding exists: the two would serve one URL from two schemas and two storages."""

from __future__ import annotations

from kcp_apiserver.apiextensions.fields import get, get_str
from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestInfo
from kcp_apiserver.apis.serving import BoundAPIs
from kcp_apiserver.apis.types import API_BINDING, API_EXPORT, BIND_VERB, export_reference
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.registry.admission import CREATE, UPDATE, Attributes


def bind_request(provider: str, export: str) -> RequestInfo:
    """What `bind` on an export is, as an authorizer sees it."""
    return RequestInfo(provider, "", is_resource=True, verb=BIND_VERB, api_prefix="apis", group=API_EXPORT.group,
                       version=API_EXPORT.version, resource=API_EXPORT.plural, name=export)


class BindPermission:
    def __init__(self, authorizer: RBACAuthorizer) -> None:
        self.authorizer = authorizer

    async def validate(self, attrs: Attributes) -> None:
        if (attrs.resource.group_resource != API_BINDING.group_resource or attrs.operation != CREATE
                or attrs.obj is None):
            return
        provider, export = export_reference(attrs.obj, attrs.cluster)
        if not export or self.authorizer.allows(attrs.ctx.user, bind_request(provider, export)):
            return  # a missing export name is for validation to report
        name = attrs.name or get_str(get(attrs.obj, "metadata"), "name")
        raise st.APIError(
            403, "Forbidden",
            f'{API_BINDING.group_resource} "{name}" is forbidden: User "{attrs.ctx.user.name}" cannot bind '
            f'APIExport "{export}" of workspace "{provider}": binding it needs verb "{BIND_VERB}" on '
            f'{API_EXPORT.group_resource} "{export}" there',
            {"name": name, "group": API_BINDING.group, "kind": API_BINDING.plural})


class BoundCRDs:
    def __init__(self, crd_prefix: str, bound: BoundAPIs) -> None:
        self.crd_prefix = crd_prefix
        self.bound = bound

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource.prefix != self.crd_prefix or attrs.operation not in (CREATE, UPDATE):
            return
        spec = get(attrs.obj, "spec")
        group, plural = get_str(spec, "group"), get_str(get(spec, "names"), "plural")
        binding = self.bound.claimed_by(attrs.cluster, group, plural)
        if binding is None:
            return
        name = attrs.name or get_str(get(attrs.obj, "metadata"), "name")
        raise st.conflict("customresourcedefinitions", name, "apiextensions.k8s.io",
                          f'{plural}.{group} is bound in this workspace by APIBinding "{binding}"; '
                          "delete the binding before defining it here")


class TerminatingBindings:
    def __init__(self, bound: BoundAPIs) -> None:
        self.bound = bound

    async def validate(self, attrs: Attributes) -> None:
        if attrs.operation != CREATE or not attrs.resource.identity:
            return
        binding = self.bound.deleting(attrs.cluster, attrs.resource.group, attrs.resource.plural)
        if binding is not None:
            raise st.APIError(405, "MethodNotAllowed",
                              f'create not allowed while APIBinding "{binding}" is being deleted')
