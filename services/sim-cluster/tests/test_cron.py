"""The CronJob controller's schedule parser."""

from __future__ import annotations

import datetime as dt

import pytest

from kcp_sim_cluster.controlplane.cron import CronError, parse

T0 = dt.datetime(2026, 11, 24, 10, 7, 30, tzinfo=dt.UTC)  # a Tuesday


@pytest.mark.parametrize(("schedule", "expected"), [
    ("* * * * *", dt.datetime(2026, 11, 24, 10, 8, tzinfo=dt.UTC)),
    ("*/15 * * * *", dt.datetime(2026, 11, 24, 10, 15, tzinfo=dt.UTC)),
    ("0 * * * *", dt.datetime(2026, 11, 24, 11, 0, tzinfo=dt.UTC)),
    ("30 9 * * *", dt.datetime(2026, 11, 25, 9, 30, tzinfo=dt.UTC)),
    ("0 0 1 * *", dt.datetime(2026, 12, 1, 0, 0, tzinfo=dt.UTC)),
    ("0 12 * * mon-fri", dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)),
    ("0 0 * * SUN", dt.datetime(2026, 11, 29, 0, 0, tzinfo=dt.UTC)),
    ("0 0 * * 7", dt.datetime(2026, 11, 29, 0, 0, tzinfo=dt.UTC)),
    ("5,10 10 * jan,nov *", dt.datetime(2026, 11, 24, 10, 10, tzinfo=dt.UTC)),
    ("@hourly", dt.datetime(2026, 11, 24, 11, 0, tzinfo=dt.UTC)),
    ("@yearly", dt.datetime(2027, 1, 1, 0, 0, tzinfo=dt.UTC)),
    ("CRON_TZ=UTC 0 0 * * *", dt.datetime(2026, 11, 25, 0, 0, tzinfo=dt.UTC)),
    ("0 0 13 * 5", dt.datetime(2026, 11, 27, 0, 0, tzinfo=dt.UTC)),  # day of month OR day of week
])
def test_next_firing_time(schedule: str, expected: dt.datetime) -> None:
    assert parse(schedule).next_after(T0) == expected


def test_a_schedule_that_never_fires_has_no_next_time() -> None:
    assert parse("0 0 30 2 *").next_after(T0) is None


@pytest.mark.parametrize("schedule", ["* * * *", "61 * * * *", "* * * * * *", "a * * * *", "5-1 * * * *",
                                      "*/0 * * * *", "@sometimes"])
def test_invalid_schedules_are_refused(schedule: str) -> None:
    with pytest.raises(CronError):
        parse(schedule)


def test_schedules_are_read_in_their_time_zone() -> None:
    # 09:00 in New York (UTC-5 in November) is 14:00 UTC
    assert parse("0 9 * * *", "America/New_York").next_after(T0) == dt.datetime(2026, 11, 24, 14, 0, tzinfo=dt.UTC)
    assert parse("CRON_TZ=Europe/Paris 0 12 * * *").next_after(T0) == dt.datetime(2026, 11, 24, 11, 0,
                                                                                  tzinfo=dt.UTC)
    with pytest.raises(CronError):
        parse("0 9 * * *", "Mars/Olympus_Mons")
