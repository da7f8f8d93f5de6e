"""No escalation through RBAC objects, as kube's RBAC storage refuses it.

A Role or ClusterRole may grant only what its writer holds (in that namespace, or cluster-wide for a
ClusterRole) unless the writer may `escalate` it; a binding may point only at a role whose rules the
writer holds unless the writer may `bind` that role. `system:masters` is exempt. A ClusterRole with an
aggregationRule needs cluster-admin's rights (or `escalate`).
"""

from __future__ import annotations

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import SYSTEM_MASTERS, RequestInfo, UserInfo
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.policy import Binding, binding_of
from kcp_apiserver.rbac.rules import ALL, Rule, compile_rules, go_quote, uncovered
from kcp_apiserver.registry.admission import DELETE, UPDATE, Attributes
from kcp_apiserver.registry.builtin.rbac import GROUP

FULL_AUTHORITY = (Rule(frozenset({ALL}), frozenset({ALL}), frozenset({ALL})),
                  Rule(frozenset({ALL}), urls=frozenset({ALL})))
ROLES = {"Role": "roles", "ClusterRole": "clusterroles"}
BINDINGS = {"RoleBinding", "ClusterRoleBinding"}


def forbidden(attrs: Attributes, reason: str) -> st.APIError:
    res = attrs.resource
    return st.APIError(403, "Forbidden", f'{res.group_resource} "{attrs.name}" is forbidden: {reason}',
                       {"name": attrs.name, "group": res.group, "kind": res.plural})


def not_held(user: UserInfo, missing: list[Rule]) -> str:
    groups = "[" + " ".join(go_quote(g) for g in user.groups) + "]"
    return (f"user {go_quote(user.name)} (groups={groups}) is attempting to grant RBAC permissions not currently "
            "held:\n" + "\n".join(rule.compact() for rule in missing))


class EscalationCheck:
    """A validating admission plugin over the four RBAC kinds."""

    def __init__(self, authorizer: RBACAuthorizer) -> None:
        self.authorizer = authorizer
        self.index = authorizer.index

    def _may(self, user: UserInfo, cluster: str, verb: str, kind: str, namespace: str, name: str) -> bool:
        """Whether RBAC grants `verb` (escalate, bind) on that role, by name, in the namespace written to
        (so a RoleBinding's writer may be allowed to bind a ClusterRole in one namespace only)."""
        return self.authorizer.allows(user, RequestInfo(cluster, "", True, verb, "apis", GROUP, "v1", namespace,
                                                        ROLES[kind], name))

    async def validate(self, attrs: Attributes) -> None:
        res, obj, user = attrs.resource, attrs.obj, attrs.ctx.user
        if res.group != GROUP or attrs.operation == DELETE or obj is None or attrs.subresource:
            return
        if SYSTEM_MASTERS in user.groups:
            return
        if res.kind in ROLES:
            self._check_role(attrs, user)
        elif res.kind in BINDINGS:
            self._check_binding(attrs, user)

    def _check_role(self, attrs: Attributes, user: UserInfo) -> None:
        obj, old = attrs.obj or {}, attrs.old or {}
        if (attrs.operation == UPDATE and obj.get("rules") == old.get("rules")
                and obj.get("aggregationRule") == old.get("aggregationRule")):
            return
        if self._may(user, attrs.cluster, "escalate", attrs.resource.kind, attrs.namespace, attrs.name):
            return
        held = self.index.rules_for(attrs.cluster, user, attrs.namespace)
        if obj.get("aggregationRule") and uncovered(held, FULL_AUTHORITY):
            raise forbidden(attrs, "must have cluster-admin privileges to use the aggregationRule")
        missing = uncovered(held, compile_rules(obj.get("rules")))
        if missing:
            raise forbidden(attrs, not_held(user, missing))

    def _check_binding(self, attrs: Attributes, user: UserInfo) -> None:
        obj, old = attrs.obj or {}, attrs.old or {}
        if attrs.operation == UPDATE and obj.get("roleRef") == old.get("roleRef"):
            return
        binding: Binding = binding_of({**obj, "metadata": {**obj.get("metadata", {}), "name": attrs.name,
                                                           "namespace": attrs.namespace}})
        if binding.role_kind not in ROLES:
            return
        if self._may(user, attrs.cluster, "bind", binding.role_kind, attrs.namespace, binding.role_name):
            return
        missing = uncovered(self.index.rules_for(attrs.cluster, user, attrs.namespace),
                            self.index.role_rules(attrs.cluster, binding))
        if missing:
            raise forbidden(attrs, not_held(user, missing))
