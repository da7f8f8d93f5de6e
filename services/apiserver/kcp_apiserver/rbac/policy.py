"""Every logical cluster's RBAC, in memory: roles by name, bindings by subject.

Handlers on the four RBAC informers keep it current. A check looks up the bindings of the
user's name and of each of its groups, in one cluster, then the rules of the roles they name: its
cost is the rules of that subject, whatever the number of Roles in the cluster. kube's default
ClusterRoles and ClusterRoleBindings (defaults.py) are one shared set, present in every cluster that
does not store an object of the same name.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kcp_apiserver.apimachinery.request import RequestInfo, UserInfo
from kcp_apiserver.apimachinery.selectors import LabelSelector
from kcp_apiserver.apimachinery.status import APIError
from kcp_apiserver.rbac import defaults
from kcp_apiserver.rbac.rules import Rule, compile_rules, go_quote
from kcpcommon import keys
from kcpcommon.keys import CLUSTER_ANNOTATION

Obj = dict[str, Any]
SubjectKey = tuple[str, str]  # ("user", name) or ("group", name)
BindingKey = tuple[str, str]  # (namespace, name); "" namespace: a ClusterRoleBinding
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class Binding:
    namespace: str  # "": a ClusterRoleBinding, granting in every namespace and at the cluster scope
    name: str
    role_kind: str  # Role or ClusterRole
    role_name: str
    subjects: tuple[SubjectKey, ...]
    # kube's reason for a grant through this binding, per subject: `RBAC: allowed by RoleBinding "b/ns" of Role
    # "r" to User "bob"` (made once here: a check only looks it up)
    reasons: Mapping[SubjectKey, str] = field(default_factory=dict, compare=False)

    def reason(self, subject: SubjectKey) -> str:
        return self.reasons.get(subject, "")


@dataclass(frozen=True, slots=True)
class ClusterRoleEntry:
    rules: tuple[Rule, ...]
    labels: Mapping[str, str]
    selectors: tuple[LabelSelector, ...] | None  # aggregationRule.clusterRoleSelectors


@dataclass
class ClusterPolicy:
    """One logical cluster's own RBAC objects (the shared defaults are not copied in)."""

    roles: dict[BindingKey, tuple[Rule, ...]] = field(default_factory=dict)
    cluster_roles: dict[str, ClusterRoleEntry] = field(default_factory=dict)
    bindings: dict[BindingKey, Binding] = field(default_factory=dict)
    by_subject: dict[SubjectKey, dict[BindingKey, Binding]] = field(default_factory=dict)
    aggregated: dict[str, tuple[Rule, ...]] = field(default_factory=dict)  # cache, cleared on ClusterRole change

    def put_binding(self, binding: Binding) -> None:
        self.drop_binding((binding.namespace, binding.name))
        key = (binding.namespace, binding.name)
        self.bindings[key] = binding
        for subject in binding.subjects:
            self.by_subject.setdefault(subject, {})[key] = binding

    def drop_binding(self, key: BindingKey) -> None:
        old = self.bindings.pop(key, None)
        if old is None:
            return
        for subject in old.subjects:
            held = self.by_subject.get(subject)
            if held is not None:
                held.pop(key, None)
                if not held:
                    del self.by_subject[subject]

    @property
    def empty(self) -> bool:
        return not (self.roles or self.cluster_roles or self.bindings)


def subject_keys(user: UserInfo) -> Iterator[SubjectKey]:
    yield ("user", user.name)
    for group in user.groups:
        yield ("group", group)


def _subjects(obj: Obj, namespace: str) -> tuple[tuple[SubjectKey, str], ...]:
    """Each subject's index key (a service account is the user it authenticates as) and its description."""
    keys: list[tuple[SubjectKey, str]] = []
    for subject in obj.get("subjects") or ():
        if not isinstance(subject, Mapping):
            continue
        kind, name = subject.get("kind"), str(subject.get("name") or "")
        if kind == "User":
            keys.append((("user", name), f"User {go_quote(name)}"))
        elif kind == "Group":
            keys.append((("group", name), f"Group {go_quote(name)}"))
        elif kind == "ServiceAccount":
            sa_namespace = subject.get("namespace") or namespace
            keys.append((("user", f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"),
                         f"ServiceAccount {go_quote(name + '/' + sa_namespace)}"))
    return tuple(keys)


def binding_of(obj: Obj) -> Binding:
    meta = obj["metadata"]
    namespace = meta.get("namespace") or ""
    ref = obj.get("roleRef") or {}
    subjects = _subjects(obj, namespace)
    name, role_kind, role_name = meta["name"], str(ref.get("kind") or ""), str(ref.get("name") or "")
    where = f"RoleBinding {go_quote(name + '/' + namespace)}" if namespace else f"ClusterRoleBinding {go_quote(name)}"
    reasons: dict[SubjectKey, str] = {}
    for key, description in reversed(subjects):  # the first subject naming a user describes it
        reasons[key] = f"RBAC: allowed by {where} of {role_kind} {go_quote(role_name)} to {description}"
    return Binding(namespace, name, role_kind, role_name, tuple(key for key, _ in subjects), reasons)


def _selector(selector: Mapping[str, Any]) -> LabelSelector:
    try:
        return LabelSelector.from_dict(selector)
    except APIError:  # a selector kube would have refused selects nothing, rather than stop the follower
        return LabelSelector(nothing=True)


def cluster_role_of(obj: Obj) -> ClusterRoleEntry:
    rule = obj.get("aggregationRule")
    selectors = None
    if isinstance(rule, Mapping):
        selectors = tuple(_selector(s) for s in rule.get("clusterRoleSelectors") or () if isinstance(s, Mapping))
    return ClusterRoleEntry(compile_rules(obj.get("rules")), dict(obj["metadata"].get("labels") or {}), selectors)


def cluster_of(obj: Obj) -> str:
    return keys.cluster_of(obj) or ""


class PolicyIndex:
    """RBAC of every logical cluster, plus the shared defaults; fed by `observe_*`, read by checks."""

    def __init__(self) -> None:
        self.clusters: dict[str, ClusterPolicy] = {}
        self.on_cluster_roles_changed: Callable[[str], None] | None = None  # the aggregation controller
        self.defaults = ClusterPolicy()
        for role in defaults.CLUSTER_ROLES:
            self.defaults.cluster_roles[role["metadata"]["name"]] = cluster_role_of(role)
        for binding in defaults.CLUSTER_ROLE_BINDINGS:
            self.defaults.put_binding(binding_of(binding))
        # encoded once: decoding is a fresh copy 6x faster than copy.deepcopy, and a list makes ~70 of them
        self.default_objects = {("ClusterRole", o["metadata"]["name"]): orjson.dumps(o)
                                for o in defaults.CLUSTER_ROLES}
        self.default_objects.update({("ClusterRoleBinding", o["metadata"]["name"]): orjson.dumps(o)
                                     for o in defaults.CLUSTER_ROLE_BINDINGS})

    # -- feeding ------------------------------------------------------------------------------

    def _policy(self, cluster: str) -> ClusterPolicy:
        policy = self.clusters.get(cluster)
        if policy is None:
            policy = self.clusters[cluster] = ClusterPolicy()
        return policy

    def _settle(self, cluster: str) -> None:
        policy = self.clusters.get(cluster)
        if policy is not None and policy.empty:
            del self.clusters[cluster]

    def observe_role(self, obj: Obj, deleted: bool) -> None:
        meta, cluster = obj["metadata"], cluster_of(obj)
        key = (meta.get("namespace") or "", meta["name"])
        if deleted:
            self._policy(cluster).roles.pop(key, None)
            self._settle(cluster)
        else:
            self._policy(cluster).roles[key] = compile_rules(obj.get("rules"))

    def observe_cluster_role(self, obj: Obj, deleted: bool) -> None:
        cluster, name = cluster_of(obj), obj["metadata"]["name"]
        policy = self._policy(cluster)
        policy.aggregated.clear()
        if deleted:
            policy.cluster_roles.pop(name, None)
            self._settle(cluster)
        else:
            policy.cluster_roles[name] = cluster_role_of(obj)
        if self.on_cluster_roles_changed is not None:
            self.on_cluster_roles_changed(cluster)

    def observe_binding(self, obj: Obj, deleted: bool) -> None:
        cluster = cluster_of(obj)
        if deleted:
            meta = obj["metadata"]
            self._policy(cluster).drop_binding((meta.get("namespace") or "", meta["name"]))
            self._settle(cluster)
        else:
            self._policy(cluster).put_binding(binding_of(obj))

    # -- reading ------------------------------------------------------------------------------

    def cluster_role(self, cluster: str, name: str) -> ClusterRoleEntry | None:
        policy = self.clusters.get(cluster)
        found = policy.cluster_roles.get(name) if policy is not None else None
        return found if found is not None else self.defaults.cluster_roles.get(name)

    def visible_cluster_roles(self, cluster: str) -> dict[str, ClusterRoleEntry]:
        policy = self.clusters.get(cluster)
        if policy is None or not policy.cluster_roles:
            return self.defaults.cluster_roles
        return {**self.defaults.cluster_roles, **policy.cluster_roles}

    def cluster_role_rules(self, cluster: str, name: str) -> tuple[Rule, ...]:
        """A ClusterRole's rules; an aggregating one's are those of the ClusterRoles it selects."""
        entry = self.cluster_role(cluster, name)
        if entry is None:
            return ()
        if entry.selectors is None:
            return entry.rules
        policy = self.clusters.get(cluster)
        cache = policy.aggregated if policy is not None and policy.cluster_roles else self.defaults.aggregated
        found = cache.get(name)
        if found is None:
            found = cache[name] = self._aggregate(self.visible_cluster_roles(cluster), name, frozenset())
        return found

    def _aggregate(self, roles: Mapping[str, ClusterRoleEntry], name: str, seen: frozenset[str]) -> tuple[Rule, ...]:
        entry = roles[name]
        seen = seen | {name}
        out: dict[Rule, None] = {}
        for other_name in sorted(roles):
            other = roles[other_name]
            if other_name in seen or not any(s.matches(other.labels) for s in entry.selectors or ()):
                continue
            rules = other.rules if other.selectors is None else self._aggregate(roles, other_name, seen)
            out.update(dict.fromkeys(rules))
        return tuple(out)

    def role_rules(self, cluster: str, binding: Binding) -> tuple[Rule, ...]:
        if binding.role_kind == "Role":
            policy = self.clusters.get(cluster)
            return policy.roles.get((binding.namespace, binding.role_name), ()) if policy is not None else ()
        if binding.role_kind == "ClusterRole":
            return self.cluster_role_rules(cluster, binding.role_name)
        return ()

    def bindings_for(self, cluster: str, user: UserInfo, namespace: str | None, *,
                     cluster_wide_only: bool = False) -> Iterator[tuple[SubjectKey, Binding]]:
        """The bindings naming the user or one of its groups (with the subject that matched) that grant in
        `namespace` (None: any)."""
        policy = self.clusters.get(cluster)
        own = policy.bindings if policy is not None else {}
        for subject in subject_keys(user):
            if policy is not None:
                for binding in policy.by_subject.get(subject, {}).values():
                    if binding.namespace and (cluster_wide_only or (namespace is not None
                                                                   and binding.namespace != namespace)):
                        continue
                    yield subject, binding
            for binding in self.defaults.by_subject.get(subject, {}).values():
                if ("", binding.name) not in own:
                    yield subject, binding

    def grant(self, cluster: str, user: UserInfo, info: RequestInfo, *, cluster_wide_only: bool = False
              ) -> str | None:
        """Why the request is allowed (kube's reason), or None when no binding allows it."""
        for subject, binding in self.bindings_for(cluster, user, info.namespace, cluster_wide_only=cluster_wide_only):
            for rule in self.role_rules(cluster, binding):
                if rule.allows(info):
                    return binding.reason(subject)
        return None

    def rules_for(self, cluster: str, user: UserInfo, namespace: str) -> list[Rule]:
        """Every rule the user holds in a namespace ("" = at the cluster scope only), for reviews and escalation."""
        out: dict[Rule, None] = {}
        for _, binding in self.bindings_for(cluster, user, namespace):
            out.update(dict.fromkeys(self.role_rules(cluster, binding)))
        return list(out)

    # -- the shared defaults, served read-through -------------------------------------------------

    def default_object(self, kind: str, cluster: str, name: str, *, created: str) -> Obj | None:
        """The shared default `name` as `cluster` sees it: its own uid, the cluster's creation time (`created`),
        an aggregating role with that cluster's rules."""
        found = self.default_objects.get((kind, name))
        if found is None:
            return None
        obj = orjson.loads(found)
        meta = obj["metadata"]
        meta["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kcp:{cluster}:{kind}:{name}"))
        meta["creationTimestamp"] = created
        meta["annotations"][CLUSTER_ANNOTATION] = cluster
        if kind == "ClusterRole" and "aggregationRule" in obj:
            obj["rules"] = [rule.to_dict() for rule in self.cluster_role_rules(cluster, name)]
        return obj

    def default_names(self, kind: str) -> Iterable[str]:
        return [name for k, name in self.default_objects if k == kind]
