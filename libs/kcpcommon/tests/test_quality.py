"""Quality gates that `make test` enforces: kcpcommon is `mypy --strict` clean and ruff clean.

The repository has no ruff configuration yet, so the rules are spelled out here;
the line length and first-party modules are the project's, so import sorting and
wrapping agree with the code as written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]  # libs/kcpcommon
PACKAGE = LIBRARY / "kcpcommon"

RUFF = ["check", "--no-cache", "--target-version", "py311", "--line-length", "120",
        "--select", "E,F,W,I,UP,B,ASYNC,RUF", "--ignore", "E501",
        "--config", "lint.isort.known-first-party = ['kcpcommon', 'kcp_process']"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=LIBRARY, capture_output=True, text=True, timeout=240,
                          check=False)


def test_the_package_is_mypy_strict_clean(tmp_path: Path) -> None:
    result = run("mypy", "--strict", "--cache-dir", str(tmp_path / "mypy-cache"), str(PACKAGE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_the_package_and_its_tests_are_ruff_clean() -> None:
    result = run("ruff", *RUFF, str(LIBRARY))
    assert result.returncode == 0, result.stdout + result.stderr
