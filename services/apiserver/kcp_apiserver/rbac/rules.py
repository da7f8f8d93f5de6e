"""PolicyRules as kube's RBAC reads them: does a rule allow a request, does one set of rules cover another.

A rule is compiled once (frozensets) when its Role is observed; a check walks only the rules
of the subject's bindings, so its cost does not grow with the number of Roles in a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kcp_apiserver.apimachinery.request import RequestInfo

ALL = "*"


@dataclass(frozen=True, slots=True)
class Rule:
    verbs: frozenset[str]
    groups: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()
    urls: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, rule: Mapping[str, Any]) -> Rule:
        def strings(key: str) -> frozenset[str]:
            return frozenset(str(v) for v in rule.get(key) or () if isinstance(v, str))
        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"),
                   strings("nonResourceURLs"))

    def to_dict(self) -> dict[str, list[str]]:
        out = {"verbs": sorted(self.verbs)}
        for key, values in (("apiGroups", self.groups), ("resources", self.resources),
                            ("resourceNames", self.names), ("nonResourceURLs", self.urls)):
            if values or (key == "apiGroups" and self.resources):
                out[key] = sorted(values)
        return out

    def allows(self, info: RequestInfo) -> bool:
        """kube's RuleAllows: the request's verb, group, resource[/subresource] and name (or path)."""
        if ALL not in self.verbs and info.verb not in self.verbs:
            return False
        if not info.is_resource:
            return url_matches(self.urls, info.path)
        if ALL not in self.groups and info.group not in self.groups:
            return False
        if not resource_matches(self.resources, info.resource, info.subresource):
            return False
        return not self.names or info.name in self.names

    def compact(self) -> str:
        """kube's CompactString: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`."""
        fields = []
        for label, values in (("APIGroups", self.groups), ("Resources", self.resources),
                              ("ResourceNames", self.names), ("NonResourceURLs", self.urls), ("Verbs", self.verbs)):
            if values:
                fields.append(f"{label}:[{' '.join(go_quote(v) for v in sorted(values))}]")
        return "{" + ", ".join(fields) + "}"


def go_quote(text: str) -> str:
    """Go's %q for the strings RBAC holds (printable ASCII in practice)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def compile_rules(rules: Iterable[Mapping[str, Any]] | None) -> tuple[Rule, ...]:
    return tuple(Rule.from_dict(r) for r in rules or () if isinstance(r, Mapping))


def resource_matches(allowed: frozenset[str], resource: str, subresource: str) -> bool:
    """`*`, the exact `resource[/subresource]`, or `*/subresource` for a subresource."""
    if ALL in allowed:
        return True
    combined = f"{resource}/{subresource}" if subresource else resource
    if combined in allowed:
        return True
    return bool(subresource) and f"*/{subresource}" in allowed


def url_matches(allowed: Iterable[str], path: str) -> bool:
    """A non-resource URL rule: `*`, the exact path, or a prefix ending in `*`."""
    for url in allowed:
        if url == ALL or url == path or (url.endswith(ALL) and path.startswith(url[:-1])):
            return True
    return False


def allows(rules: Iterable[Rule], info: RequestInfo) -> bool:
    return any(rule.allows(info) for rule in rules)


# -- covers: the escalation check ------------------------------------------------------------------

def atomize(rule: Rule) -> list[Rule]:
    """Break a rule into one-verb, one-group, one-resource (one-name) rules, as kube's BreakdownRule."""
    out: list[Rule] = []
    for verb in sorted(rule.verbs):
        single = frozenset({verb})
        for group in sorted(rule.groups):
            for resource in sorted(rule.resources):
                if rule.names:
                    out += [Rule(single, frozenset({group}), frozenset({resource}), frozenset({name}))
                            for name in sorted(rule.names)]
                else:
                    out.append(Rule(single, frozenset({group}), frozenset({resource})))
        out += [Rule(single, urls=frozenset({url})) for url in sorted(rule.urls)]
    return out


def _covers_one(owner: Rule, wanted: Rule) -> bool:
    if ALL not in owner.verbs and not wanted.verbs <= owner.verbs:
        return False
    if wanted.urls:
        return all(url_matches(owner.urls, url) for url in wanted.urls)
    if ALL not in owner.groups and not wanted.groups <= owner.groups:
        return False
    if ALL not in owner.resources:
        for resource in wanted.resources:
            if resource in owner.resources:
                continue
            _, slash, sub = resource.partition("/")
            if not slash or f"*/{sub}" not in owner.resources:
                return False
    if owner.names:
        return bool(wanted.names) and wanted.names <= owner.names
    return True


def uncovered(owner: Sequence[Rule], wanted: Iterable[Rule]) -> list[Rule]:
    """The atomic parts of `wanted` no rule of `owner` covers (kube's Covers), sorted as kube prints them."""
    missing = {atom.compact(): atom for rule in wanted for atom in atomize(rule)
               if not any(_covers_one(o, atom) for o in owner)}
    return [missing[key] for key in sorted(missing)]
