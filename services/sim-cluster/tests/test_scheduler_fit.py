"""The scheduler's fit and kube's FailedScheduling message."""

from __future__ import annotations

from kcp_sim_cluster.controlplane.fit import NodeState, Requests, pod_requests, schedule


def _node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110", **extra: object) -> NodeState:
    node = {"metadata": {"name": name, "labels": extra.pop("labels", {})},
            "spec": extra, "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}
    return NodeState.from_node(node)


def _pod(cpu: str | None = None, memory: str | None = None, **spec: object) -> dict:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}}


def test_requests_sum_containers_and_take_the_largest_init_container() -> None:
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                                   {"resources": {"limits": {"cpu": "250m"}}}],
                    "initContainers": [{"resources": {"requests": {"cpu": "1", "memory": "1Mi"}}}]}}
    assert pod_requests(pod) == Requests(1000, 64 * 2**20)


def test_the_least_allocated_node_wins() -> None:
    busy, idle = _node("busy"), _node("idle")
    busy.add(Requests(3000, 0))
    assert schedule(_pod("500m"), [busy, idle]).node == "idle"


def test_a_pod_that_fits_nowhere_gets_kubes_message() -> None:
    nodes = [_node(f"n{i}", cpu="1") for i in range(3)]
    placement = schedule(_pod("2"), nodes)
    assert placement.node is None
    assert placement.message == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                                 "available: 3 No preemption victims found for incoming pod.")


def test_reasons_are_counted_per_node_and_sorted() -> None:
    full = _node("full", pods="1")
    full.add(Requests())
    cordoned = _node("cordoned", unschedulable=True)
    small = _node("small", cpu="1", memory="1Gi")
    placement = schedule(_pod("2", "2Gi"), [full, cordoned, small])
    assert placement.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods, "
        "1 node(s) were unschedulable. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")


def test_the_pods_limit_counts_even_pods_without_requests() -> None:
    node = _node("n", pods="2")
    node.add(Requests())
    assert schedule(_pod(), [node]).node == "n"
    node.add(Requests())
    assert "1 Too many pods" in schedule(_pod(), [node]).message


def test_node_selector_taints_and_tolerations() -> None:
    labelled = _node("gpu", labels={"gpu": "yes"})
    tainted = _node("tainted", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    plain = _node("plain")
    assert schedule(_pod(nodeSelector={"gpu": "yes"}), [plain, labelled]).node == "gpu"
    message = schedule(_pod(nodeSelector={"gpu": "no"}), [labelled, tainted]).message
    assert message.startswith("0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                              "1 node(s) had untolerated taint {dedicated: db}.")
    tolerant = _pod(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}])
    assert schedule(tolerant, [tainted]).node == "tainted"
    assert schedule(_pod(tolerations=[{"operator": "Exists"}]), [tainted]).node == "tainted"


def test_no_nodes_at_all() -> None:
    assert schedule(_pod(), []).message == "no nodes available to schedule pods"


def test_pods_without_requests_spread_over_the_nodes() -> None:
    nodes = [_node("a"), _node("b"), _node("c")]
    placed = []
    for _ in range(6):
        node = schedule(_pod(), nodes).node
        placed.append(node)
        next(n for n in nodes if n.name == node).add(Requests())
    assert sorted(placed) == ["a", "a", "b", "b", "c", "c"]


def test_required_node_affinity() -> None:
    def affinity(*terms: dict) -> dict:
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}

    small, big = _node("small", labels={"size": "2", "zone": "a"}), _node("big", labels={"size": "8", "zone": "b"})
    bigger = affinity({"matchExpressions": [{"key": "size", "operator": "Gt", "values": ["4"]}]})
    assert schedule(_pod(affinity=bigger), [small, big]).node == "big"
    either = affinity({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]},
                      {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["small"]}]})
    assert schedule(_pod(affinity=either), [small, big]).node == "small"
    nowhere = affinity({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]})
    assert schedule(_pod(affinity=nowhere), [small, big]).message.startswith(
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")
    assert schedule(_pod(affinity=affinity({})), [small]).node is None  # an empty term matches nothing
