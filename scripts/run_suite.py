#!/usr/bin/env python3
"""`make run`: the whole suite on this machine, stopped together by Ctrl-C; `make stop` (--stop) stops it
from another shell.

kcp-apiserver (embedded etcd), kcp-cluster-controller (push mode), kcp-deployment-splitter and,
unless --sims 0, that many kcp-sim-cluster processes registered in kcp as SyncTargets sim-1, sim-2...
(registered again on every start, so a SyncTarget follows its sim to a new port).
Every port is checked before anything starts: one in use is named (with the suite holding it, if it
is one) and nothing is left running. One suite per root dir: `<root>/suite.lock` is held while it
runs and `<root>/suite.json` names its processes and ports, so a second start says what runs instead
of waiting on etcd's data lock, and --stop finds what to stop. If any process exits, or on
SIGINT/SIGTERM/SIGHUP or a hangup of its terminal (closed), every process started is stopped (SIGTERM, then SIGKILL
after a grace period), last started first. Logs go to <root-dir>/logs/<name>.log.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import importlib.util
import json
import os
import select
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
from typing import IO, Any

HERE = Path(__file__).resolve().parent
STATE = "suite.json"  # what runs: this script's pid, each process's name, pid and port
LOCK = "suite.lock"  # held (flock) by the running suite; released by the kernel however it ends


class Stop(Exception):
    """Stop the suite: a signal, a process that exited, a port in use; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def say(text: str, stream: IO[str] | None = None) -> None:
    """Print, unless the terminal is gone (closed: EIO; a pipe: EPIPE): stopping must go on without it."""
    stream = stream or sys.stdout
    try:
        print(text, file=stream, flush=True)
    except OSError:
        with contextlib.suppress(OSError):  # later prints and the exit-time flush go nowhere
            devnull = open(os.devnull, "w")  # lives until exit
            sys.stdout = sys.stderr = devnull


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


def started_at(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), so a reused pid is not taken for it; None: exited.
    Without /proc (not Linux) a live pid is trusted as is."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]  # a zombie has exited (its parent has not reaped it yet)


def alive(entry: dict[str, Any]) -> bool:
    now = started_at(int(entry["pid"]))
    return now is not None and (now == entry.get("started") or "" in (now, entry.get("started")))


def port_holder(port: int) -> int | None:
    """The pid listening on `port` (Linux: /proc/net/tcp* and the processes' fds); None when unknown."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    inodes.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
    return None


def suite_of(pid: int) -> Path | None:
    """The root dir of the suite that started `pid` (its parent is run_suite.py), if it was one."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        argv = Path(f"/proc/{parent}/cmdline").read_bytes().decode().split("\0")
        if any(arg.endswith("run_suite.py") for arg in argv):
            root = Path(argv[argv.index("--root-dir") + 1]) if "--root-dir" in argv else Path(".kcp")
            return Path(os.readlink(f"/proc/{parent}/cwd")) / root
    return None


def stop_hint(root: Path) -> str:
    return "make stop" if root == Path.cwd() / ".kcp" else f"make stop KCP_ROOT={root}"


def port_taken(port: int, owner: str) -> Stop:
    holder = port_holder(port)
    root = suite_of(holder) if holder else None
    if holder and root:
        said = f"port {port} is in use ({owner} would serve on it) by pid {holder} of the kcp suite under {root}: "
        return Stop(said + f"stop it ({stop_hint(root)}), or choose another port (make run PORT=... SIM_PORT=...)")
    by = f" by pid {holder}" if holder else ""
    return Stop(f"port {port} is in use ({owner} would serve on it){by}: stop what holds it, or choose "
                "another port (make run PORT=... SIM_PORT=...)")


def hung_up(fd: int) -> bool:
    """The terminal behind `fd` was closed (a hung-up tty polls as POLLHUP)."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP)
    return any(events & (select.POLLHUP | select.POLLERR) for _, events in poller.poll(0))


def die_with_parent() -> None:
    """In a child, before exec: SIGTERM when this script dies, even by SIGKILL (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


@dataclass
class Suite:
    root: Path
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    lock: IO[str] | None = None  # suite.lock, held while this suite runs
    # the terminal this runs in, watched for a hangup: when make is the session's leader (`ssh -t host make
    # run`), closing the terminal signals make alone, and make waits for its children
    terminal: int | None = field(default_factory=lambda: sys.stdout.fileno() if sys.stdout.isatty() else None)

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        preexec = die_with_parent if sys.platform == "linux" else None
        with open(logs / f"{name}.log", "ab") as log:
            process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                       start_new_session=True,  # Ctrl-C reaches this script only: it stops them in order
                                       preexec_fn=preexec)
        self.processes.append((name, process))
        self.record()
        say(f"started {name} (pid {process.pid}), log: {logs / f'{name}.log'}")
        return process

    def record(self) -> None:
        """suite.json: read by a second `make run` (to say what runs) and by `make stop`."""
        state = {"pid": os.getpid(), "started": started_at(os.getpid()), "ports": self.ports,
                 "processes": [{"name": name, "pid": p.pid, "started": started_at(p.pid)}
                               for name, p in self.processes]}
        temp = self.root / f".{STATE}.tmp"
        temp.write_text(json.dumps(state, indent=1))
        temp.replace(self.root / STATE)

    def check(self) -> None:
        if self.terminal is not None and hung_up(self.terminal):
            raise Stop("the terminal hung up: stopping", code=0)
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
                pass
            with contextlib.suppress(ProcessLookupError, PermissionError):  # what it started (etcd), too
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            say(f"stopped {name} (pid {process.pid})")
        if self.lock is not None:  # this suite's state, not that of one already running here
            with contextlib.suppress(FileNotFoundError):
                (self.root / STATE).unlink()


def read_state(root: Path) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((root / STATE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return state


def describe(state: dict[str, Any]) -> str:
    ports = {name.split()[-1]: port for name, port in state.get("ports", {}).items()}
    return ", ".join(f"{p['name']} pid {p['pid']}" + (f" port {ports[p['name']]}" if p["name"] in ports else "")
                     for p in state.get("processes", []))


def lock(root: Path) -> IO[str]:
    """Hold `<root>/suite.lock` while this suite runs; one already there is named and ends this one."""
    root.mkdir(parents=True, exist_ok=True)
    held = open(root / LOCK, "a")  # held until exit
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        state = read_state(root) or {}
        raise Stop(f"kcp is already running under {root} (make run pid {state.get('pid', '?')}: "
                   f"{describe(state)}); `{stop_hint(root)}` stops it") from None
    earlier = read_state(root) or {}
    left = [p for p in earlier.get("processes", []) if alive(p)]
    if left:  # the last `make run` was killed before it could stop them
        raise Stop(f"processes of an earlier `make run` under {root} are still running "
                   f"({describe({'processes': left})}); `{stop_hint(root)}` stops them")
    return held


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
    parser.add_argument("--ready-delay", type=float, default=2.0,
                        help="sim-1's seconds from a pod starting to Ready; sim-N's is N times it, so `make demo` "
                             "shows clusters at different stages (partial figures, as seed 004)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for each server to become ready")
    parser.add_argument("--stop", action="store_true", help="stop the suite running under --root-dir, and exit")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, suite: Suite) -> None:
    root = args.root_dir.resolve()
    sims = [(f"sim-{i + 1}", args.sim_port + i) for i in range(args.sims)]
    wanted = [("kcp-apiserver", args.port)] + [(f"kcp-sim-cluster {name}", port) for name, port in sims]
    for owner, port in wanted:
        if port_in_use(port):
            raise port_taken(port, owner)
    suite.ports = {owner: port for owner, port in wanted}
    suite.start("kcp-apiserver", [*console_script("kcp-apiserver"), "--root-dir", str(root),
                                  "--secure-port", str(args.port)])
    for number, (name, port) in enumerate(sims, start=1):
        suite.start(name, [*console_script("kcp-sim-cluster"), "--root-dir", str(root / name), "--name", name,
                           "--secure-port", str(port), "--nodes", "3", "--ready-delay", str(args.ready_delay * number)])
    wait_ready(suite, "kcp-apiserver", f"https://127.0.0.1:{args.port}/readyz", root / "ca.crt", args.timeout)
    kubeconfig = root / "admin.kubeconfig"
    suite.start("kcp-cluster-controller", [*console_script("kcp-cluster-controller"), "--kubeconfig", str(kubeconfig),
                                           "--syncer-mode", "push"])
    suite.start("kcp-deployment-splitter", [*console_script("kcp-deployment-splitter"), "--kubeconfig",
                                            str(kubeconfig)])
    for name, port in sims:
        wait_ready(suite, name, f"https://127.0.0.1:{port}/readyz", root / name / "ca.crt", args.timeout)
    if sims:
        sys.path.insert(0, str(HERE))
        import register_sync_targets  # beside this script; here, so --stop runs on any python3 (no PyYAML)

        register_sync_targets.main(["--kubeconfig", str(kubeconfig), "--timeout", str(args.timeout),
                                    *[f"--target={name}={root / name / 'admin.kubeconfig'}" for name, _ in sims]])
    say(f"kcp is running. In another shell:\n  export KUBECONFIG={kubeconfig}\n"
        "  kubectl get synctargets        # contexts: admin (default), user, cross-cluster\n"
        "  make demo                      # seed 004's demo, step by step\n"
        "Ctrl-C (or make stop) stops everything.")
    while True:
        suite.check()
        time.sleep(0.5)


def stop_running(root: Path, timeout: float = 60.0) -> int:
    """`make stop`: SIGTERM the suite under `root` and wait until it has stopped its processes; the
    processes of a suite that was killed are stopped one by one."""
    state = read_state(root)
    if state is None:
        say(f"kcp is not running under {root}")
        return 0
    if alive(state):
        os.kill(int(state["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(state) and time.monotonic() < deadline:
            time.sleep(0.2)
    left = [p for p in state.get("processes", []) if alive(p)]
    for entry in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(entry["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + 20
    while any(alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.2)
    for entry in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(entry["pid"]), signal.SIGKILL)
    if alive(state):
        say(f"make run (pid {state['pid']}) did not stop within {timeout:.0f}s", sys.stderr)
        return 1
    with contextlib.suppress(FileNotFoundError):
        (root / STATE).unlink()
    say(f"stopped kcp under {root}")
    return 0


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    root = args.root_dir.resolve()
    if args.stop:
        return stop_running(root)
    suite = Suite(root)

    def on_signal(signum: int, _frame: object) -> None:
        # the first signal stops the suite; any after it (a hung-up terminal sends SIGHUP to the job and the
        # shell forwards another) must not interrupt the stopping, which would leave suite.json behind
        ignore_stop_signals()
        raise Stop(f"{signal.Signals(signum).name}: stopping", code=0)

    for signum in STOP_SIGNALS:
        signal.signal(signum, on_signal)
    code = 0
    try:
        suite.lock = lock(root)
        suite.record()  # at once: a second start in the meantime names this one
        run(args, suite)
    except Stop as stop:
        say(str(stop), sys.stderr if stop.code else sys.stdout)
        code = stop.code
    except SystemExit as exit_:  # register_sync_targets gave up
        say(str(exit_.code), sys.stderr)
        code = 1
    finally:
        ignore_stop_signals()
        suite.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
