"""metav1.Time / MicroTime parsing: what Go's time.Parse accepts, how kube writes it back, Go's errors."""

from __future__ import annotations

import pytest

from kcp_apiserver.apimachinery.metatime import TimeParseError, normalize

TIME = '"2006-01-02T15:04:05Z07:00"'
MICRO = '"2006-01-02T15:04:05.000000Z07:00"'


@pytest.mark.parametrize(("value", "micro", "stored"), [
    ("2026-11-23T12:30:47.610947+00:00", False, "2026-11-23T12:30:47Z"),  # a Time keeps whole seconds
    ("2026-11-23T12:30:47.610947+00:00", True, "2026-11-23T12:30:47.610947Z"),
    ("2026-11-23T12:30:47.999999999Z", False, "2026-11-23T12:30:47Z"),  # truncated, never rounded
    ("2026-11-23T12:30:47,5Z", False, "2026-11-23T12:30:47Z"),  # Go reads a comma fraction too
    ("2026-01-01T01:00:00+02:00", False, "2025-12-31T23:00:00Z"),  # to UTC, across a year
    ("2024-02-29T23:59:59.000001-00:30", True, "2024-03-01T00:29:59.000001Z"),
    ("2026-11-23T1:30:47Z", False, "2026-11-23T01:30:47Z"),  # Go's hour takes one digit
    ("2026-11-23T12:30:47Z", False, "2026-11-23T12:30:47Z"),
])
def test_timestamps_are_written_back_in_utc_at_their_precision(value: str, micro: bool, stored: str) -> None:
    assert normalize(value, micro=micro) == stored


@pytest.mark.parametrize(("value", "micro", "message"), [
    ("garbage", False, f'parsing time "garbage" as {TIME}: cannot parse "garbage" as "2006"'),
    ("", False, f'parsing time "" as {TIME}: cannot parse "" as "2006"'),
    ("2026-11-23 12:30:47Z", False, f'parsing time "2026-11-23 12:30:47Z" as {TIME}: cannot parse " 12:30:47Z" as "T"'),
    ("2026-11-23T12:30:47", False, f'parsing time "2026-11-23T12:30:47" as {TIME}: cannot parse "" as "Z07:00"'),
    ("2026-11-23T12:30:47+0100", False,
     f'parsing time "2026-11-23T12:30:47+0100" as {TIME}: cannot parse "+0100" as "Z07:00"'),
    ("2026-13-01T00:00:00Z", False, 'parsing time "2026-13-01T00:00:00Z": month out of range'),
    ("2026-02-29T00:00:00Z", False, 'parsing time "2026-02-29T00:00:00Z": day out of range'),
    ("2026-11-23T24:00:00Z", False, 'parsing time "2026-11-23T24:00:00Z": hour out of range'),
    ("2026-11-23T12:30:47Zjunk", False, 'parsing time "2026-11-23T12:30:47Zjunk": extra text: "junk"'),
    # a MicroTime needs exactly six fraction digits, as kube's RFC3339Micro layout says
    ("2026-11-23T12:30:47Z", True, f'parsing time "2026-11-23T12:30:47Z" as {MICRO}: cannot parse "Z" as ".000000"'),
    ("2026-11-23T12:30:47.61Z", True,
     f'parsing time "2026-11-23T12:30:47.61Z" as {MICRO}: cannot parse ".61Z" as ".000000"'),
    ("2026-11-23T12:30:47.6109479Z", True,
     f'parsing time "2026-11-23T12:30:47.6109479Z" as {MICRO}: cannot parse "9Z" as "Z07:00"'),
    ("zeit\u00e9", False, f'parsing time "zeit\\xc3\\xa9" as {TIME}: cannot parse "zeit\\xc3\\xa9" as "2006"'),
])
def test_what_go_cannot_parse_fails_with_gos_message(value: str, micro: bool, message: str) -> None:
    with pytest.raises(TimeParseError) as caught:
        normalize(value, micro=micro)
    assert str(caught.value) == message
