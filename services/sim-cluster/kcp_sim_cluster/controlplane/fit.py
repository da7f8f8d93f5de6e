"""The scheduler's decision, free of I/O: which nodes a pod fits, which one it goes to, and kube's
words for why it fits nowhere.

Filters run in kube's order and the first that fails names the node's reason: NodeUnschedulable,
TaintToleration, NodeAffinity (nodeSelector and required node affinity), then NodeResourcesFit (the pods limit, cpu, memory;
it reports every resource that is short). The pick among fitting nodes is kube's default scoring in
its simplest form: least allocated (most free cpu and memory after placing the pod).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kcpcommon.quantity import int_value, milli_value

NO_NODES = "no nodes available to schedule pods"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_SELECTOR = "node(s) didn't match Pod's node affinity/selector"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
DEFAULT_MILLI_CPU = 100  # kube's non-zero defaults, used only for scoring
DEFAULT_MEMORY = 200 * 1024 * 1024

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Requests:
    milli_cpu: int = 0
    memory: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.milli_cpu + other.milli_cpu, self.memory + other.memory)

    def __sub__(self, other: Requests) -> Requests:
        return Requests(self.milli_cpu - other.milli_cpu, self.memory - other.memory)


def _container_requests(container: Obj) -> Requests:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    cpu = requests.get("cpu", limits.get("cpu"))  # a limit alone defaults the request, as kube's defaulting does
    memory = requests.get("memory", limits.get("memory"))
    return Requests(milli_value(cpu) if cpu is not None else 0, int_value(memory) if memory is not None else 0)


def pod_requests(pod: Obj) -> Requests:
    """The sum over containers, at least the largest init container, plus the pod's overhead."""
    spec = pod.get("spec") or {}
    total = Requests()
    for container in spec.get("containers") or []:
        total = total + _container_requests(container)
    for init in spec.get("initContainers") or []:
        req = _container_requests(init)
        total = Requests(max(total.milli_cpu, req.milli_cpu), max(total.memory, req.memory))
    overhead = spec.get("overhead") or {}
    if overhead:
        total = total + Requests(milli_value(overhead.get("cpu", 0)), int_value(overhead.get("memory", 0)))
    return total


@dataclass
class NodeState:
    """A node as the scheduler sees it: what it offers and what its bound pods already take."""

    name: str
    allocatable: Requests
    max_pods: int
    labels: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    taints: Sequence[Obj] = ()
    requested: Requests = field(default_factory=Requests)
    pods: int = 0
    scored: Requests = field(default_factory=Requests)  # requests with kube's non-zero defaults, for scoring

    @classmethod
    def from_node(cls, node: Obj) -> NodeState:
        status = node.get("status") or {}
        alloc = status.get("allocatable") or status.get("capacity") or {}
        spec = node.get("spec") or {}
        return cls(name=node["metadata"]["name"],
                   allocatable=Requests(milli_value(alloc.get("cpu", 0)), int_value(alloc.get("memory", 0))),
                   max_pods=int_value(alloc.get("pods", 0)), labels=node["metadata"].get("labels") or {},
                   unschedulable=bool(spec.get("unschedulable")), taints=spec.get("taints") or [])

    def add(self, requests: Requests) -> None:
        self.requested = self.requested + requests
        self.scored = self.scored + _non_zero(requests)
        self.pods += 1

    def remove(self, requests: Requests) -> None:
        self.requested = self.requested - requests
        self.scored = self.scored - _non_zero(requests)
        self.pods -= 1


def _non_zero(requests: Requests) -> Requests:
    """kube scores a pod without requests as if it asked for 100m cpu and 200Mi memory."""
    return Requests(requests.milli_cpu or DEFAULT_MILLI_CPU, requests.memory or DEFAULT_MEMORY)


def tolerates(tolerations: Iterable[Obj], taint: Obj) -> bool:
    """kube's Toleration.ToleratesTaint over a pod's tolerations."""
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("key") and tol["key"] != taint.get("key"):
            continue
        op = tol.get("operator") or "Equal"
        if op == "Exists" or (op == "Equal" and (tol.get("value") or "") == (taint.get("value") or "")):
            if not tol.get("key") and op != "Exists":
                continue  # an empty key only matches with Exists
            return True
    return False


def _requirement(expr: Obj, values: Mapping[str, str]) -> bool:
    """One node selector requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against labels or fields."""
    key, op, wanted = expr.get("key", ""), expr.get("operator"), expr.get("values") or []
    present, value = key in values, values.get(key)
    if op == "In":
        return present and value in wanted
    if op == "NotIn":
        return not present or value not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(str(value)), int(wanted[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term_matches(term: Obj, node: NodeState) -> bool:
    """A nodeSelectorTerm: all its expressions on labels and fields (only metadata.name); empty matches nothing."""
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return all(_requirement(e, node.labels) for e in expressions) and \
        all(_requirement(f, {"metadata.name": node.name}) for f in fields)


def affinity_matches(spec: Obj, node: NodeState) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution node affinity: any of its terms (none required: all nodes)."""
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


@dataclass(frozen=True)
class NodeVerdict:
    reasons: tuple[str, ...]  # empty: the pod fits
    resolvable: bool = True  # False: kube's UnschedulableAndUnresolvable (preemption cannot help)


def check(pod: Obj, requests: Requests, node: NodeState) -> NodeVerdict:
    """Run the filters on one node."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    if node.unschedulable and not tolerates(tolerations, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}):
        return NodeVerdict((REASON_UNSCHEDULABLE_NODE,), resolvable=False)
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return NodeVerdict((f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}",),
                               resolvable=False)
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()) or not affinity_matches(spec, node):
        return NodeVerdict((REASON_SELECTOR,), resolvable=False)
    reasons = []
    if node.pods + 1 > node.max_pods:
        reasons.append("Too many pods")
    if requests.milli_cpu or requests.memory:
        if requests.milli_cpu and node.allocatable.milli_cpu < node.requested.milli_cpu + requests.milli_cpu:
            reasons.append("Insufficient cpu")
        if requests.memory and node.allocatable.memory < node.requested.memory + requests.memory:
            reasons.append("Insufficient memory")
    return NodeVerdict(tuple(reasons))


def score(requests: Requests, node: NodeState) -> float:
    """Least allocated: the mean free share of cpu and memory once the pod is placed."""
    wanted = _non_zero(requests)
    shares = []
    if node.allocatable.milli_cpu:
        shares.append((node.allocatable.milli_cpu - node.scored.milli_cpu - wanted.milli_cpu)
                      / node.allocatable.milli_cpu)
    if node.allocatable.memory:
        shares.append((node.allocatable.memory - node.scored.memory - wanted.memory) / node.allocatable.memory)
    return sum(shares) / len(shares) if shares else 0.0


@dataclass(frozen=True)
class Placement:
    node: str | None  # None: unschedulable, see message
    message: str = ""


def schedule(pod: Obj, nodes: Sequence[NodeState], requests: Requests | None = None) -> Placement:
    """The best node for the pod, or kube's FailedScheduling message (`requests`: the pod's, if known)."""
    if not nodes:
        return Placement(None, NO_NODES)
    requests = requests if requests is not None else pod_requests(pod)
    best: NodeState | None = None
    best_score = 0.0
    verdicts: list[NodeVerdict] = []
    for node in nodes:
        verdict = check(pod, requests, node)
        if verdict.reasons:
            verdicts.append(verdict)
            continue
        value = score(requests, node)
        if best is None or value > best_score:
            best, best_score = node, value
    if best is not None:
        return Placement(best.name)
    never = (pod.get("spec") or {}).get("preemptionPolicy") == "Never"
    return Placement(None, unschedulable_message(len(nodes), verdicts, preemption=not never))


def _histogram(reasons: Iterable[str]) -> str:
    """kube's sorted reason histogram: `2 Insufficient cpu, 1 node(s) were unschedulable` sorted as text."""
    counts = Counter(reasons)
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def unschedulable_message(total: int, verdicts: Sequence[NodeVerdict], *, preemption: bool = True) -> str:
    """`0/N nodes are available: <reasons>. preemption: 0/N nodes are available: <why not>.`"""
    message = f"0/{total} nodes are available: {_histogram(r for v in verdicts for r in v.reasons)}."
    if not preemption:
        return f"{message} preemption: not eligible due to preemptionPolicy=Never."
    why = _histogram(NO_VICTIMS if v.resolvable else NOT_HELPFUL for v in verdicts)
    return f"{message} preemption: 0/{total} nodes are available: {why}."
