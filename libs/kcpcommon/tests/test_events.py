"""The Event recorder: client-go's Event body, background writes, repeats counted into one Event."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kcpcommon.errors import APIClientError
from kcpcommon.events import NORMAL, WARNING, EventRecorder, event_for

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-1", "namespace": "team", "uid": "u1", "resourceVersion": "7",
                    "annotations": {"kcp.io/cluster": "tenant"}}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u2"}}


class Sink:
    """Records what the recorder writes; `fail` makes the next writes raise it."""

    def __init__(self) -> None:
        self.created: list[tuple[str, str, dict[str, Any]]] = []
        self.counts: list[tuple[str, str, str, int]] = []
        self.fail: Exception | None = None
        self.written = asyncio.Event()

    async def create(self, cluster: str, namespace: str, event: Mapping[str, Any]) -> None:
        if self.fail:
            raise self.fail
        self.created.append((cluster, namespace, dict(event)))
        self.written.set()

    async def update_count(self, cluster: str, namespace: str, name: str, count: int, last: str) -> None:
        self.counts.append((cluster, namespace, name, count))
        self.written.set()


async def settled(recorder: EventRecorder) -> None:
    await asyncio.wait_for(recorder._queue.join(), 5)


def test_the_body_is_client_gos() -> None:
    event = event_for(POD, WARNING, "BackOff", "x" * 2000, component="kubelet", host="node-1", stamp="T")
    assert event["metadata"]["name"].startswith("web-1.") and event["metadata"]["namespace"] == "team"
    assert event["involvedObject"] == {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": "u1",
                                       "resourceVersion": "7", "namespace": "team"}
    assert event["source"] == {"component": "kubelet", "host": "node-1"} and len(event["message"]) == 1024
    assert (event["count"], event["firstTimestamp"], event["lastTimestamp"]) == (1, "T", "T")
    cluster_scoped = event_for(NODE, NORMAL, "Ready", "m", component="c")
    assert cluster_scoped["metadata"]["namespace"] == "default" and "namespace" not in cluster_scoped["involvedObject"]
    assert event_for(POD, NORMAL, "r", "m", component="c")["metadata"]["name"] != \
        event_for(POD, NORMAL, "r", "m", component="c")["metadata"]["name"]


async def test_events_are_written_in_the_background_to_the_objects_cluster() -> None:
    sink = Sink()
    recorder = EventRecorder(sink, component="test")
    recorder.start()
    recorder.record(POD, NORMAL, "Scheduled", "assigned")
    recorder.record(NODE, NORMAL, "Ready", "n1 ready", cluster="other")
    await settled(recorder)
    assert [(c, ns, e["reason"]) for c, ns, e in sink.created] == [("tenant", "team", "Scheduled"),
                                                                 ("other", "default", "Ready")]
    await recorder.stop()


async def test_a_repeat_is_counted_into_the_first_event_and_the_last_count_is_written() -> None:
    sink = Sink()
    recorder = EventRecorder(sink, component="test", aggregate_seconds=0.2)
    recorder.start()
    for _ in range(5):
        recorder.record(POD, WARNING, "BackOff", "restarting")
    await settled(recorder)
    assert len(sink.created) == 1, "a repeat is not a new Event"
    name = sink.created[0][2]["metadata"]["name"]
    sink.written.clear()
    await asyncio.wait_for(sink.written.wait(), 5)  # the window closes: the burst's count goes out once
    await settled(recorder)
    assert sink.counts == [("tenant", "team", name, 5)]
    recorder.record(POD, WARNING, "BackOff", "other message")
    await settled(recorder)
    assert len(sink.created) == 2, "another message is another Event"
    await recorder.stop()


async def test_a_recreated_object_gets_its_own_event() -> None:
    sink = Sink()
    recorder = EventRecorder(sink, component="test")
    recorder.start()
    recorder.record(POD, NORMAL, "Split", "15 replicas")
    recreated = {**POD, "metadata": {**POD["metadata"], "uid": "u9"}}
    recorder.record(recreated, NORMAL, "Split", "15 replicas")
    await settled(recorder)
    assert len(sink.created) == 2
    await recorder.stop()


async def test_a_full_backlog_drops_and_a_failing_sink_costs_one_event() -> None:
    sink = Sink()
    recorder = EventRecorder(sink, component="test", backlog=2)
    recorder.record(POD, NORMAL, "a", "1")
    recorder.record(POD, NORMAL, "b", "2")
    recorder.record(POD, NORMAL, "c", "3")  # not started: the queue holds two
    assert recorder.dropped == 1
    sink.fail = APIClientError("gone", status=404)
    recorder.start()
    await settled(recorder)
    assert sink.created == []
    sink.fail = None
    recorder.record(POD, NORMAL, "d", "4")
    await settled(recorder)
    assert [e["reason"] for _, _, e in sink.created] == ["d"]
    await recorder.stop()
