"""scripts/run_suite.py (`make run`): the whole suite started for real, seed 004's Deployment split over
the two simulated clusters it registers, Ctrl-C stopping every process it started; a port in use
named, with nothing left running; SIM=0 starting no simulated cluster; closing its terminal stopping
it all; one suite per root dir (a second says what runs); `make stop`; a restart on other ports
moving the SyncTargets along; `make demo` failing fast without a kcp to talk to."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import queue
import re
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from repo_layout import REPO

from kcp_process import free_port, free_port_block

SCRIPT = REPO / "scripts" / "run_suite.py"
DEMO = REPO / "scripts" / "demo.py"


def service_env() -> dict[str, str]:
    """Every service's package importable, installed or not (the suite falls back to `python -m`)."""
    paths = [str(REPO / d) for d in ("services/apiserver", "libs/kcpcommon", "libs/kcpsyncer", "services/sim-cluster",
                                     "services/cluster-controller", "services/deployment-splitter", "services/syncer")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


# a lost cluster noticed in seconds (heartbeats every 1 s, NotReady after 4 s, replicas moved 1 s later)
FAST_LOSS = {"KCP_CLUSTER_CONTROLLER_HEARTBEAT_INTERVAL": "1", "KCP_CLUSTER_CONTROLLER_HEARTBEAT_THRESHOLD": "4",
             "KCP_DEPLOYMENT_SPLITTER_GRACE_PERIOD": "1"}


class Running:
    """run_suite.py as a child, its output read line by line so tests wait on what it says."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen([sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, env={**service_env(), **(env or {})})
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return
        raise AssertionError(f"{text!r} not said in {timeout}s:\n" + "\n".join(self.seen))

    def finish(self, timeout: float = 60.0) -> int:
        code = self.process.wait(timeout)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code

    def pids(self) -> list[int]:
        return [int(m.group(1)) for line in self.seen if (m := re.search(r"^started .* \(pid (\d+)\)", line))]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def eventually(check, what: str, timeout: float = 180.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout}s ({last!r})")


def between(text: str, start: str, end: str | None = None) -> str:
    """The demo's transcript from the heading that starts with `start` to the next `end` (or the end)."""
    part = text.split(start, 1)[1]
    return part.split(end, 1)[0] if end else part


def test_the_whole_suite_runs_seed_004s_demo_and_ctrl_c_stops_it_all(tmp_path: Path) -> None:
    """`make demo`'s whole story against `make run`. The daemons take their settings from the environment,
    so a lost cluster is noticed after a few seconds instead of the default 30 s heartbeat threshold and
    30 s grace period: the story is the same, told faster."""
    root = tmp_path / "kcp"
    first_sim = free_port_block(2)  # sim-2 binds first_sim + 1
    suite = Running("--root-dir", str(root), "--port", str(free_port()), "--sim-port", str(first_sim), env=FAST_LOSS)
    try:
        suite.wait_for("kcp is running")
        assert len(suite.pids()) == 5
        kubeconfig = root / "admin.kubeconfig"

        def ready_targets() -> list[str]:
            items = json.loads(kubectl(kubeconfig, "get", "synctargets", "-o", "json"))["items"]
            return sorted(t["metadata"]["name"] for t in items if any(
                c["type"] == "Ready" and c["status"] == "True" for c in t.get("status", {}).get("conditions", [])))

        assert eventually(lambda: ready_targets() == ["sim-1", "sim-2"], "both sim clusters Ready")
        demo = subprocess.run([sys.executable, str(DEMO), "--kubeconfig", str(kubeconfig), "--pause", "0"],
                              capture_output=True, text=True, timeout=400)
        said = demo.stdout
        assert demo.returncode == 0, said + demo.stderr
        assert "deployments" not in between(said, "# 1. ", "# 2. ")  # a fresh logical cluster: no Deployments
        assert "synctarget.workload.kcp.io/sim-1 created\nsynctarget.workload.kcp.io/sim-2 created" in said
        assert re.search(r"^deployments +deploy +apps/v1 +true +Deployment$", between(said, "# 3. ", "# 4. "), re.M)

        rollout = between(said, "# 4. ", "# 5. ")
        assert "$ kubectl create -f deployment.yaml\ndeployment.apps/my-deployment created" in rollout
        figures = [int(n) for n in re.findall(r"^my-deployment +(\d+)/15 ", rollout, re.M)]
        assert any(0 < n < 15 for n in figures), rollout  # partial progress was shown
        assert figures[-1] == 15
        assert not re.search(r"^my-deployment--", rollout, re.M)  # the user's one Deployment, nothing beside it
        assert re.search(r"^(Split|Rebalanced) +(split|spread) 15 replicas: sim-1 8, sim-2 7$", rollout, re.M), rollout

        views = between(said, "# 5. ", "# 6. ")
        through_kcp = between(views, "$ kubectl get pods\n", "$ ")
        for name, replicas in (("sim-1", 8), ("sim-2", 7)):  # the pods, mirrored into kcp, with their cluster
            assert len(re.findall(rf"^my-deployment-\S+ +1/1 +Running .* {name}$", through_kcp,
                                  re.M)) == replicas, through_kcp
        assert between(views, "$ kubectl logs deployment/my-deployment --tail=2\n", "$ ").strip()  # lines came
        exec_ = between(views, "$ kubectl exec ", "$ ")
        assert re.fullmatch(r"(my-deployment-\S+) -- hostname\n\1\n", exec_), exec_  # the pod's own name
        for name, replicas in (("sim-1", 8), ("sim-2", 7)):
            view = between(views, f"$ kubectl --kubeconfig {root / name / 'admin.kubeconfig'} get pods -A\n", "$ ")
            assert len(re.findall(r"^kcp-\S+ +my-deployment-\S+ +1/1 +Running ", view, re.M)) == replicas

        lost = between(said, "# 6. ", "# 7. ")
        assert re.search(r"^sim-2 +False ", lost, re.M)
        assert re.search(r"^my-deployment +15/15 ", lost.rsplit("$ kubectl get deployments", 1)[1], re.M)
        assert re.search(r"^Rebalanced +moved 7 replicas from sim-2: NotReady for \d+s \(now sim-1 15\)$", lost, re.M), lost
        back = between(said, "# 7. ", "# 8. ")
        assert re.search(r"^sim-2 +True ", back, re.M)
        final = back.rsplit("$ kubectl get deployments", 1)[1]
        assert re.search(r"^my-deployment +15/15 ", final, re.M), final
        assert re.search(r"^Rebalanced +spread 15 replicas: sim-1 8, sim-2 7$", final, re.M), final

        older = between(said, "# 8. ")
        assert '"gitVersion":"v1.25.' in older
        assert "APIsImported=False IncompatibleSchema" in older
        assert re.search(r"names the \d+ fields of deployments.apps that Kubernetes 1.25 lacks", older)
        assert not [p for p in processes_under(root) if "sim-old" in p]  # the demo stopped its own cluster

        demo_kubeconfig = root / "demo.kubeconfig"
        names = kubectl(demo_kubeconfig, "get", "deployments", "-o", "name").split()
        assert names == ["deployment.apps/my-deployment"]
        pids = suite.pids()
        suite.process.send_signal(signal.SIGINT)  # Ctrl-C
        assert suite.finish() == 0
        assert not [pid for pid in pids if alive(pid)]
        assert [line for line in suite.seen if line.startswith("stopped ")][-1].startswith("stopped kcp-apiserver")
    finally:
        suite.kill()


@pytest.mark.parametrize("taken_by", ["kcp-apiserver", "kcp-sim-cluster sim-1"])
def test_a_port_in_use_is_named_and_nothing_is_left_running(tmp_path: Path, taken_by: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = {"--port": str(port if taken_by == "kcp-apiserver" else free_port()),
                 "--sim-port": str(port if taken_by != "kcp-apiserver" else free_port())}
        suite = Running("--root-dir", str(tmp_path / "kcp"), "--sims", "1", *[w for kv in ports.items() for w in kv])
        try:
            code = suite.finish(120)
        finally:
            suite.kill()
    assert code == 1
    said = "\n".join(suite.seen)
    assert f"port {port} is in use ({taken_by} would serve on it)" in said
    assert not suite.pids()


def test_sim_0_starts_no_simulated_cluster(tmp_path: Path) -> None:
    suite = Running("--root-dir", str(tmp_path / "kcp"), "--port", str(free_port()), "--sims", "0")
    try:
        suite.wait_for("kcp is running")
        started = [line.split()[1] for line in suite.seen if line.startswith("started ")]
        assert started == ["kcp-apiserver", "kcp-cluster-controller", "kcp-deployment-splitter"]
        pids = suite.pids()
        suite.process.send_signal(signal.SIGTERM)
        assert suite.finish() == 0
        assert not [pid for pid in pids if alive(pid)]
    finally:
        suite.kill()


def in_terminal(argv: list[str], typed: str = "") -> tuple[subprocess.Popen[bytes], int]:
    """`argv` as the leader of a session whose controlling terminal is a pty; `typed` is then written to
    it (a command line, when argv is an interactive shell)."""
    master, slave = pty.openpty()

    def take_terminal() -> None:  # after setsid: the pty becomes this session's controlling terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    leader = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                              preexec_fn=take_terminal, env=service_env(), cwd=REPO)
    os.close(slave)
    if typed:
        os.write(master, typed.encode() + b"\n")
    return leader, master


def read_until(master: int, text: str, timeout: float = 180.0) -> str:
    said = b""
    deadline = time.monotonic() + timeout
    while text.encode() not in said:
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not said in {timeout}s:\n{said.decode(errors='replace')}")
        if select.select([master], [], [], 1)[0]:
            said += os.read(master, 65536)
    return said.decode(errors="replace")


def processes_under(root: Path) -> list[str]:
    """Every process whose command line or working directory is under `root` (this test's suite only)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").replace("\0", " ")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if str(root) in argv or cwd.startswith(str(root)):
            found.append(f"{proc.name}: {argv}")
    return found


def suite_pids(root: Path) -> list[int]:
    state = json.loads((root / "suite.json").read_text())
    return [state["pid"], *[p["pid"] for p in state["processes"]]]


def ready_since(kubeconfig: Path, name: str, since: datetime) -> str:
    """The SyncTarget's kubeconfig server, once it has turned Ready at or after `since` (else '')."""
    target = json.loads(kubectl(kubeconfig, "get", "synctarget", name, "-o", "json"))
    ready = [c for c in target.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    if not ready or ready[0]["status"] != "True":
        return ""
    if datetime.fromisoformat(ready[0]["lastTransitionTime"].replace("Z", "+00:00")) < since:
        return ""
    return str(re.search(r"server: (\S+)", target["spec"]["kubeconfig"]).group(1))  # type: ignore[union-attr]


def all_gone_within_10_s(pids: list[int], root: Path) -> None:
    deadline = time.monotonic() + 10
    while ([pid for pid in pids if alive(pid)] or processes_under(root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in pids if alive(pid)], processes_under(root)
    assert not processes_under(root)


def test_closing_the_terminal_stops_it_all_when_make_leads_the_session(tmp_path: Path) -> None:
    """`ssh -t host make run`: the hangup signals make alone (which waits for its children); the suite sees
    its terminal hang up and stops."""
    root = tmp_path / "kcp"
    make, master = in_terminal(["make", "--no-print-directory", "run", f"KCP_ROOT={root}", f"PORT={free_port()}",
                                "SIM=0"])
    try:
        read_until(master, "kcp is running")
        pids = suite_pids(root)
    finally:
        os.close(master)
    all_gone_within_10_s(pids, root)
    make.wait(10)


def test_closing_the_terminal_stops_it_all_and_a_restart_on_other_ports_moves_the_sync_targets(
        tmp_path: Path) -> None:
    root = tmp_path / "kcp"
    # an interactive shell, hung up, passes SIGHUP on to its jobs (make and run_suite.py)
    shell, master = in_terminal(["bash", "--norc", "--noprofile", "-i"],
                                f"make run KCP_ROOT={root} PORT={free_port()} SIM_PORT={free_port_block(1)} SIM=1")
    try:
        read_until(master, "kcp is running")
        pids = suite_pids(root)
        assert len(pids) == 5 and all(alive(pid) for pid in pids)
    finally:
        os.close(master)  # the terminal is closed: SIGHUP to its session
    all_gone_within_10_s(pids, root)
    shell.wait(10)
    assert not (root / "suite.json").exists()

    port, sim_port = free_port(), free_port_block(1)
    since = datetime.now(UTC).replace(microsecond=0)
    suite = Running("--root-dir", str(root), "--port", str(port), "--sim-port", str(sim_port), "--sims", "1")
    try:
        suite.wait_for("kcp is running")
        assert "synctarget.workload.kcp.io/sim-1 configured" in suite.seen
        kubeconfig = root / "admin.kubeconfig"
        assert eventually(lambda: ready_since(kubeconfig, "sim-1", since), "sim-1 Ready again") == \
            f"https://127.0.0.1:{sim_port}"

        again = Running("--root-dir", str(root), "--port", str(free_port()), "--sim-port", str(free_port_block(1)))
        assert again.finish(30) == 1
        said = "\n".join(again.seen)
        assert f"kcp is already running under {root} (make run pid {suite.process.pid}: kcp-apiserver pid " in said
        assert f"port {port}," in said and f"port {sim_port}," in said
        assert not again.pids()

        elsewhere = Running("--root-dir", str(tmp_path / "other"), "--port", str(port), "--sims", "0")
        assert elsewhere.finish(30) == 1
        apiserver = suite.pids()[0]
        assert (f"port {port} is in use (kcp-apiserver would serve on it) by pid {apiserver} of the kcp suite "
                f"under {root}: stop it (make stop KCP_ROOT={root})") in "\n".join(elsewhere.seen)

        stranger = tmp_path / "stranger.kubeconfig"
        stranger.write_text(re.sub(r"token: \S+", "token: not-the-admin-token", kubeconfig.read_text()))
        demo = subprocess.run([sys.executable, str(DEMO), "--kubeconfig", str(stranger)], capture_output=True,
                              text=True, timeout=30)
        assert demo.returncode == 1
        assert f"kcp at https://127.0.0.1:{port} refused the token in {stranger} (401 Unauthorized)" in demo.stderr

        pids = suite_pids(root)
        stop = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "stop", f"KCP_ROOT={root}"],
                              capture_output=True, text=True, timeout=90)
        assert stop.returncode == 0, stop.stderr
        assert f"stopped kcp under {root}" in stop.stdout
        assert suite.finish() == 0
        assert not [pid for pid in pids if alive(pid)]
        assert not processes_under(root)
    finally:
        suite.kill()


def test_make_demo_fails_in_seconds_when_kcp_is_not_running(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    kubeconfig = tmp_path / "admin.kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: kcp, cluster: {{server: "https://127.0.0.1:{port}"}}}}]
users: [{{name: admin, user: {{token: t}}}}]
contexts: [{{name: admin, context: {{cluster: kcp, user: admin}}}}]
current-context: admin
""")
    demo = subprocess.run([sys.executable, str(DEMO), "--kubeconfig", str(kubeconfig)], capture_output=True,
                          text=True, timeout=30)
    assert demo.returncode == 1
    assert f"kcp is not running at https://127.0.0.1:{port}" in demo.stderr
    missing = subprocess.run([sys.executable, str(DEMO), "--kubeconfig", str(tmp_path / "none")],
                             capture_output=True, text=True, timeout=30)
    assert missing.returncode == 1 and "start the suite first (`make run` in another shell)" in missing.stderr
