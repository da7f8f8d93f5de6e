"""The review APIs: create-only, answered by the authorizer, never stored (see rbac/reviews.py)."""

from __future__ import annotations

from kcp_apiserver.registry.resource import Resource

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"
CREATE_ONLY = ("create",)

RESOURCES: tuple[Resource, ...] = (
    Resource(AUTHORIZATION, "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", "selfsubjectaccessreview",
             False, definition="io.k8s.api.authorization.v1.SelfSubjectAccessReview", verbs=CREATE_ONLY),
    Resource(AUTHORIZATION, "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", "selfsubjectrulesreview",
             False, definition="io.k8s.api.authorization.v1.SelfSubjectRulesReview", verbs=CREATE_ONLY),
    Resource(AUTHORIZATION, "v1", "SubjectAccessReview", "subjectaccessreviews", "subjectaccessreview", False,
             definition="io.k8s.api.authorization.v1.SubjectAccessReview", verbs=CREATE_ONLY),
    Resource(AUTHORIZATION, "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", "localsubjectaccessreview",
             True, definition="io.k8s.api.authorization.v1.LocalSubjectAccessReview", verbs=CREATE_ONLY),
    Resource(AUTHENTICATION, "v1", "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview", False,
             definition="io.k8s.api.authentication.v1.SelfSubjectReview", verbs=CREATE_ONLY),
    Resource(AUTHENTICATION, "v1", "TokenReview", "tokenreviews", "tokenreview", False,
             definition="io.k8s.api.authentication.v1.TokenReview", verbs=CREATE_ONLY),
)
