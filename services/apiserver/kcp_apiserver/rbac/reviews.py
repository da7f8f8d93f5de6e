"""The review APIs, answered from the authorizer and never stored (kube's are create-only too).

authorization.k8s.io/v1 SelfSubjectAccessReview (`kubectl auth can-i`), SelfSubjectRulesReview
(`kubectl auth can-i --list`), SubjectAccessReview (may user U do this here), and
authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`). Each is answered in the
logical cluster the request was sent to, for the request's (possibly impersonated) user.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import RequestContext, RequestInfo, UserInfo
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.rules import ALL, go_quote

Obj = dict[str, Any]
Review = Callable[[RequestContext, Obj], Obj]  # the posted object -> the object answered (with status)

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"


def _invalid(kind: str, message: str) -> st.APIError:
    return st.APIError(422, "Invalid", f'{kind}.{AUTHORIZATION} "" is invalid: {message}', {"group": AUTHORIZATION,
                                                                                           "kind": kind})


def request_of(cluster: str, spec: Mapping[str, Any], kind: str) -> RequestInfo:
    """kube's authorizer attributes of a review's spec."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if bool(resource) == bool(non_resource):
        raise _invalid(kind, "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                             "nonResourceAttributes or resourceAttributes must be specified")
    if isinstance(non_resource, Mapping):
        return RequestInfo(cluster, str(non_resource.get("path") or ""), False, str(non_resource.get("verb") or ""))
    a: Mapping[str, Any] = resource if isinstance(resource, Mapping) else {}
    group = str(a.get("group") or "")
    return RequestInfo(cluster, "", True, str(a.get("verb") or ""), "apis" if group else "api", group,
                       str(a.get("version") or ""), str(a.get("namespace") or ""), str(a.get("resource") or ""),
                       str(a.get("name") or ""), str(a.get("subresource") or ""))


def _extra(extra: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(extra, Mapping):
        return ()
    return tuple((str(k), tuple(str(v) for v in values or ())) for k, values in sorted(extra.items()))


class Reviews:
    """The four review kinds' answers; `by_resource` maps (group, plural) to each."""

    def __init__(self, authorizer: RBACAuthorizer) -> None:
        self.authorizer = authorizer

    @property
    def by_resource(self) -> dict[tuple[str, str], Review]:
        return {(AUTHORIZATION, "selfsubjectaccessreviews"): self.self_subject_access,
                (AUTHORIZATION, "subjectaccessreviews"): self.subject_access,
                (AUTHORIZATION, "localsubjectaccessreviews"): self.local_subject_access,
                (AUTHORIZATION, "selfsubjectrulesreviews"): self.self_subject_rules,
                (AUTHENTICATION, "selfsubjectreviews"): self.self_subject}

    def _access(self, ctx: RequestContext, obj: Obj, user: UserInfo, kind: str) -> Obj:
        info = request_of(ctx.cluster, obj.get("spec") or {}, kind)
        decision = self.authorizer.decide(user, info)
        status: Obj = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return {**obj, "metadata": _meta(obj), "status": status}

    def self_subject_access(self, ctx: RequestContext, obj: Obj) -> Obj:
        return self._access(ctx, obj, ctx.user, "SelfSubjectAccessReview")

    def subject_access(self, ctx: RequestContext, obj: Obj) -> Obj:
        spec = obj.get("spec") or {}
        if not spec.get("user") and not spec.get("groups"):
            raise _invalid("SubjectAccessReview", 'spec.user: Invalid value: "": at least one of user or group '
                                                  "must be specified")
        user = UserInfo(str(spec.get("user") or ""), uid=str(spec.get("uid") or ""),
                        groups=tuple(str(g) for g in spec.get("groups") or ()), extra=_extra(spec.get("extra")))
        return self._access(ctx, obj, user, "SubjectAccessReview")

    def local_subject_access(self, ctx: RequestContext, obj: Obj) -> Obj:
        """A SubjectAccessReview confined to the namespace it is posted in."""
        namespace = ctx.info.namespace
        attributes = (obj.get("spec") or {}).get("resourceAttributes")
        if isinstance(attributes, Mapping) and (attributes.get("namespace") or "") != namespace:
            raise st.bad_request(f"spec.resourceAttributes.namespace must match namespace: "
                                 f"{go_quote(str(attributes.get('namespace') or ''))} != {go_quote(namespace)}")
        return self.subject_access(ctx, obj)

    def self_subject_rules(self, ctx: RequestContext, obj: Obj) -> Obj:
        namespace = str((obj.get("spec") or {}).get("namespace") or "")
        user = ctx.user
        resource_rules: list[Obj] = []
        non_resource_rules: list[Obj] = []
        if not user.cluster or user.cluster == ctx.cluster:
            for rule in self.authorizer.index.rules_for(ctx.cluster, user, namespace):
                if rule.urls:
                    non_resource_rules.append({"verbs": sorted(rule.verbs), "nonResourceURLs": sorted(rule.urls)})
                if rule.resources or rule.groups:
                    resource_rules.append({k: v for k, v in rule.to_dict().items() if k != "nonResourceURLs"})
            if not resource_rules and "system:masters" in user.groups:  # no lookup for masters: all of it
                resource_rules = [{"verbs": [ALL], "apiGroups": [ALL], "resources": [ALL]}]
                non_resource_rules = [{"verbs": [ALL], "nonResourceURLs": [ALL]}]
        return {**obj, "metadata": _meta(obj), "status": {"resourceRules": resource_rules,
                                                          "nonResourceRules": non_resource_rules,
                                                          "incomplete": False}}

    def self_subject(self, ctx: RequestContext, obj: Obj) -> Obj:
        return {**obj, "metadata": _meta(obj), "status": {"userInfo": {"username": ctx.user.name, **ctx.user.as_dict()}}}


def _meta(obj: Obj) -> Obj:
    """kube answers with the posted metadata and a creationTimestamp of null."""
    meta = dict(obj.get("metadata") or {})
    meta["creationTimestamp"] = None
    return meta
