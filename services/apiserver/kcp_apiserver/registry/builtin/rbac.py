"""The rbac.authorization.k8s.io group: Roles, ClusterRoles and their bindings."""

from __future__ import annotations

from collections.abc import Callable

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import render_value
from kcp_apiserver.registry.resource import Column, Obj, Resource
from kcp_apiserver.registry.strategy import FunctionStrategy
from kcp_apiserver.registry.tables import AGE, CREATED_AT, NAME

GROUP = "rbac.authorization.k8s.io"


def _role_ref(o: Obj) -> str:
    ref = o.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _subjects(kind: str) -> Callable[[Obj], str]:
    def cell(o: Obj) -> str:
        names = [s.get("name", "") if kind != "ServiceAccount" else f"{s.get('namespace', '')}/{s.get('name', '')}"
                 for s in (o.get("subjects") or []) if s.get("kind") == kind]
        return ", ".join(names)
    return cell


def _role_ref_unchanged(obj: Obj, old: Obj | None) -> list[Cause]:
    """kube: a binding's roleRef is immutable (delete and recreate it to point elsewhere)."""
    ref = obj.get("roleRef") or {}
    if old is None or ref == (old.get("roleRef") or {}):
        return []
    shown = (f'rbac.RoleRef{{APIGroup:"{ref.get("apiGroup", "")}", Kind:"{ref.get("kind", "")}", '
             f'Name:"{ref.get("name", "")}"}}')
    return [Cause("FieldValueInvalid", f"Invalid value: {shown}: cannot change roleRef", "roleRef")]


def _role_ref_valid(kinds: tuple[str, ...]) -> Callable[[Obj, Obj | None], list[Cause]]:
    """kube's ValidateRoleBinding: a RoleBinding refers to a Role or a ClusterRole, a ClusterRoleBinding to a
    ClusterRole (the escalation check could judge no other), and the reference never changes."""
    def validate(obj: Obj, old: Obj | None) -> list[Cause]:
        kind = (obj.get("roleRef") or {}).get("kind")
        causes = []
        if kind not in kinds:
            supported = ", ".join(f'"{k}"' for k in kinds)
            causes.append(Cause("FieldValueNotSupported",
                                f"Unsupported value: {render_value(kind)}: supported values: {supported}",
                                "roleRef.kind"))
        return causes + _role_ref_unchanged(obj, old)
    return validate


BINDING_STRATEGY = FunctionStrategy(validate=_role_ref_valid(("Role", "ClusterRole")))
CLUSTER_BINDING_STRATEGY = FunctionStrategy(validate=_role_ref_valid(("ClusterRole",)))

BINDING_COLUMNS = (
    NAME,
    Column("Role", "string", _role_ref, "RoleRef is the reference to the role."),
    AGE,
    Column("Users", "string", _subjects("User"), "Users in the binding.", priority=1),
    Column("Groups", "string", _subjects("Group"), "Groups in the binding.", priority=1),
    Column("ServiceAccounts", "string", _subjects("ServiceAccount"), "ServiceAccounts in the binding.", priority=1),
)

RESOURCES: tuple[Resource, ...] = (
    Resource(GROUP, "v1", "Role", "roles", "role", True,
             definition="io.k8s.api.rbac.v1.Role", name_is_path_segment=True, columns=(NAME, CREATED_AT)),
    Resource(GROUP, "v1", "RoleBinding", "rolebindings", "rolebinding", True,
             definition="io.k8s.api.rbac.v1.RoleBinding", name_is_path_segment=True, columns=BINDING_COLUMNS,
             strategy=BINDING_STRATEGY),
    Resource(GROUP, "v1", "ClusterRole", "clusterroles", "clusterrole", False,
             definition="io.k8s.api.rbac.v1.ClusterRole", name_is_path_segment=True, columns=(NAME, CREATED_AT)),
    Resource(GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", False,
             definition="io.k8s.api.rbac.v1.ClusterRoleBinding", name_is_path_segment=True,
             columns=BINDING_COLUMNS, strategy=CLUSTER_BINDING_STRATEGY),
)
