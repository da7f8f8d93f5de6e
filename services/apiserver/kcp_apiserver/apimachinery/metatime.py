"""metav1.Time and metav1.MicroTime as kube reads and writes them in JSON.

kube decodes a Time with Go's `time.Parse(time.RFC3339, s)` and a MicroTime with the layout
`2006-01-02T15:04:05.000000Z07:00` (exactly six fraction digits), then writes both back in UTC:
Time as whole seconds (`2026-11-23T12:30:47Z`), MicroTime with microseconds
(`2026-11-23T12:30:47.610947Z`); extra precision is truncated. A string Go refuses is a decode error
whose text clients see, so the parser walks the layout element by element as Go's does and fails
with Go's messages (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`).
"""

from __future__ import annotations

import re

TIME_LAYOUT = "2006-01-02T15:04:05Z07:00"
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"

# (literal prefix, layout element) pairs, as Go's nextStdChunk splits the two layouts
_TIME_CHUNKS = (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", "Z07:00"))
_MICRO_CHUNKS = (*_TIME_CHUNKS[:6], ("", ".000000"), ("", "Z07:00"))
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class TimeParseError(ValueError):
    """A timestamp Go's time.Parse refuses; str() is Go's message."""


def _quote(raw: bytes) -> str:
    """Go's time.quote: printable ASCII as is (with \\" and \\\\ escaped), every other byte as \\xHH."""
    out = ['"']
    for byte in raw:
        if byte < 0x20 or byte >= 0x80:
            out.append(f"\\x{byte:02x}")
        elif byte in (0x22, 0x5C):
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


def _digit(raw: bytes, i: int) -> bool:
    return i < len(raw) and 0x30 <= raw[i] <= 0x39


def _getnum(raw: bytes, fixed: bool) -> tuple[int, bytes] | None:
    """Go's getnum: one or two digits (exactly two when fixed)."""
    if not _digit(raw, 0):
        return None
    if not _digit(raw, 1):
        return None if fixed else (raw[0] - 0x30, raw[1:])
    return (raw[0] - 0x30) * 10 + raw[1] - 0x30, raw[2:]


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


# kube's stored form, with a day every month has: read directly, without walking the layout (most values).
_CANONICAL = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_STORED_TIME = re.compile(_CANONICAL + "Z")
_STORED_MICRO = re.compile(_CANONICAL + r"\.[0-9]{6}Z")


def parse(value: str, *, micro: bool) -> tuple[int, int]:
    """Unix seconds and nanoseconds of a Time (micro=False) or MicroTime string, or TimeParseError."""
    if (_STORED_MICRO if micro else _STORED_TIME).fullmatch(value):
        days = _days_from_civil(int(value[0:4]), int(value[5:7]), int(value[8:10]))
        seconds = days * 86400 + int(value[11:13]) * 3600 + int(value[14:16]) * 60 + int(value[17:19])
        return seconds, int(value[20:26]) * 1000 if micro else 0
    layout = MICRO_LAYOUT if micro else TIME_LAYOUT
    whole = value.encode()
    rest = whole
    fields = {"year": 0, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0, "nanos": 0, "offset": 0}

    def bad(at: bytes, element: str) -> TimeParseError:
        return TimeParseError(f"parsing time {_quote(whole)} as {_quote(layout.encode())}: cannot parse "
                              f"{_quote(at)} as {_quote(element.encode())}")

    def out_of_range(what: str) -> TimeParseError:
        return TimeParseError(f"parsing time {_quote(whole)}: {what} out of range")

    for prefix, element in (_MICRO_CHUNKS if micro else _TIME_CHUNKS):
        if prefix:
            if not rest.startswith(prefix.encode()):
                raise bad(rest, prefix)
            rest = rest[len(prefix):]
        hold = rest
        if element == "2006":
            if len(rest) < 4 or not all(_digit(rest, i) for i in range(4)):
                raise bad(hold, element)
            fields["year"], rest = int(rest[:4]), rest[4:]
            continue
        if element == ".000000":
            if len(rest) < 7 or rest[0] not in b".," or not all(_digit(rest, i) for i in range(1, 7)):
                raise bad(hold, element)
            fields["nanos"], rest = int(rest[1:7]) * 1000, rest[7:]
            continue
        if element == "Z07:00":
            zone = _zone(rest)
            if zone is None:
                raise bad(hold, element)
            if isinstance(zone, str):
                raise out_of_range(zone)
            rest, fields["offset"] = zone
            continue
        got = _getnum(rest, fixed=element != "15")
        if got is None:
            raise bad(hold, element)
        number, rest = got
        name, limit = {"01": ("month", 13), "02": ("day", 100), "15": ("hour", 24), "04": ("minute", 60),
                       "05": ("second", 60)}[element]
        if number >= limit or (name == "month" and number == 0):
            raise out_of_range(name)
        fields[name] = number
        if element == "05" and not micro and len(rest) >= 2 and rest[0] in b".," and _digit(rest, 1):
            # a fraction the layout does not name is still read (up to nanoseconds), as Go does
            n = 1
            while _digit(rest, n):
                n += 1
            fields["nanos"] = int(rest[1:min(n, 10)].ljust(9, b"0"))
            rest = rest[n:]
    if rest:
        raise TimeParseError(f"parsing time {_quote(whole)}: extra text: {_quote(rest)}")
    month, year = fields["month"], fields["year"]
    days_in_month = 29 if month == 2 and _leap(year) else _DAYS_IN_MONTH[month - 1]
    if not 1 <= fields["day"] <= days_in_month:
        raise out_of_range("day")
    seconds = (_days_from_civil(year, month, fields["day"]) * 86400 + fields["hour"] * 3600
               + fields["minute"] * 60 + fields["second"] - fields["offset"])
    return seconds, fields["nanos"]


def _zone(rest: bytes) -> tuple[bytes, int] | str | None:
    """`Z07:00`: a literal Z, or ±hh:mm (Go allows offsets up to 24:60). The rest and the offset in
    seconds, the name of a field out of range, or None when Go cannot parse it."""
    if rest[:1] == b"Z":
        return rest[1:], 0
    if len(rest) < 6 or rest[3:4] != b":":
        return None
    hours, minutes = _getnum(rest[1:3], fixed=True), _getnum(rest[4:6], fixed=True)
    if hours is None or minutes is None:
        return None
    if hours[0] > 24:
        return "time zone offset hour"
    if minutes[0] > 60:
        return "time zone offset minute"
    if rest[:1] not in (b"+", b"-"):
        return None
    offset = (hours[0] * 60 + minutes[0]) * 60
    return rest[6:], offset if rest[:1] == b"+" else -offset


def format_time(seconds: int, nanos: int = 0, *, micro: bool) -> str:
    """Unix seconds (and nanoseconds) as kube writes a Time or MicroTime: UTC, truncated."""
    days, rest = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    if micro:
        text += f".{nanos // 1000:06d}"
    return text + "Z"


def normalize(value: str, *, micro: bool) -> str:
    """A Time or MicroTime string as kube stores it after decoding it (TimeParseError if Go refuses it)."""
    if (_STORED_MICRO if micro else _STORED_TIME).fullmatch(value):
        return value
    seconds, nanos = parse(value, micro=micro)
    return format_time(seconds, nanos, micro=micro)


__all__ = ["MICRO_LAYOUT", "TIME_LAYOUT", "TimeParseError", "format_time", "normalize", "parse"]
