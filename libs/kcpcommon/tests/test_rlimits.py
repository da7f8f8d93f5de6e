"""A daemon starts with its soft open-files limit raised to the hard one, as Go programs do."""

from __future__ import annotations

import subprocess
import sys

RAISE = ("import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (64, 128)); "
         "from kcpcommon.rlimits import raise_open_files_limit; print(raise_open_files_limit(), "
         "*resource.getrlimit(resource.RLIMIT_NOFILE))")


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    # in a child process: a process cannot lower its hard limit and raise it back
    out = subprocess.run([sys.executable, "-c", RAISE], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["128", "128", "128"]

