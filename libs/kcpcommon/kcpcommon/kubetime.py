"""kube's timestamps as text: metav1.Time (RFC 3339, whole seconds, UTC) and MicroTime (microseconds).

Every daemon writes conditions, Events and Leases with these, and reads them back to age or order
them; one module keeps the format (and the tolerance when reading) the same everywhere.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def format_time(when: datetime | None = None) -> str:
    """metav1.Time: `2026-11-27T21:03:09Z` (now when no time is given; naive times are taken as UTC)."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(when: datetime | None = None) -> str:
    """metav1.MicroTime: `2026-11-27T21:03:09.123456Z`, as Leases and events.k8s.io Events carry."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (fractions and offsets too) as an aware datetime, or None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _utc(when: datetime | None) -> datetime:
    if when is None:
        return datetime.now(UTC)
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
