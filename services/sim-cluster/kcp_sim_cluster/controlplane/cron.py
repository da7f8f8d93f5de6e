"""Standard five-field cron schedules (minute hour day-of-month month day-of-week), as the CronJob
controller reads them (robfig/cron's standard parser): lists, ranges, steps, `*`, `?`, month and
weekday names, the `@hourly`-style macros, and an optional `CRON_TZ=`/`TZ=` prefix. Times are read in
the schedule's time zone (the CronJob's `timeZone`, else the prefix, else UTC).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, _MONTHS),
           ("day of week", 0, 6, _DAYS))
SEARCH_YEARS = 5  # a schedule that never fires (Feb 30) gives up after this long


class CronError(ValueError):
    """A schedule kube would refuse."""


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool  # day of month was `*`
    any_weekday: bool  # day of week was `*`
    zone: dt.tzinfo = field(default=dt.UTC)

    def _day_matches(self, when: dt.datetime) -> bool:
        weekday = (when.weekday() + 1) % 7  # Python: Monday 0; cron: Sunday 0
        dom, dow = when.day in self.days, weekday in self.weekdays
        if self.any_day or self.any_weekday:  # cron: either restricted field alone decides
            return dom and dow
        return dom or dow

    def next_after(self, after: dt.datetime) -> dt.datetime | None:
        """The first time strictly after `after` (to the minute) the schedule fires, in UTC."""
        found = self._next_local(after.astimezone(self.zone).replace(tzinfo=None))
        return found.replace(tzinfo=self.zone).astimezone(dt.UTC) if found is not None else None

    def _next_local(self, after: dt.datetime) -> dt.datetime | None:
        """The search on the zone's wall clock (naive times)."""
        when = after.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        limit = when + dt.timedelta(days=366 * SEARCH_YEARS)
        while when < limit:
            if when.month not in self.months:
                when = (when.replace(day=1, hour=0, minute=0) + dt.timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(when):
                when = when.replace(hour=0, minute=0) + dt.timedelta(days=1)
                continue
            if when.hour not in self.hours:
                when = when.replace(minute=0) + dt.timedelta(hours=1)
                continue
            if when.minute not in self.minutes:
                when += dt.timedelta(minutes=1)
                continue
            return when
        return None


def _value(text: str, low: int, high: int, names: dict[str, int], name: str) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    try:
        value = int(text)
    except ValueError:
        raise CronError(f"failed to parse int from {text}: strconv.Atoi: parsing {text!r}: invalid syntax") from None
    if name == "day of week" and value == 7:
        value = 0
    if not low <= value <= high:
        raise CronError(f"end of range ({value}) above maximum ({high}): {text}" if value > high
                        else f"beginning of range ({value}) below minimum ({low}): {text}")
    return value


def _field(text: str, low: int, high: int, names: dict[str, int], name: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        expr, _, step_text = part.partition("/")
        step = 1
        if step_text:
            try:
                step = int(step_text)
            except ValueError:
                raise CronError(f"failed to parse int from {step_text}") from None
            if step <= 0:
                raise CronError(f"step of range should be a positive number: {part}")
        if expr in ("*", "?"):
            start, end = low, high
        elif "-" in expr:
            a, _, b = expr.partition("-")
            start, end = _value(a, low, high, names, name), _value(b, low, high, names, name)
            if start > end:
                raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {part}")
        else:
            start = _value(expr, low, high, names, name)
            end = high if step_text else start
        values.update(range(start, end + 1, step))
    return frozenset(values)


def zone(name: str) -> dt.tzinfo:
    """A time zone by its IANA name; raises CronError for one the system does not know."""
    if not name or name == "UTC":
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown time zone {name}") from None


def parse(schedule: str, time_zone: str = "") -> Schedule:
    """A schedule, read in `time_zone` (a CronJob's spec.timeZone; else a CRON_TZ= prefix; else UTC)."""
    text = schedule.strip()
    prefix_zone = ""
    if text.startswith(("CRON_TZ=", "TZ=")):
        prefix, _, text = text.partition(" ")
        prefix_zone = prefix.partition("=")[2]
        text = text.strip()
    if text.startswith("@"):
        if text not in _MACROS:
            raise CronError(f"unrecognized descriptor: {text}")
        text = _MACROS[text]
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(parts)}: [{' '.join(parts)}]")
    minutes, hours, days, months, weekdays = (
        _field(p, low, high, names, name) for p, (name, low, high, names) in zip(parts, _FIELDS, strict=True))
    return Schedule(minutes, hours, days, months, weekdays, any_day=parts[2] in ("*", "?"),
                    any_weekday=parts[4] in ("*", "?"), zone=zone(time_zone or prefix_zone))
