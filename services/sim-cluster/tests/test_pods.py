"""A pod's log (derived from its container statuses) and kube's pod STATUS column."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api.columns import pod_restarts, pod_status
from kcp_sim_cluster.api.podlog import pod_log_lines


def pod(**container_status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "app", "image": "img:1"}]},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:01Z",
                       "containerStatuses": [{"name": "app", "image": "img:1", "ready": True, **container_status}]}}


def test_one_line_per_start() -> None:
    p = pod(restartCount=1, state={"running": {"startedAt": "2026-01-01T00:05:00Z"}},
            lastState={"terminated": {"startedAt": "2026-01-01T00:02:00Z", "exitCode": 1}})
    assert pod_log_lines(p, "app") == [("2026-01-01T00:02:00Z", "app started (image img:1, start 1)"),
                                       ("2026-01-01T00:05:00Z", "app started (image img:1, start 2)")]
    assert pod_log_lines(p, "app", previous=True) == [("2026-01-01T00:02:00Z", "app started (image img:1, start 1)")]


def test_a_crash_looping_container_shows_its_ended_starts() -> None:
    p = pod(restartCount=3, state={"waiting": {"reason": "CrashLoopBackOff"}},
            lastState={"terminated": {"startedAt": "2026-01-01T00:09:00Z", "exitCode": 1}})
    lines = pod_log_lines(p, "app")
    assert [line for _, line in lines] == [f"app started (image img:1, start {n})" for n in (1, 2, 3)]
    assert lines[-1][0] == "2026-01-01T00:09:00Z"


def test_a_container_that_never_started_has_no_log() -> None:
    p = pod(restartCount=0, state={"waiting": {"reason": "ContainerCreating"}})
    with pytest.raises(st.APIError) as err:
        pod_log_lines(p, "app")
    assert err.value.message == 'container "app" in pod "p" is waiting to start: ContainerCreating'
    running = pod(restartCount=0, state={"running": {"startedAt": "2026-01-01T00:00:02Z"}})
    with pytest.raises(st.APIError) as err:
        pod_log_lines(running, "app", previous=True)
    assert err.value.message == 'previous terminated container "app" in pod "p" not found'


@pytest.mark.parametrize(("state", "ready", "shown"), [
    ({"running": {}}, True, "Running"),
    ({"waiting": {"reason": "CrashLoopBackOff"}}, False, "CrashLoopBackOff"),
    ({"terminated": {"reason": "Completed", "exitCode": 0}}, False, "Completed"),
    ({"terminated": {"exitCode": 2}}, False, "ExitCode:2"),
])
def test_status_column(state: dict[str, Any], ready: bool, shown: str) -> None:
    assert pod_status(pod(restartCount=0, state=state, ready=ready)) == shown


def test_status_shows_terminating_and_pending() -> None:
    deleting = pod(restartCount=0, state={"running": {}})
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert pod_status(deleting) == "Terminating"
    assert pod_status({"metadata": {}, "status": {"phase": "Pending"}}) == "Pending"


def test_restarts_say_how_long_ago() -> None:
    assert pod_restarts(pod(restartCount=0)) == "0"
    shown = pod_restarts(pod(restartCount=4, lastState={"terminated": {"finishedAt": "2026-01-01T00:00:00Z"}}))
    assert shown.startswith("4 (") and shown.endswith(" ago)")
