"""No escalation through RBAC objects, as kube's RBAC storage (policybased) refuses it.

- A Role or ClusterRole may grant only what its writer holds (in that namespace, or cluster-wide for a
  ClusterRole) unless the writer may `escalate` roles (by the request's name: a create names none). A
  ClusterRole with an aggregationRule (new or old) needs cluster-admin's rights.
- A binding may point only at a role the writer may `bind` (by the role's name, in the binding's
  namespace) or whose rules the writer holds. To know those rules the role must exist: binding a role that
  does not exist yet is kube's NotFound, else whoever later creates that role would grant it unawares.
- An update is judged like a create, unless it only touches what the garbage collector writes
  (ownerReferences, finalizers). `system:masters` is exempt.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.request import SYSTEM_MASTERS, RequestInfo, UserInfo
from kcp_apiserver.rbac.authorizer import RBACAuthorizer
from kcp_apiserver.rbac.rules import ALL, Rule, compile_rules, go_quote, uncovered
from kcp_apiserver.registry.admission import DELETE, UPDATE, Attributes
from kcp_apiserver.registry.builtin.rbac import GROUP, RESOURCES
from kcp_apiserver.registry.resource import Obj, Resource

# (resource, cluster, namespace, name) -> the stored object; raises kube's NotFound (Registry.get)
ObjectGetter = Callable[[Resource, str, str, str], Awaitable[Obj]]

FULL_AUTHORITY = (Rule(frozenset({ALL}), frozenset({ALL}), frozenset({ALL})),
                  Rule(frozenset({ALL}), urls=frozenset({ALL})))
ROLE_RESOURCES = {res.kind: res for res in RESOURCES if res.kind in ("Role", "ClusterRole")}
BINDINGS = {"RoleBinding", "ClusterRoleBinding"}
# what kube's IsOnlyMutatingGCFields lets through, plus the bookkeeping the server itself writes on any update
GC_ONLY = frozenset({"ownerReferences", "finalizers", "managedFields", "resourceVersion"})


def forbidden(attrs: Attributes, reason: str) -> st.APIError:
    res = attrs.resource
    return st.APIError(403, "Forbidden", f'{res.group_resource} "{attrs.name}" is forbidden: {reason}',
                       {"name": attrs.name, "group": res.group, "kind": res.plural})


def not_held(user: UserInfo, missing: list[Rule]) -> str:
    groups = "[" + " ".join(go_quote(g) for g in user.groups) + "]"
    return (f"user {go_quote(user.name)} (groups={groups}) is attempting to grant RBAC permissions not currently "
            "held:\n" + "\n".join(rule.compact() for rule in missing))


def only_gc_fields_change(obj: Obj, old: Obj) -> bool:
    """kube's IsOnlyMutatingGCFields: an update the garbage collector (or an orphaning delete) makes."""
    def rest(o: Obj) -> Obj:
        return {**o, "metadata": {k: v for k, v in (o.get("metadata") or {}).items() if k not in GC_ONLY}}
    return rest(obj) == rest(old)


def has_aggregation_rule(obj: Obj | None) -> bool:
    rule = (obj or {}).get("aggregationRule")
    return isinstance(rule, dict) and bool(rule.get("clusterRoleSelectors"))


class EscalationCheck:
    """A validating admission plugin over the four RBAC kinds.

    `get` reads a binding's role where kube's rule resolver does, from storage: the authorizer's index
    follows a watch and may not hold a role created a moment ago.
    """

    def __init__(self, authorizer: RBACAuthorizer, get: ObjectGetter) -> None:
        self.authorizer = authorizer
        self.index = authorizer.index
        self.get = get

    def _may(self, user: UserInfo, cluster: str, verb: str, kind: str, namespace: str, name: str) -> bool:
        """Whether RBAC grants `verb` (escalate, bind) on that role, by name, in the namespace written to
        (so a RoleBinding's writer may be allowed to bind a ClusterRole in one namespace only)."""
        return self.authorizer.allows(user, RequestInfo(cluster, "", True, verb, "apis", GROUP, "v1", namespace,
                                                        ROLE_RESOURCES[kind].plural, name))

    async def validate(self, attrs: Attributes) -> None:
        res, obj, user = attrs.resource, attrs.obj, attrs.ctx.user
        if res.group != GROUP or attrs.operation == DELETE or obj is None or attrs.subresource:
            return
        if SYSTEM_MASTERS in user.groups:
            return
        if res.kind in ROLE_RESOURCES:
            self._check_role(attrs, user)
        elif res.kind in BINDINGS:
            await self._check_binding(attrs, user)

    def _check_role(self, attrs: Attributes, user: UserInfo) -> None:
        obj, old = attrs.obj or {}, attrs.old
        if self._may(user, attrs.cluster, "escalate", attrs.resource.kind, attrs.namespace, attrs.ctx.info.name):
            return
        if attrs.operation == UPDATE and old is not None and only_gc_fields_change(obj, old):
            return
        held = self.index.rules_for(attrs.cluster, user, attrs.namespace)
        missing = uncovered(held, compile_rules(obj.get("rules")))
        if missing:
            raise forbidden(attrs, not_held(user, missing))
        if (has_aggregation_rule(obj) or has_aggregation_rule(old)) and uncovered(held, FULL_AUTHORITY):
            raise forbidden(attrs, "must have cluster-admin privileges to use the aggregationRule")

    async def _check_binding(self, attrs: Attributes, user: UserInfo) -> None:
        obj, old = attrs.obj or {}, attrs.old
        if attrs.operation == UPDATE and old is not None and only_gc_fields_change(obj, old):
            return
        ref = obj.get("roleRef") or {}
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        role_res = ROLE_RESOURCES.get(kind)
        if role_res is None:
            raise st.internal(f"unsupported role reference kind: {go_quote(kind)}")
        if self._may(user, attrs.cluster, "bind", kind, attrs.namespace, name):
            return
        role = await self.get(role_res, attrs.cluster, attrs.namespace if role_res.namespaced else "", name)
        missing = uncovered(self.index.rules_for(attrs.cluster, user, attrs.namespace),
                            compile_rules(role.get("rules")))
        if missing:
            raise forbidden(attrs, not_held(user, missing))
