"""The simulated kubelet's next step for a started pod, shared by the in-process kubelet and the node agent."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kcp_sim_cluster.kubeletstatus import BACKOFF_INITIAL, pre_stop_seconds, progress, start_requeue, stopping_for

STAMP = "2026-01-01T00:00:00Z"


def running(*, annotations: dict[str, str] | None = None, restarts: int = 0, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
            "status": {"phase": "Running", "startTime": STAMP,
                       "containerStatuses": [{"name": "c", "ready": False, "restartCount": restarts}],
                       "conditions": [{"type": "Ready", "status": "False"}]}}


def test_a_pod_waits_for_the_ready_delay_then_turns_ready_once() -> None:
    assert progress(running(), elapsed=0.4, ready_delay=1.0, stamp=STAMP).after == pytest.approx(0.6)
    step = progress(running(), elapsed=1.5, ready_delay=1.0, stamp=STAMP)
    pod = running()
    assert step.mutate is not None and step.mutate(pod) and step.after is None
    assert pod["status"]["containerStatuses"][0]["ready"] is True
    settled = progress(pod, elapsed=2.0, ready_delay=1.0, stamp=STAMP)
    assert settled.mutate is None and settled.after is None


def test_the_ready_annotation_false_keeps_it_unready() -> None:
    pod = running(annotations={"sim.kcp.io/ready": "false"})
    assert progress(pod, elapsed=5, ready_delay=1.0, stamp=STAMP).mutate is None


def test_a_crashing_pod_restarts_with_back_off_and_records_it() -> None:
    pod = running(annotations={"sim.kcp.io/crash": "true"}, restarts=1)
    waiting = progress(pod, elapsed=5, ready_delay=0, stamp=STAMP)
    assert waiting.mutate is None and waiting.after == pytest.approx(BACKOFF_INITIAL - 5)
    again = progress(pod, elapsed=11, ready_delay=0, stamp=STAMP)
    assert again.mutate is not None and again.mutate(pod) and again.events is not None
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 2
    assert [reason for _, reason, _ in again.events(pod)] == ["BackOff"]


@pytest.mark.parametrize(("crash", "phase"), [("false", "Succeeded"), ("true", "Failed")])
def test_a_pod_that_never_restarts_completes(crash: str, phase: str) -> None:
    pod = running(annotations={"sim.kcp.io/crash": crash}, restartPolicy="Never")
    step = progress(pod, elapsed=2, ready_delay=1, stamp=STAMP)
    assert step.mutate is not None and step.mutate(pod) and pod["status"]["phase"] == phase
    assert not step.mutate(pod)  # finished already: nothing more to write


def test_after_starting_a_pod_is_looked_at_again_when_something_is_due() -> None:
    assert start_requeue(running(), ready_delay=1, ready=False, crashes=False, elapsed=0.25) == pytest.approx(0.75)
    assert start_requeue(running(), ready_delay=0, ready=True, crashes=False, elapsed=0) is None
    assert start_requeue(running(), ready_delay=1, ready=False, crashes=True, elapsed=0) == BACKOFF_INITIAL


def terminating(*hooks: dict, grace: int = 30, deleted: float = 1_000_000.0) -> dict:
    """A pod deleted at `deleted` (epoch seconds) with `grace`, its containers' preStop `hooks`."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deleted + grace))
    return {"metadata": {"deletionTimestamp": stamp, "deletionGracePeriodSeconds": grace},
            "spec": {"containers": [{"name": f"c{i}", "lifecycle": {"preStop": hook}} for i, hook in enumerate(hooks)]}}


def test_a_prestop_sleep_keeps_a_deleted_pod_running_within_its_grace_period() -> None:
    assert pre_stop_seconds(terminating({"exec": {"command": ["sleep", "5"]}})) == 5
    assert pre_stop_seconds(terminating({"exec": {"command": ["/bin/sh", "-c", "sleep 7"]}},
                                        {"sleep": {"seconds": 3}})) == 7
    assert pre_stop_seconds(terminating({"exec": {"command": ["nginx", "-s", "quit"]}})) == 0
    pod = terminating({"sleep": {"seconds": 5}}, deleted=1_000_000.0)
    assert stopping_for(pod, 1_000_002.0) == 3  # 2 s into its 5 s hook
    assert stopping_for(pod, 1_000_009.0) == 0
    assert stopping_for(terminating({"sleep": {"seconds": 50}}, grace=10), 1_000_000.0) == 10  # the grace bounds it
    assert stopping_for(terminating({"sleep": {"seconds": 5}}, grace=0), 1_000_000.0) == 0  # a forced delete
