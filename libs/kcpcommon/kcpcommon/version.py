"""Each daemon's version, read from its installed distribution (the pyproject's `version`), never restated.

User-Agents (`kcp-syncer/0.1.0`) and logs name it; one source keeps them true after a release bump.
"""

from __future__ import annotations

import importlib.metadata

UNKNOWN = "0.0.0"  # a package run from a source tree without being installed


def package_version(distribution: str) -> str:
    """The installed version of `distribution` (e.g. "kcp-syncer"), or UNKNOWN when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN
