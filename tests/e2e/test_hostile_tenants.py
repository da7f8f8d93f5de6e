"""One tenant's hostile input must not stall the server for the others (issue 29).

A CRD `pattern:` that backtracking engines take exponential time over (`^(a+)+$` against `a`*40 + `!`)
is matched in linear time, as kube's Go RE2 does: the writes are refused with kube's 422 and another
logical cluster keeps being served meanwhile.
"""

from __future__ import annotations

import asyncio

from test_crds import CRD_PATH, served, wait_established, widget, widget_crd

from api import Api, configmap

CATASTROPHIC = "^(a+)+$"
ANSWER_WITHIN = 5.0  # seconds: "answered at all", not a performance bound


async def test_a_catastrophic_pattern_neither_stalls_its_tenant_nor_others(api: Api, unique: str) -> None:
    hostile, calm = f"/clusters/hostile-{unique}", f"/clusters/calm-{unique}"
    group = f"h{unique}.example.com"
    crd = widget_crd(group, extra_props={"value": {"type": "string", "pattern": CATASTROPHIC}})
    assert (await api.post(f"{hostile}{CRD_PATH}", crd)).status == 201
    await wait_established(api, hostile, f"widgets.{group}")
    widgets = f"{hostile}/apis/{group}/v1/namespaces/default/widgets"
    await served(api, widgets)
    configmaps = f"{calm}/api/v1/namespaces/default/configmaps"
    assert (await api.post(configmaps, configmap("steady"))).status == 201

    async def hostile_writes() -> list[tuple[int, str]]:
        replies = []
        for i in range(5):
            reply = await asyncio.wait_for(
                api.post(widgets, widget(f"w{i}", group=group, value="a" * 40 + "!")), ANSWER_WITHIN)
            replies.append((reply.status, reply.body["message"]))
        return replies

    async def calm_reads(stop: asyncio.Event) -> int:
        answered = 0
        while not stop.is_set() or answered == 0:
            reply = await asyncio.wait_for(api.get(f"{configmaps}/steady"), ANSWER_WITHIN)
            assert reply.status == 200
            answered += 1
        return answered

    stop = asyncio.Event()
    reads = asyncio.create_task(calm_reads(stop))
    try:
        writes = await hostile_writes()
    finally:
        stop.set()
        answered = await reads
    assert answered >= 1
    value = "a" * 40 + "!"
    assert writes == [(422, f'Widget.{group} "w{i}" is invalid: spec.value: Invalid value: "{value}": '
                            f"spec.value in body should match '{CATASTROPHIC}'") for i in range(5)]


async def test_patterns_kube_refuses_refuse_the_crd_with_kube_wording(api: Api, unique: str) -> None:
    prefix, group = f"/clusters/lookahead-{unique}", f"l{unique}.example.com"
    crd = widget_crd(group, extra_props={"value": {"type": "string", "pattern": "^(?=a)b"}})
    reply = await api.post(f"{prefix}{CRD_PATH}", crd)
    assert reply.status == 422, reply.body
    assert ("spec.validation.openAPIV3Schema.properties[spec].properties[value].pattern: Invalid value: "
            "\"^(?=a)b\": must be a valid regular expression, but isn't: error parsing regexp: invalid or "
            "unsupported Perl syntax: `(?=`") in reply.body["message"]
