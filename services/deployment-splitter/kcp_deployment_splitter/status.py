"""The root's status, summed from its shares (shares.py) the way kube users read a Deployment's.

Each share's status is what its target's syncer reported of the copy there, its observedGeneration in
the root's terms (the syncer maps it once the copy's controller has seen the root's current spec).
Counts are sums. `observedGeneration` is Karmada's rule: it reaches the root's generation only when
every share is the current plan and has observed the root's latest spec; until then it keeps its old
value, so `kubectl rollout status` (which first waits for observedGeneration) cannot finish on stale
counts. Available and Progressing are derived from the copies' own conditions, and their messages
name the clusters that lag.

A share on a cluster that is not Ready shows the last status its syncer copied up, which nobody can
confirm: like the pods of a lost node, its replicas count as neither ready nor available, and the
Available condition names the cluster and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

COUNTS = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")


@dataclass(frozen=True)
class Child:
    """A root's share on one SyncTarget (shares.share_view: that cluster's Deployment as kcp knows it)."""

    target: str
    obj: Mapping[str, Any]
    stale: str = ""  # why its status cannot be trusted now ("NotReady for 12s"); "" while its cluster is Ready

    @property
    def status(self) -> Mapping[str, Any]:
        return self.obj.get("status") or {}

    @property
    def spec_replicas(self) -> int:
        return int((self.obj.get("spec") or {}).get("replicas") or 0)

    def count(self, field: str) -> int:
        if self.stale and field in ("readyReplicas", "availableReplicas"):
            return 0
        if self.stale and field == "unavailableReplicas":
            return int(self.status.get("replicas") or 0)
        return int(self.status.get(field) or 0)

    def observed_latest(self, root_generation: int) -> bool:
        """The copy's controller has seen the root's current spec (as its syncer reported)."""
        observed = self.status.get("observedGeneration")
        return isinstance(observed, int) and observed >= root_generation

    def condition(self, type_: str) -> Mapping[str, Any] | None:
        for cond in self.status.get("conditions") or []:
            if isinstance(cond, Mapping) and cond.get("type") == type_:
                return cond
        return None


def _cond(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def available_condition(children: Sequence[Child], want: int) -> dict[str, str]:
    """Available: every child has minimum availability (kube's reasons), lagging clusters named."""
    if not children:
        if want == 0:
            return _cond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        return _cond("Available", "False", "MinimumReplicasUnavailable", "No replicas are placed on any cluster.")
    lagging = [c for c in children if c.stale or (c.condition("Available") or {}).get("status") != "True"]
    if not lagging:
        return _cond("Available", "True", "MinimumReplicasAvailable",
                     f"Deployment has minimum availability in all {len(children)} clusters.")
    named = ", ".join(f"{c.target} ({_availability(c)})" for c in lagging)
    return _cond("Available", "False", "MinimumReplicasUnavailable",
                 f"Deployment does not have minimum availability in {named}.")


def _availability(child: Child) -> str:
    if child.stale:
        return f"cluster {child.stale}, status unknown"
    return f"{child.count('availableReplicas')} of {child.spec_replicas} available"


def progressing_condition(children: Sequence[Child], generation: int) -> dict[str, str]:
    """Progressing: False naming the cluster whose deadline passed; True and complete when every child is."""
    for child in children:
        cond = child.condition("Progressing") or {}
        if cond.get("status") == "False":
            return _cond("Progressing", "False", str(cond.get("reason") or "ProgressDeadlineExceeded"),
                         f"cluster {child.target}: {cond.get('message') or 'progress deadline exceeded'}")
    behind = [c for c in children if not (c.observed_latest(generation) and _complete(c))]
    if not behind:
        return _cond("Progressing", "True", "NewReplicaSetAvailable",
                     f"Rollout complete in all {len(children)} clusters.")
    named = ", ".join(f"{c.target} ({c.count('updatedReplicas')} of {c.spec_replicas} updated, "
                      f"{c.count('availableReplicas')} available)" for c in behind)
    return _cond("Progressing", "True", "ReplicaSetUpdated", f"Rolling out in {named}.")


def _complete(child: Child) -> bool:
    want = child.spec_replicas
    return (child.count("updatedReplicas") == want and child.count("replicas") == want
            and child.count("availableReplicas") >= want)


def aggregate(root: Mapping[str, Any], children: Sequence[Child], *, settled: bool,
              extra_conditions: Sequence[Mapping[str, str]] = ()) -> dict[str, Any]:
    """The root's new status (without timestamps); `settled`: the children are exactly the current plan."""
    meta = root.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    want = int((root.get("spec") or {}).get("replicas", 1) or 0)
    old = root.get("status") or {}
    status: dict[str, Any] = {name: sum(c.count(name) for c in children) for name in COUNTS}
    status = {name: value for name, value in status.items() if value or name == "replicas"}
    if settled and all(c.observed_latest(generation) for c in children):
        status["observedGeneration"] = generation
    elif "observedGeneration" in old:
        status["observedGeneration"] = old["observedGeneration"]
    if old.get("collisionCount"):
        status["collisionCount"] = old["collisionCount"]  # the revisions' (reconcile_revisions.py), not a sum
    conditions = [available_condition(children, want), progressing_condition(children, generation),
                  *[dict(c) for c in extra_conditions]]
    status["conditions"] = conditions
    return status


def with_times(new: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]] | None,
               now: str, *, update_times: bool = True) -> list[dict[str, Any]]:
    """kube's condition clock: lastTransitionTime moves when status flips, lastUpdateTime when anything does
    (`update_times=False`: a type whose conditions have no lastUpdateTime, as most but a Deployment's)."""
    before = {c.get("type"): c for c in old or [] if isinstance(c, Mapping)}
    out: list[dict[str, Any]] = []
    for cond in new:
        prev = before.get(cond["type"]) or {}
        same_status = prev.get("status") == cond["status"]
        unchanged = same_status and prev.get("reason") == cond.get("reason") and prev.get("message") == cond.get(
            "message")
        times = {"lastUpdateTime": prev.get("lastUpdateTime", now) if unchanged else now} if update_times else {}
        out.append({**cond, **times,
                    "lastTransitionTime": prev.get("lastTransitionTime", now) if same_status else now})
    return out
