"""Quality gates that `make test` enforces: the layers of the request path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[1]


def test_imports_keep_to_the_layers_of_the_request_path() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports), str(SERVICE / "pyproject.toml")], capture_output=True, text=True,
                            timeout=120, cwd=SERVICE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
