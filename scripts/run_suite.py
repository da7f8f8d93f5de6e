#!/usr/bin/env python3
"""`make run`: the whole suite on this machine, stopped together by Ctrl-C.

kcp-apiserver (embedded etcd), kcp-cluster-controller (push mode), kcp-deployment-splitter and,
unless --sims 0, that many kcp-sim-cluster processes registered in kcp as SyncTargets sim-1, sim-2...
Every port is checked before anything starts: one in use is named and nothing is left running.
If any process exits, or on SIGINT/SIGTERM, every process started is stopped (SIGTERM, then
SIGKILL after a grace period), last started first. Logs go to <root-dir>/logs/<name>.log.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import register_sync_targets  # noqa: E402  (beside this script)


class Stop(Exception):
    """Stop the suite: a signal, a process that exited, a port in use; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# How to run a service whose console script is not installed (a checkout on PYTHONPATH, as the tests run it)
MODULES = {"kcp-apiserver": "kcp_apiserver.server.cli", "kcp-sim-cluster": "kcp_sim_cluster",
           "kcp-cluster-controller": "kcp_cluster_controller", "kcp-deployment-splitter": "kcp_deployment_splitter"}


def console_script(name: str) -> list[str]:
    """The console script beside this interpreter (the venv's), else on PATH, else its module."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return [str(beside)]
    found = shutil.which(name)
    if found:
        return [found]
    if importlib.util.find_spec(MODULES[name]) is None:
        raise Stop(f"{name} is not installed: run `make install`")
    return [sys.executable, "-m", MODULES[name]]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


@dataclass
class Suite:
    root: Path
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / f"{name}.log", "ab") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                       start_new_session=True)  # Ctrl-C reaches this script only: it stops them in order
        self.processes.append((name, process))
        print(f"started {name} (pid {process.pid}), log: {logs / f'{name}.log'}", flush=True)
        return process

    def check(self) -> None:
        for name, process in self.processes:
            if process.poll() is not None:
                raise Stop(f"{name} exited with status {process.returncode}; its log:\n{self.tail(name)}")

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.root / "logs" / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join("    " + line for line in text.splitlines()[-lines:])

    def stop(self, grace: float = 20.0) -> None:
        for _, process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for name, process in reversed(self.processes):
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            print(f"stopped {name} (pid {process.pid})", flush=True)


def wait_ready(suite: Suite, name: str, url: str, ca: Path, timeout: float) -> None:
    """Until `url` answers 200, with the server's own CA; a process that exits stops the wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        suite.check()
        if ca.exists():
            try:
                context = ssl.create_default_context(cafile=str(ca))
                with urllib.request.urlopen(url, context=context, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (OSError, ssl.SSLError):
                pass
        time.sleep(0.3)
    raise Stop(f"{name} not ready after {timeout:.0f}s; its log:\n{suite.tail(name)}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="kcp's whole suite on this machine (Ctrl-C stops all)")
    parser.add_argument("--root-dir", type=Path, default=Path(".kcp"))
    parser.add_argument("--port", type=int, default=6443, help="kcp-apiserver's --secure-port")
    parser.add_argument("--sims", type=int, default=2, help="simulated clusters registered as SyncTargets (0: none)")
    parser.add_argument("--sim-port", type=int, default=7443, help="first sim cluster's port; the next count up")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for each server to become ready")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, suite: Suite) -> None:
    root = args.root_dir.resolve()
    sims = [(f"sim-{i + 1}", args.sim_port + i) for i in range(args.sims)]
    wanted = [("kcp-apiserver", args.port)] + [(f"kcp-sim-cluster {name}", port) for name, port in sims]
    for owner, port in wanted:
        if port_in_use(port):
            raise Stop(f"port {port} is in use ({owner} would serve on it): stop what holds it, or choose "
                       "another port (make run PORT=... SIM_PORT=...)")
    suite.start("kcp-apiserver", [*console_script("kcp-apiserver"), "--root-dir", str(root),
                                  "--secure-port", str(args.port)])
    for name, port in sims:
        suite.start(name, [*console_script("kcp-sim-cluster"), "--root-dir", str(root / name), "--name", name,
                           "--secure-port", str(port), "--nodes", "3"])
    wait_ready(suite, "kcp-apiserver", f"https://127.0.0.1:{args.port}/readyz", root / "ca.crt", args.timeout)
    kubeconfig = root / "admin.kubeconfig"
    suite.start("kcp-cluster-controller", [*console_script("kcp-cluster-controller"), "--kubeconfig", str(kubeconfig),
                                           "--syncer-mode", "push"])
    suite.start("kcp-deployment-splitter", [*console_script("kcp-deployment-splitter"), "--kubeconfig",
                                            str(kubeconfig)])
    for name, port in sims:
        wait_ready(suite, name, f"https://127.0.0.1:{port}/readyz", root / name / "ca.crt", args.timeout)
    if sims:
        register_sync_targets.main(["--kubeconfig", str(kubeconfig), "--timeout", str(args.timeout),
                                    *[f"--target={name}={root / name / 'admin.kubeconfig'}" for name, _ in sims]])
    print(f"kcp is running. In another shell:\n  export KUBECONFIG={kubeconfig}\n"
          "  kubectl get synctargets        # contexts: admin (default), user, cross-cluster\n"
          "Ctrl-C stops everything.", flush=True)
    while True:
        suite.check()
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    suite = Suite(args.root_dir.resolve())

    def on_signal(signum: int, _frame: object) -> None:
        raise Stop(f"{signal.Signals(signum).name}: stopping", code=0)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    code = 0
    try:
        run(args, suite)
    except Stop as stop:
        print(str(stop), file=sys.stderr if stop.code else sys.stdout, flush=True)
        code = stop.code
    except SystemExit as exit_:  # register_sync_targets gave up
        print(exit_.code, file=sys.stderr, flush=True)
        code = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        suite.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
