"""scripts/dockerd.sh, run against a fake dockerd: the daemon it starts keeps to the project's own directories and
leaves the host's network rules alone, and `stop` ends exactly the process its pidfile names."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from repo_layout import REPO

SCRIPT = REPO / "scripts" / "dockerd.sh"

# a dockerd that records its flags, writes its pidfile and sleeps; a docker that answers while that process lives
FAKE_DOCKERD = """#!/bin/sh
echo "$@" > "$FAKE_ARGS"
while [ $# -gt 0 ]; do [ "$1" = --pidfile ] && echo $$ > "$2"; shift; done
exec sleep 300
"""
FAKE_DOCKER = """#!/bin/sh
pid=$(cat "$KCP_DOCKERD_ROOT/dockerd.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null
"""


def run(root: Path, bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "KCP_DOCKERD_ROOT": str(root),
           "FAKE_ARGS": str(root.parent / "args")}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60, env=env)


def test_start_keeps_to_its_own_directories_and_stop_ends_it_by_pid(tmp_path: Path) -> None:
    bin_dir, root = tmp_path / "bin", tmp_path / "docker"
    bin_dir.mkdir()
    for name, text in (("dockerd", FAKE_DOCKERD), ("docker", FAKE_DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    assert run(root, bin_dir, "status").returncode != 0

    started = run(root, bin_dir, "start")
    assert started.returncode == 0, started.stderr
    pid = int((root / "dockerd.pid").read_text())
    flags = (tmp_path / "args").read_text().split()
    for flag, value in (("--data-root", root / "data"), ("--exec-root", root / "exec"),
                        ("--pidfile", root / "dockerd.pid"), ("--host", f"unix://{root}/docker.sock")):
        assert flags[flags.index(flag) + 1] == str(value), flag
    for rule in ("--iptables=false", "--ip6tables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none"):
        assert rule in flags
    assert run(root, bin_dir, "env").stdout.strip() == f"export DOCKER_HOST=unix://{root}/docker.sock"
    assert run(root, bin_dir, "start").returncode == 0 and int((root / "dockerd.pid").read_text()) == pid

    stopped = run(root, bin_dir, "stop")
    assert stopped.returncode == 0, stopped.stderr
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
        assert time.monotonic() < deadline, "the fake dockerd outlived `stop`"
        time.sleep(0.1)
    assert not (root / "dockerd.pid").exists()
    assert run(root, bin_dir, "status").returncode != 0
