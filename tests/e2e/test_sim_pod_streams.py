"""A pod's streams on kcp-sim-cluster with the real kubectl 1.32 and 1.35 (WebSockets by default): `logs -f`
and its options, `exec` (env, files, exit codes, `-it` through a pty), `attach`, `port-forward`, and who may
open them."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcp_process import (
    KcpServer,
    OutputLines,
    free_port,
    kubectl_1_35,
    kubectl_at,
    kubectl_binary,
    kubectl_following,
    run_kubectl,
    sim_cluster_command,
    sim_cluster_env,
    stop_process,
)

OBJECTS = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {KEY: hello-config}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
  annotations: {sim.kcp.io/log-interval: "0.3"}
spec:
  containers:
  - name: app
    image: nginx
    ports: [{containerPort: 80}]
    env:
    - {name: GREETING, value: hi}
    - name: FROM_CM
      valueFrom: {configMapKeyRef: {name: cfg, key: KEY}}
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: sec, key: password}}
    volumeMounts: [{name: config, mountPath: /etc/config}]
  - name: side
    image: busybox
  volumes: [{name: config, configMap: {name: cfg}}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: c, image: busybox}]
"""
KUBECTLS = pytest.mark.parametrize("binary", [kubectl_binary(), kubectl_1_35()], ids=["path", "1.35"])
# kubectl's switches back to plain SPDY/3.1, the wire of kubectl 1.29 (exec) and 1.30 (port-forward) and older
SPDY_EXEC = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
SPDY_PORT_FORWARD = {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = KcpServer(tmp_path_factory.mktemp("sim-streams"), free_port(), ["--nodes", "1", "--ready-delay", "0",
                                                                          "--log-interval", "0.2"],
                       command=sim_cluster_command(), env=sim_cluster_env())
    server.start()
    try:
        run_kubectl(server, "apply", "-f", "-", input_text=OBJECTS)
        run_kubectl(server, "wait", "--for=condition=Ready", "pod/web", "pod/plain", "--timeout=20s")
        yield server
    finally:
        server.stop()


def cli(sim: KcpServer, binary: str, *args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return kubectl_at(binary, sim.kubeconfig, *args, stdin=stdin, env=env, timeout=20)


def follow(sim: KcpServer, binary: str, *args: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], OutputLines]:
    return kubectl_following(binary, sim.kubeconfig, *args, env=env)


stop = stop_process


@KUBECTLS
def test_logs_follow_receives_the_lines_printed_after_it_started(sim: KcpServer, binary: str) -> None:
    printed = run_kubectl(sim, "logs", "web", "-c", "app").stdout.splitlines()
    upcoming = int(printed[-1].rsplit(" ", 1)[1]) + 2
    process, lines = follow(sim, binary, "logs", "-f", "web", "-c", "app", "--tail", "1")
    try:
        lines.wait_for(f"app line {upcoming}")
    finally:
        stop(process)


def test_the_sims_log_interval_serves_pods_without_the_annotation(sim: KcpServer) -> None:
    process, lines = follow(sim, kubectl_1_35(), "logs", "-f", "plain")
    try:
        lines.wait_for("c line ")
    finally:
        stop(process)


def test_logs_options_select_as_kube(sim: KcpServer) -> None:
    assert len(run_kubectl(sim, "logs", "web", "-c", "app", "--tail", "2").stdout.splitlines()) == 2
    recent = run_kubectl(sim, "logs", "web", "-c", "app", "--since", "1s", "--timestamps").stdout.splitlines()
    assert recent and all(" app line " in line for line in recent)
    everything = run_kubectl(sim, "logs", "-l", "app=web", "--all-containers", "--prefix", "--tail", "1").stdout
    assert {line.split(" ")[0] for line in everything.splitlines()} == {"[pod/web/app]", "[pod/web/side]"}
    assert "choose one of: [app side]" in run_kubectl(sim, "get", "--raw", "/api/v1/namespaces/default/pods/web/log",
                                                      check=False).stderr


@KUBECTLS
def test_exec_runs_in_the_simulated_container(sim: KcpServer, binary: str) -> None:
    env = cli(sim, binary, "exec", "web", "-c", "app", "--", "env")
    assert env.returncode == 0, env.stderr
    assert {"GREETING=hi", "FROM_CM=hello-config", "PASSWORD=s3cret", "HOSTNAME=web"} <= set(env.stdout.splitlines())
    assert cli(sim, binary, "exec", "web", "-c", "app", "--", "cat", "/etc/config/KEY").stdout == "hello-config"
    exited = cli(sim, binary, "exec", "web", "-c", "app", "--", "sh", "-c", "echo out; exit 3")
    assert (exited.returncode, exited.stdout) == (3, "out\n")
    assert "command terminated with exit code 3" in exited.stderr
    unknown = cli(sim, binary, "exec", "web", "-c", "app", "--", "nope")
    assert (unknown.returncode, unknown.stderr.splitlines()[0]) == (127, "sh: nope: not found")
    piped = cli(sim, binary, "exec", "-i", "web", "-c", "app", "--", "sh", stdin="echo $GREETING\nexit 4\n")
    assert (piped.returncode, piped.stdout) == (4, "hi\n")


def test_exec_on_plain_spdy(sim: KcpServer) -> None:
    exited = cli(sim, kubectl_binary(), "exec", "web", "-c", "app", "--", "sh", "-c", "echo $FROM_CM; exit 3",
                 env=SPDY_EXEC)
    assert (exited.returncode, exited.stdout) == (3, "hello-config\n")
    piped = cli(sim, kubectl_binary(), "exec", "-i", "web", "-c", "app", "--", "sh", stdin="hostname\nexit 4\n",
                env=SPDY_EXEC)
    assert (piped.returncode, piped.stdout) == (4, "web\n")


def _read_until(fd: int, token: bytes, seen: bytearray, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while token not in seen:
        assert time.monotonic() < deadline, f"no {token!r} in {bytes(seen)!r}"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            seen += os.read(fd, 4096)


@KUBECTLS
def test_exec_it_is_an_interactive_shell_on_a_terminal(sim: KcpServer, binary: str) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: kubectl on the pty, as a user's terminal
        os.execv(binary, [binary, "--kubeconfig", str(sim.kubeconfig), "exec", "-it", "web", "-c", "app", "--",
                           "sh"])
    seen = bytearray()
    try:
        _read_until(fd, b"/ # ", seen)
        os.write(fd, b"echo $GREETING-there\r")
        _read_until(fd, b"hi-there\r\n", seen)
        os.write(fd, b"exit 7\r")
        _, status = os.waitpid(pid, 0)
        pid = 0
        assert os.waitstatus_to_exitcode(status) == 7
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)


def test_attach_shows_what_the_container_prints(sim: KcpServer) -> None:
    process, lines = follow(sim, kubectl_1_35(), "attach", "web", "-c", "app")
    try:
        lines.wait_for("app line")
    finally:
        stop(process)


def test_exec_needs_create_on_pods_exec(sim: KcpServer, tmp_path: Path) -> None:
    run_kubectl(sim, "create", "role", "reader", "--verb=get", "--resource=pods,pods/exec,pods/log")
    run_kubectl(sim, "create", "rolebinding", "reader", "--role=reader", "--user=alice")
    for binary in (kubectl_binary(), kubectl_1_35()):
        denied = cli(sim, binary, "--as", "alice", "exec", "web", "-c", "app", "--", "hostname")
        assert denied.returncode == 1
        assert 'User "alice" cannot create resource "pods/exec"' in denied.stderr
    assert cli(sim, kubectl_1_35(), "--as", "alice", "logs", "web", "-c", "app", "--tail", "1").returncode == 0


@pytest.mark.parametrize(("binary", "env"), [(kubectl_binary(), {}), (kubectl_1_35(), {}),
                                             (kubectl_binary(), SPDY_PORT_FORWARD)], ids=["path", "1.35", "spdy"])
def test_port_forward_answers_http(sim: KcpServer, binary: str, env: dict[str, str]) -> None:
    port = free_port()
    process, lines = follow(sim, binary, "port-forward", "pod/web", f"{port}:80", "--address", "127.0.0.1", env=env)
    try:
        lines.wait_for(f"Forwarding from 127.0.0.1:{port} -> 80")
        for path in ("/hello", "/again?x=1"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
                assert reply.read() == f"pod default/web port 80 path {path}\n".encode()
    finally:
        stop(process)
