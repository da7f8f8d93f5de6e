"""A simulated container's log over time: lines every `sim.kcp.io/log-interval` seconds, and kube's options."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api.podlog import log_lines, log_options, printed, render, select

STARTED = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def pod(interval: str = "2", state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "annotations": {"sim.kcp.io/log-interval": interval}},
            "spec": {"containers": [{"name": "app", "image": "img"}]},
            "status": {"startTime": "2026-01-01T00:00:00Z", "containerStatuses": [
                {"name": "app", "image": "img", "restartCount": 0,
                 "state": state or {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}


def test_a_running_container_prints_a_line_every_interval() -> None:
    lines = log_lines(pod(), "app", now=STARTED + 7)
    assert [line.text for line in lines] == ["app started (image img, start 1)", "app line 1", "app line 2",
                                             "app line 3"]
    assert [line.at - STARTED for line in lines] == [0, 2, 4, 6]
    assert lines[1].stamp == "2026-01-01T00:00:02.000000000Z"


def test_a_terminated_container_printed_until_it_finished() -> None:
    ended = {"terminated": {"startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:05Z"}}
    assert len(log_lines(pod(state=ended), "app", now=STARTED + 100)) == 3


def test_without_the_annotation_only_starts_are_logged() -> None:
    unannotated = pod()
    del unannotated["metadata"]["annotations"]
    assert len(log_lines(unannotated, "app", now=STARTED + 100)) == 1


def test_the_annotation_overrides_the_sims_default() -> None:
    unannotated = pod()
    del unannotated["metadata"]["annotations"]
    assert len(log_lines(unannotated, "app", now=STARTED + 100, default=10)) == 11
    assert len(log_lines(pod(interval="50"), "app", now=STARTED + 100, default=10)) == 3
    assert len(log_lines(pod(interval="0"), "app", now=STARTED + 100, default=10)) == 1


def test_since_and_tail_select_as_kube() -> None:
    lines = log_lines(pod(), "app", now=STARTED + 10)
    options = log_options({"tailLines": "2", "sinceTime": "2026-01-01T00:00:03Z", "timestamps": "true"}, pod(), "p")
    assert render(select(lines, options), options).splitlines() == [
        "2026-01-01T00:00:08.000000000Z app line 4", "2026-01-01T00:00:10.000000000Z app line 5"]
    since = log_options({"sinceTime": "2026-01-01T00:00:07Z"}, pod(), "p")
    assert [line.text for line in select(lines, since)] == ["app line 4", "app line 5"]


@pytest.mark.parametrize("query", [{"sinceSeconds": "0"}, {"tailLines": "-1"}, {"limitBytes": "0"},
                                   {"sinceSeconds": "5", "sinceTime": "2026-01-01T00:00:00Z"}])
def test_bad_options_are_kubes_invalid(query: dict[str, str]) -> None:
    with pytest.raises(st.APIError) as caught:
        log_options(query, pod(), "p")
    assert caught.value.code == 422


def test_a_container_must_be_named_among_several() -> None:
    two = pod()
    two["spec"]["containers"].append({"name": "side", "image": "img"})
    with pytest.raises(st.APIError, match=r"choose one of: \[app side\]"):
        log_options({}, two, "p")


class Pods:
    """A registry whose pod reads return `pods` in turn (the last one forever after)."""

    def __init__(self, *pods: dict[str, Any]) -> None:
        self.pods = list(pods)

    async def get(self, *args: Any) -> dict[str, Any]:
        return self.pods.pop(0) if len(self.pods) > 1 else self.pods[0]


def call(registry: Pods) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(registry=registry, resource=None, cluster="", namespace="", name="p")


def running_since(seconds_ago: float, interval: str = "0.05") -> dict[str, Any]:
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))
    return pod(interval, {"running": {"startedAt": started}})


async def test_a_followed_log_gets_new_lines_and_ends_with_the_instance() -> None:
    now = running_since(1)
    ended = {**now, "status": {**now["status"], "containerStatuses": [
        {**now["status"]["containerStatuses"][0], "state": {"terminated": {"exitCode": 0}}}]}}
    async with asyncio.timeout(10):  # a stream that never ends fails here
        got = [batch async for batch in printed(call(Pods(now, now, ended)), now, "app", time.time())]
    assert len(got) == 2  # two reads while it ran, then the terminated instance ends the stream
    assert all(line.text.startswith("app line ") for batch in got for line in batch)
    stamps = [line.at for batch in got for line in batch]
    assert stamps == sorted(set(stamps))  # nothing twice, in order


async def test_a_followed_log_ends_when_the_pod_is_gone() -> None:
    class Gone(Pods):
        async def get(self, *args: Any) -> dict[str, Any]:
            raise st.APIError(404, "NotFound", 'pods "p" not found')

    now = running_since(1)
    async with asyncio.timeout(10):
        assert [batch async for batch in printed(call(Gone(now)), now, "app", time.time())] == []
