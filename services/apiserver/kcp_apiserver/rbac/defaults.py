"""kube's bootstrap ClusterRoles and ClusterRoleBindings, shared by every logical cluster.

They are held once, in memory, never written per logical cluster: the policy index treats them as
present in every cluster unless that cluster stores an object of the same name, and the registry
serves them read-through (see follow.SharedDefaults). This module holds the user-facing roles (the
aggregated admin/edit/view and what every identity gets); systemroles.py the control plane's
components and controllerroles.py kube-controller-manager's controllers, as kube's bootstrap policy
defines them.
"""

from __future__ import annotations

from kcp_apiserver.rbac import controllerroles, systemroles
from kcp_apiserver.rbac.bootstrap import (
    AGGREGATE_TO,
    GROUP,
    READ,
    READ_WRITE,
    WRITE,
    Obj,
    cluster_role,
    cluster_role_binding,
    group,
    rule,
    urls,
)

AUTHENTICATED, UNAUTHENTICATED = "system:authenticated", "system:unauthenticated"
DISCOVERY_URLS = "/api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,/readyz,/version,/version/"
PUBLIC_URLS = "/healthz,/livez,/readyz,/version,/version/"
ISSUER_URLS = "/.well-known/openid-configuration,/.well-known/openid-configuration/,/openid/v1/jwks,/openid/v1/jwks/"
MONITORING_URLS = "/healthz,/healthz/*,/livez,/livez/*,/metrics,/metrics/slis,/readyz,/readyz/*"

_VIEW = [
    rule(READ, "", "configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,pods,"
                   "replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,services/status"),
    rule(READ, "", "bindings,events,limitranges,namespaces/status,pods/log,pods/status,"
                   "replicationcontrollers/status,resourcequotas,resourcequotas/status"),
    rule(READ, "", "namespaces"),
    rule(READ, "discovery.k8s.io", "endpointslices"),
    rule(READ, "apps", "controllerrevisions,daemonsets,daemonsets/status,deployments,deployments/scale,"
                       "deployments/status,replicasets,replicasets/scale,replicasets/status,statefulsets,"
                       "statefulsets/scale,statefulsets/status"),
    rule(READ, "autoscaling", "horizontalpodautoscalers,horizontalpodautoscalers/status"),
    rule(READ, "batch", "cronjobs,cronjobs/status,jobs,jobs/status"),
    rule(READ, "extensions", "daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,"
                             "ingresses,ingresses/status,networkpolicies,replicasets,replicasets/scale,"
                             "replicasets/status,replicationcontrollers/scale"),
    rule(READ, "policy", "poddisruptionbudgets,poddisruptionbudgets/status"),
    rule(READ, "networking.k8s.io", "ingresses,ingresses/status,networkpolicies"),
]

_EDIT = [
    rule(READ, "", "pods/attach,pods/exec,pods/portforward,pods/proxy,secrets,services/proxy"),
    rule("impersonate", "", "serviceaccounts"),
    rule(WRITE, "", "pods,pods/attach,pods/exec,pods/portforward,pods/proxy"),
    rule("create", "", "pods/eviction"),
    rule(WRITE, "", "configmaps,events,persistentvolumeclaims,replicationcontrollers,replicationcontrollers/scale,"
                    "secrets,serviceaccounts,services,services/proxy"),
    rule("create", "", "serviceaccounts/token"),
    rule(WRITE, "apps", "daemonsets,deployments,deployments/rollback,deployments/scale,replicasets,"
                        "replicasets/scale,statefulsets,statefulsets/scale"),
    rule(WRITE, "autoscaling", "horizontalpodautoscalers"),
    rule(WRITE, "batch", "cronjobs,jobs"),
    rule(WRITE, "extensions", "daemonsets,deployments,deployments/rollback,deployments/scale,ingresses,"
                              "networkpolicies,replicasets,replicasets/scale,replicationcontrollers/scale"),
    rule(WRITE, "policy", "poddisruptionbudgets"),
    rule(WRITE, "networking.k8s.io", "ingresses,networkpolicies"),
]

_ADMIN = [
    rule("create", "authorization.k8s.io", "localsubjectaccessreviews"),
    rule(READ_WRITE, GROUP, "rolebindings,roles"),
]


def _approver(signer: str) -> Obj:
    return cluster_role(f"system:certificates.k8s.io:{signer}-approver",
                        [rule("approve", "certificates.k8s.io", "signers", f"kubernetes.io/{signer}")])


def _csr_creator(subresource: str) -> Obj:
    return cluster_role(f"system:certificates.k8s.io:certificatesigningrequests:{subresource}",
                        [rule("create", "certificates.k8s.io", f"certificatesigningrequests/{subresource}")])


USER_ROLES: tuple[Obj, ...] = (
    cluster_role("cluster-admin", [rule("*", "*", "*"), urls("*", "*")]),
    cluster_role("admin", [], aggregate="admin"),
    cluster_role("edit", [], aggregate="edit", labels={AGGREGATE_TO + "admin": "true"}),
    cluster_role("view", [], aggregate="view", labels={AGGREGATE_TO + "edit": "true"}),
    cluster_role("system:aggregate-to-admin", _ADMIN, labels={AGGREGATE_TO + "admin": "true"}),
    cluster_role("system:aggregate-to-edit", _EDIT, labels={AGGREGATE_TO + "edit": "true"}),
    cluster_role("system:aggregate-to-view", _VIEW, labels={AGGREGATE_TO + "view": "true"}),
    cluster_role("system:auth-delegator", [rule("create", "authentication.k8s.io", "tokenreviews"),
                                           rule("create", "authorization.k8s.io", "subjectaccessreviews")]),
    cluster_role("system:basic-user", [
        rule("create", "authorization.k8s.io", "selfsubjectaccessreviews,selfsubjectrulesreviews"),
        rule("create", "authentication.k8s.io", "selfsubjectreviews")]),
    _csr_creator("nodeclient"),
    _csr_creator("selfnodeclient"),
    _approver("kube-apiserver-client"),
    _approver("kube-apiserver-client-kubelet"),
    _approver("kubelet-serving"),
    _approver("legacy-unknown"),
    cluster_role("system:discovery", [urls("get", DISCOVERY_URLS)]),
    cluster_role("system:monitoring", [urls("get", MONITORING_URLS)]),
    cluster_role("system:public-info-viewer", [urls("get", PUBLIC_URLS)]),
    cluster_role("system:service-account-issuer-discovery", [urls("get", ISSUER_URLS)]),
)

USER_ROLE_BINDINGS: tuple[Obj, ...] = (
    cluster_role_binding("cluster-admin", [group("system:masters")]),
    cluster_role_binding("system:basic-user", [group(AUTHENTICATED)]),
    cluster_role_binding("system:discovery", [group(AUTHENTICATED)]),
    cluster_role_binding("system:monitoring", [group("system:monitoring")]),
    cluster_role_binding("system:public-info-viewer", [group(AUTHENTICATED), group(UNAUTHENTICATED)]),
    cluster_role_binding("system:service-account-issuer-discovery", [group("system:serviceaccounts")]),
)

CLUSTER_ROLES: tuple[Obj, ...] = (*USER_ROLES, *systemroles.ROLES, *controllerroles.ROLES)
CLUSTER_ROLE_BINDINGS: tuple[Obj, ...] = (*USER_ROLE_BINDINGS, *systemroles.BINDINGS, *controllerroles.BINDINGS)
