"""Server-set metadata helpers: uids are RFC 4122 version-4 UUIDs, timestamps are kube's RFC 3339."""

from __future__ import annotations

import re
import time
import types
import uuid

import pytest

from kcp_apiserver.registry import store
from kcp_apiserver.registry.store import new_uid, now_rfc3339


def test_uids_are_distinct_version_4_uuids() -> None:
    uids = [new_uid() for _ in range(5000)]
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_timestamps_are_utc_seconds_and_follow_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_700_000_000.25]
    clock = types.SimpleNamespace(time=lambda: now[0], gmtime=time.gmtime, strftime=time.strftime)
    monkeypatch.setattr(store, "time", clock)  # the module's view of time only
    assert store.now_rfc3339() == "2023-11-14T22:13:20Z"
    now[0] += 0.7
    assert store.now_rfc3339() == "2023-11-14T22:13:20Z"  # the same second
    now[0] += 0.1
    assert store.now_rfc3339() == "2023-11-14T22:13:21Z"  # the next one
    now[0] += 86_400 * 40
    assert store.now_rfc3339() == "2023-12-24T22:13:21Z"


def test_timestamps_use_the_real_clock() -> None:
    before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    stamp = now_rfc3339()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    assert before <= stamp <= time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
