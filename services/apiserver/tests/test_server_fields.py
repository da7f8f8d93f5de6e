"""Server-set metadata helpers: uids are RFC 4122 version-4 UUIDs, timestamps are kube's RFC 3339."""

from __future__ import annotations

import re
import time
import uuid

from kcp_apiserver.registry.store import new_uid, now_rfc3339


def test_uids_are_distinct_version_4_uuids() -> None:
    uids = [new_uid() for _ in range(5000)]
    assert len(set(uids)) == len(uids)
    for text in uids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_timestamps_are_utc_seconds_and_follow_the_clock() -> None:
    first = now_rfc3339()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first)
    assert first == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) or first < now_rfc3339()
    time.sleep(1.05)
    assert now_rfc3339() > first
