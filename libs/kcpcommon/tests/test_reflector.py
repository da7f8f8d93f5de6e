"""The reflector's rules, step by step, on a scripted resource (the real-server cases are in test_informer.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from kcpcommon.errors import (
    APIGoneError,
    APINotFoundError,
    APIServerTimeoutError,
    APITooManyRequestsError,
    APITransportError,
)
from kcpcommon.informer import SharedInformer
from kcpcommon.reflector import Reflector, ReflectorOptions
from kcpcommon.tasks import cancel_and_wait, spawn

pytestmark = pytest.mark.usefixtures("no_leaked_tasks")


def page(rv: str, *names: str, more: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": rv}
    if more:
        metadata["continue"] = more
    return {"kind": "ThingList", "apiVersion": "v1", "metadata": metadata,
            "items": [{"metadata": {"name": n}} for n in names]}


def event(type_: str, rv: str, name: str = "x") -> dict[str, Any]:
    return {"type": type_, "object": {"metadata": {"name": name, "resourceVersion": rv}}}


class ScriptedResource:
    """Answers list and watch calls from a script; each step is a page, an event list, or an error."""

    api_version, plural = "v1", "things"

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists, self.watches = lists, watches
        self.list_calls: list[tuple[float, dict[str, Any]]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.done = asyncio.Event()

    async def list(self, **kwargs: Any) -> dict[str, Any]:
        self.list_calls.append((asyncio.get_running_loop().time(), kwargs))
        step = self.lists.pop(0)
        if isinstance(step, Exception):
            raise step
        return step  # type: ignore[no-any-return]

    async def watch_stream(self, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        self.watch_calls.append(kwargs)
        if not self.watches:
            self.done.set()
            await asyncio.Event().wait()  # the script is over: a watch that never ends
        step = self.watches.pop(0)
        for item in step:
            if isinstance(item, Exception):
                raise item
            yield item


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.calls.append(("replace", [i["metadata"]["name"] for i in items], resource_version))

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.calls.append((event_type, obj["metadata"]["name"]))


async def run_script(resource: ScriptedResource, **options: Any) -> Sink:
    sink = Sink()
    opts = ReflectorOptions(backoff_initial=0.01, backoff_cap=0.02, short_watch=0, **options)
    reflector = Reflector(resource, sink, name="test", options=opts)  # type: ignore[arg-type]
    task = spawn(reflector.run(), name="reflector")
    try:
        await asyncio.wait_for(resource.done.wait(), 5)
    finally:
        await cancel_and_wait(task)
    return sink


async def test_the_first_list_is_paginated_and_items_get_their_kind() -> None:
    resource = ScriptedResource([page("5", "a", "b", more="t1"), page("6", "c")], [])
    sink = await run_script(resource)
    assert sink.calls == [("replace", ["a", "b", "c"], "6")]
    assert [c[1]["continue_token"] for c in resource.list_calls] == [None, "t1"]
    assert {c[1]["limit"] for c in resource.list_calls} == {500}
    assert resource.watch_calls[0]["resource_version"] == "6"


async def test_a_broken_watch_resumes_from_the_last_bookmark_without_relisting() -> None:
    resource = ScriptedResource([page("5")], [
        [event("ADDED", "6"), event("BOOKMARK", "9"), APITransportError("reset")],
        [event("MODIFIED", "10")],
    ])
    sink = await run_script(resource)
    assert [c["resource_version"] for c in resource.watch_calls] == ["5", "9", "10"]
    assert len(resource.list_calls) == 1
    assert sink.calls[1:] == [("ADDED", "x"), ("MODIFIED", "x")]


async def test_watches_ask_for_bookmarks_and_a_randomized_timeout() -> None:
    resource = ScriptedResource([page("5")], [[], [], []])
    await run_script(resource, min_watch_timeout=300)
    assert all(c["allow_bookmarks"] for c in resource.watch_calls)
    timeouts = [c["timeout_seconds"] for c in resource.watch_calls]
    assert all(300 <= t < 600 for t in timeouts)


async def test_gone_relists_and_the_watch_restarts_from_the_new_list() -> None:
    resource = ScriptedResource([page("5", "a"), page("50", "b")], [[APIGoneError("too old", status=410)]])
    sink = await run_script(resource)
    assert sink.calls == [("replace", ["a"], "5"), ("replace", ["b"], "50")]
    assert [c["resource_version"] for c in resource.watch_calls] == ["5", "50"]


async def test_a_server_behind_our_resource_version_makes_us_relist() -> None:
    too_large = APIServerTimeoutError("Too large resource version: 90, current: 40", status=504, reason="Timeout",
                                      details={"causes": [{"reason": "ResourceVersionTooLarge"}]})
    resource = ScriptedResource([page("90", "a"), page("40", "b")], [[too_large]])
    sink = await run_script(resource)
    assert sink.calls == [("replace", ["a"], "90"), ("replace", ["b"], "40")]
    assert [c["resource_version"] for c in resource.watch_calls] == ["90", "40"]


async def test_too_many_requests_waits_at_least_retry_after() -> None:
    throttled = APITooManyRequestsError("slow down", status=429, retry_after=0.3)
    resource = ScriptedResource([throttled, page("5")], [])
    await run_script(resource)
    (first, _), (second, _) = resource.list_calls
    assert second - first >= 0.3


async def test_an_informer_is_ready_while_its_type_is_not_served_and_lists_once_it_is() -> None:
    """Readiness on a fresh kcp: a type nobody imported yet (404) is nothing to wait for; a served one is."""
    not_served = APINotFoundError("the server could not find the requested resource", status=404, reason="NotFound")
    resource = ScriptedResource([not_served, not_served, page("5", "a")], [])
    informer = SharedInformer(resource, cluster="admin",  # type: ignore[arg-type]
                              options=ReflectorOptions(backoff_initial=0.01, backoff_cap=0.02, short_watch=0))
    seen: list[tuple[bool, bool]] = []
    scripted_list = resource.list

    async def list_and_note(**kwargs: Any) -> dict[str, Any]:
        seen.append((informer.has_synced, informer.synced_or_unserved))
        return await scripted_list(**kwargs)

    resource.list = list_and_note  # type: ignore[method-assign]
    task = spawn(informer.run(), name="informer")
    try:
        await asyncio.wait_for(resource.done.wait(), 5)
    finally:
        await cancel_and_wait(task)
    # before the first answer: served as far as we know, not listed, so not ready; after a 404: ready
    assert seen == [(False, False), (False, True), (False, True)]
    assert informer.has_synced and informer.synced_or_unserved and informer.reflector.served
    assert [o["metadata"]["name"] for o in informer.indexer.list()] == ["a"]


async def test_a_type_not_served_is_said_once_not_warned_at_every_retry() -> None:
    """An optional type (PodDisruptionBudgets before any SyncTarget imports them) must not fill the logs."""
    not_served = APINotFoundError("the server could not find the requested resource", status=404, reason="NotFound")
    resource = ScriptedResource([not_served, not_served, not_served, page("5", "a")], [])
    informer = SharedInformer(resource, cluster="admin",  # type: ignore[arg-type]
                              options=ReflectorOptions(backoff_initial=0.01, backoff_cap=0.02, short_watch=0))
    with capture_logs() as logs:
        task = spawn(informer.run(), name="informer")
        try:
            await asyncio.wait_for(resource.done.wait(), 5)
        finally:
            await cancel_and_wait(task)
    said = [(e["log_level"], e["event"]) for e in logs if "served" in e["event"] or "failed" in e["event"]]
    assert said == [("info", "type not served; following it until it is"),
                    ("debug", "type not served; following it until it is"),
                    ("debug", "type not served; following it until it is")]
    assert informer.has_synced and informer.reflector.served
