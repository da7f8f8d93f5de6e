"""Watch-list (sendInitialEvents): the initial state, a bookmark that ends it, then changes; kube's
ListOptions rules; and kubectl 1.35, whose deletes and waits depend on that bookmark."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from typing import Any

import aiohttp
import pytest

from api import Api, configmap
from kcp_process import KcpServer, kubectl_1_35, run_kubectl

CM = "/api/v1/namespaces/{ns}/configmaps"
WATCH_LIST = {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": "true"}
INITIAL_EVENTS_END = {"k8s.io/initial-events-end": "true"}


async def raw_lines(api: Api, path: str, params: dict[str, str], count: int, timeout: float = 10) -> list[bytes]:
    """The first `count` lines of a watch response, as the server wrote them."""
    lines: list[bytes] = []

    async def read() -> None:
        async with api.session.get(api.server.url + path, params={**params, "watch": "1"},
                                   headers={"Authorization": f"Bearer {api.token}"}, ssl=api.server.ssl_context(),
                                   timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
            assert resp.status == 200, await resp.text()
            async for line in resp.content:
                lines.append(line)
                if len(lines) == count:
                    return

    await asyncio.wait_for(read(), timeout)
    return lines


async def test_a_watch_list_sends_the_state_then_a_bookmark_ending_it_then_changes(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    created = [(await api.post(path, configmap(name))).body for name in ("a", "b")]
    newest = max(int(c["metadata"]["resourceVersion"]) for c in created)
    lines: list[bytes] = []
    async with api.session.get(api.server.url + path, params={**WATCH_LIST, "watch": "1"},
                               headers={"Authorization": f"Bearer {api.token}"}, ssl=api.server.ssl_context(),
                               timeout=aiohttp.ClientTimeout(total=10)) as resp:
        assert resp.status == 200
        while len(lines) < 3:
            lines.append(await resp.content.readline())
        await api.post(path, configmap("c"))  # written once the initial events are out: a change
        lines.append(await resp.content.readline())
    events = [json.loads(line) for line in lines]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
        ("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None), ("ADDED", "c")]
    bookmark = events[2]["object"]
    assert bookmark["kind"] == "ConfigMap" and bookmark["apiVersion"] == "v1"
    assert bookmark["metadata"]["annotations"] == INITIAL_EVENTS_END
    assert int(bookmark["metadata"]["resourceVersion"]) >= newest  # a consistent read: it includes every write
    assert b'"annotations":{"k8s.io/initial-events-end":"true"}' in lines[2]  # on the wire, as client-go reads it
    assert int(events[3]["object"]["metadata"]["resourceVersion"]) > int(bookmark["metadata"]["resourceVersion"])


async def test_a_watch_list_from_a_resource_version_includes_it_and_only_bookmarks_when_allowed(
        api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    rv = (await api.post(path, configmap("only"))).body["metadata"]["resourceVersion"]
    events = [json.loads(line) for line in await raw_lines(api, path, {**WATCH_LIST, "resourceVersion": rv}, 2)]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "only"
    assert events[1]["type"] == "BOOKMARK" and int(events[1]["object"]["metadata"]["resourceVersion"]) >= int(rv)
    without = {k: v for k, v in WATCH_LIST.items() if k != "allowWatchBookmarks"}
    reading = asyncio.create_task(raw_lines(api, path, without, 2))
    await asyncio.sleep(0.5)
    await api.post(path, configmap("next"))
    plain = [json.loads(line) for line in await reading]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in plain] == [("ADDED", "only"), ("ADDED", "next")]


async def test_send_initial_events_false_starts_after_the_current_state(api: Api, namespace: str) -> None:
    path = CM.format(ns=namespace)
    await api.post(path, configmap("before"))
    reading = asyncio.create_task(raw_lines(api, path, {**WATCH_LIST, "sendInitialEvents": "false"}, 1))
    await asyncio.sleep(0.5)
    await api.post(path, configmap("after"))
    (line,) = await reading
    assert json.loads(line)["object"]["metadata"]["name"] == "after"


@pytest.mark.parametrize(("params", "field", "message"), [
    ({"watch": "1", "sendInitialEvents": "true"}, "resourceVersionMatch",
     "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
    ({"watch": "1", "resourceVersionMatch": "NotOlderThan"}, "resourceVersionMatch",
     "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"),
    ({"sendInitialEvents": "true"}, "sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list"),
    ({"resourceVersionMatch": "Exact"}, "resourceVersionMatch",
     "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ({"resourceVersionMatch": "Exact", "resourceVersion": "0"}, "resourceVersionMatch",
     'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
])
async def test_invalid_list_options_are_kubes_422_on_list_options(api: Api, namespace: str, params: dict[str, str],
                                                                  field: str, message: str) -> None:
    reply = await api.get(CM.format(ns=namespace), params=params)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == f'ListOptions.meta.k8s.io "" is invalid: {field}: {message}'
    assert reply.body["details"]["causes"][0] == {"reason": "FieldValueForbidden", "message": message, "field": field}


async def test_an_unsupported_match_and_a_non_boolean_are_refused(api: Api, namespace: str) -> None:
    exact = await api.get(CM.format(ns=namespace), params={"watch": "1", "sendInitialEvents": "true",
                                                           "resourceVersionMatch": "Exact"})
    assert exact.status == 422
    assert exact.body["details"]["causes"] == [
        {"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
         "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
        {"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
         "message": 'Unsupported value: "Exact": supported values: "NotOlderThan"'}]
    maybe = await api.get(CM.format(ns=namespace), params={"watch": "1", "sendInitialEvents": "maybe",
                                                           "resourceVersionMatch": "NotOlderThan"})
    assert maybe.status == 400 and maybe.body["reason"] == "BadRequest"


def kubectl_within(kcp: KcpServer, seconds: int, *args: str) -> tuple[str, float]:
    """Run kubectl 1.35 with --timeout; fail if it fails (kubectl gives up at its timeout)."""
    started = time.monotonic()
    result = subprocess.run([kubectl_1_35(), "--kubeconfig", str(kcp.kubeconfig), *args, f"--timeout={seconds}s"],
                            capture_output=True, text=True, timeout=seconds + 30, check=False)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, f"kubectl {' '.join(args)} failed after {elapsed:.1f}s:\n{result.stderr}"
    return result.stdout, elapsed


def test_kubectl_1_35_deletes_a_namespace_and_a_crd_without_hanging(kcp: KcpServer, unique: str) -> None:
    ns = f"gone-{unique}"
    run_kubectl(kcp, "create", "namespace", ns)
    run_kubectl(kcp, "-n", ns, "create", "configmap", "inside")
    out, elapsed = kubectl_within(kcp, 20, "delete", "namespace", ns)
    assert f'namespace "{ns}" deleted' in out and elapsed < 20
    missing = run_kubectl(kcp, "get", "namespace", ns, check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr

    group = f"del{unique}.example.com"
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    run_kubectl(kcp, "apply", "-f", "-", input_text=json.dumps(crd))
    kubectl_within(kcp, 20, "wait", "--for=condition=Established", f"crd/things.{group}")
    out, elapsed = kubectl_within(kcp, 20, "delete", "crd", f"things.{group}")
    assert f'"things.{group}" deleted' in out and elapsed < 20


def test_kubectl_1_35_wait_for_delete_returns_when_the_object_goes(kcp: KcpServer, unique: str) -> None:
    name = f"configmap/w-{unique}"
    run_kubectl(kcp, "-n", "default", "create", "configmap", f"w-{unique}")
    waiting = subprocess.Popen([kubectl_1_35(), "--kubeconfig", str(kcp.kubeconfig), "-v=6", "-n", "default",
                                "wait", "--for=delete", name, "--timeout=20s"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert waiting.stderr is not None
        watching = threading.Event()

        def follow_log() -> None:  # kubectl -v=6 logs each response as it arrives
            assert waiting.stderr is not None
            for line in waiting.stderr:
                if "sendInitialEvents=true" in line and "watch=true" in line:
                    watching.set()

        threading.Thread(target=follow_log, daemon=True).start()
        assert watching.wait(20), "kubectl never opened its watch-list"
        run_kubectl(kcp, "-n", "default", "delete", name, "--wait=false")
        out = waiting.communicate(timeout=30)[0]
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0
    assert f"{name} condition met" in out or "deleted" in out
