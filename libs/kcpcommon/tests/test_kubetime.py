"""metav1.Time and MicroTime text, written and read back."""

from datetime import UTC, datetime, timedelta, timezone

from kcpcommon.kubetime import format_micro_time, format_time, parse_time


def test_time_is_whole_seconds_in_utc() -> None:
    when = datetime(2026, 11, 27, 22, 3, 9, 500000, tzinfo=timezone(timedelta(hours=1)))
    assert format_time(when) == "2026-11-27T21:03:09Z"
    assert format_micro_time(when) == "2026-11-27T21:03:09.500000Z"
    assert format_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"  # naive: taken as UTC


def test_now_when_no_time_is_given() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    assert before <= parse_time(format_time()) <= datetime.now(UTC)  # type: ignore[operator]


def test_parse_reads_what_kube_writes_and_tolerates_the_rest() -> None:
    assert parse_time("2026-11-27T21:03:09Z") == datetime(2026, 11, 27, 21, 3, 9, tzinfo=UTC)
    assert parse_time("2026-11-27T21:03:09.123456Z") == datetime(2026, 11, 27, 21, 3, 9, 123456, tzinfo=UTC)
    assert parse_time("2026-11-27T22:03:09+01:00") == datetime(2026, 11, 27, 21, 3, 9, tzinfo=UTC)
    assert parse_time("2026-11-27T21:03:09") == datetime(2026, 11, 27, 21, 3, 9, tzinfo=UTC)
    for unreadable in (None, "", "yesterday", 17, {"x": 1}):
        assert parse_time(unreadable) is None
