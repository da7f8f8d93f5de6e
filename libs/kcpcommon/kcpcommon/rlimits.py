"""The open-files limit raised to its hard maximum at start, as Go's runtime does since Go 1.19.

Most systems start a process with a soft RLIMIT_NOFILE of 1,024 (a limit kept for select(), which no
asyncio loop here uses) under a much larger hard one. A daemon that serves or holds many connections
would then run out of descriptors long before memory or CPU, and every accept() or connect() fails.
"""

from __future__ import annotations

import resource

import structlog

log = structlog.get_logger("kcpcommon.rlimits")


def raise_open_files_limit() -> int:
    """Set the soft RLIMIT_NOFILE to the hard one; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == hard:
        return soft  # unbounded hard limits are refused by Linux (nr_open caps them): leave it as it is
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the open-files limit", soft=soft, hard=hard, error=str(exc))
        return soft
    return hard
