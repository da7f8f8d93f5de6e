"""The control plane's small decisions: crash back-off, QoS, eviction toleration, not-ready taints,
which surplus pods go first, slow-start batches, expectations and pod IPs."""

from __future__ import annotations

import pytest

from kcp_sim_cluster.controlplane.expectations import Expectations
from kcp_sim_cluster.controlplane.nodelifecycle import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    _taints,
    toleration_seconds,
)
from kcp_sim_cluster.controlplane.nodes import pod_cidr
from kcp_sim_cluster.controlplane.replicaset import deletion_rank, slow_start
from kcp_sim_cluster.ipam import NodeIPs
from kcp_sim_cluster.kubeletstatus import crash_restarts, qos_class
from kcpcommon.keys import ObjectKey


def test_crash_back_off_doubles_from_ten_seconds_to_five_minutes() -> None:
    assert crash_restarts(0) == (1, 10.0)
    assert crash_restarts(10) == (2, 20.0)  # restarted at 10 s, next after 20 s more
    assert crash_restarts(29) == (2, 1.0)
    assert crash_restarts(30) == (3, 40.0)
    restarts, wait = crash_restarts(10_000)
    assert wait <= 300.0 and restarts > 30


def test_qos_classes() -> None:
    assert qos_class({"spec": {"containers": [{"name": "c"}]}}) == "BestEffort"
    assert qos_class({"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}) == "Burstable"
    both = {"cpu": "1", "memory": "1Gi"}
    assert qos_class({"spec": {"containers": [{"resources": {"requests": both, "limits": both}}]}}) == "Guaranteed"


def test_the_default_toleration_is_read_as_the_flag() -> None:
    stamped = {"spec": {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                         "effect": "NoExecute", "tolerationSeconds": 300}]}}
    assert toleration_seconds(stamped, 5.0) == 5.0
    own = {"spec": {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                     "effect": "NoExecute", "tolerationSeconds": 60}]}}
    assert toleration_seconds(own, 5.0) == 60.0
    forever = {"spec": {"tolerations": [{"operator": "Exists"}]}}
    assert toleration_seconds(forever, 5.0) is None
    assert toleration_seconds({"spec": {}}, 5.0) == 5.0


def test_not_ready_taints_come_and_go_leaving_others() -> None:
    other = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    tainted = _taints(NOT_READY_TAINT, [other])
    assert [(t["key"], t["effect"]) for t in tainted] == [
        ("dedicated", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute")]
    assert _taints(NOT_READY_TAINT, tainted) == tainted  # stable: timeAdded is kept
    assert _taints("", tainted) == [other]
    unreachable = _taints(UNREACHABLE_TAINT, tainted)  # the kubelet stopped reporting at all
    assert [(t["key"], t["effect"]) for t in unreachable] == [
        ("dedicated", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute")]


def test_surplus_pods_go_unscheduled_pending_unready_and_newest_first() -> None:
    def pod(name: str, node: str = "", phase: str = "Running", ready: bool = True, created: str = "1") -> dict:
        return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"nodeName": node},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    pods = [pod("old-ready", "n", created="1"), pod("new-ready", "n", created="2"),
            pod("unready", "n", ready=False), pod("pending", "n", phase="Pending"), pod("unscheduled")]
    assert [p["metadata"]["name"] for p in sorted(pods, key=deletion_rank)] == [
        "unscheduled", "pending", "unready", "new-ready", "old-ready"]


async def test_slow_start_doubles_batches_and_stops_after_a_failure() -> None:
    calls = []

    async def create() -> None:
        calls.append(1)
        if len(calls) == 5:
            raise RuntimeError("quota")

    attempted, done, error = await slow_start(100, create)
    assert (attempted, done) == (7, 6)  # batches of 1, 2 and 4; the third had the failure
    assert isinstance(error, RuntimeError)
    attempted, done, error = await slow_start(10, lambda: _ok())
    assert (attempted, done, error) == (10, 10, None)


async def _ok() -> None:
    return None


def test_expectations_wait_for_every_creation_and_deletion() -> None:
    owner, pod = ObjectKey("c", "ns", "rs"), ObjectKey("c", "ns", "rs-abcde")
    expectations = Expectations()
    assert expectations.satisfied(owner)
    expectations.expect(owner, adds=2)
    expectations.created(owner)
    assert not expectations.satisfied(owner)
    expectations.created(owner)
    assert expectations.satisfied(owner)
    expectations.expect(owner, deletes={pod})
    assert not expectations.satisfied(owner)
    expectations.deleted(owner, pod)
    assert expectations.satisfied(owner)


def test_pod_ips_are_unique_per_node_and_reused_after_release() -> None:
    pool = NodeIPs(pod_cidr(1))
    assert pod_cidr(1) == "10.64.16.0/20"
    first = pool.allocate(ObjectKey("c", "ns", "a"))
    second = pool.allocate(ObjectKey("c", "ns", "b"))
    assert (first, second) == ("10.64.16.1", "10.64.16.2")
    pool.release(first)
    pool.take("10.64.16.3", ObjectKey("c", "ns", "c"))  # seen on a pod after a restart
    ips = {pool.allocate(ObjectKey("c", "ns", str(i))) for i in range(4)}
    assert "10.64.16.3" not in ips and "10.64.16.2" not in ips and len(ips) == 4


@pytest.mark.parametrize("index", [1, 15, 16, 3070])
def test_node_pod_cidrs_do_not_overlap(index: int) -> None:
    import ipaddress

    this = ipaddress.ip_network(pod_cidr(index))
    assert not this.overlaps(ipaddress.ip_network(pod_cidr(index + 1)))


def test_a_cordoned_node_gets_the_unschedulable_taint() -> None:
    cordoned = _taints("", [], cordoned=True)
    assert [(t["key"], t["effect"]) for t in cordoned] == [("node.kubernetes.io/unschedulable", "NoSchedule")]
    assert _taints("", cordoned, cordoned=True) == cordoned
    assert _taints("", cordoned) == []


def test_completed_indexes_are_written_as_ranges() -> None:
    from kcp_sim_cluster.controlplane.job import format_indexes, indexed_pod

    assert format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert format_indexes(set()) == ""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    pod = indexed_pod(job, {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}, "j", 3)
    assert pod["metadata"]["generateName"] == "j-3-"
    assert pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "3"
    assert pod["spec"]["hostname"] == "j-3"
    assert pod["spec"]["containers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX"
