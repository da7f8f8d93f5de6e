"""mypy for the quality tests: one shared cache, used by one run at a time.

Every package's check shares one cache (kcpcommon and the apiserver are read once, not once per package); when
pytest-xdist runs two checks at once, an exclusive lock on the cache keeps them from writing it together.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".mypy_cache"


def mypy(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / "kcp-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE), *map(str, args)],
                              capture_output=True, text=True, timeout=300, cwd=cwd, env=env or dict(os.environ))
