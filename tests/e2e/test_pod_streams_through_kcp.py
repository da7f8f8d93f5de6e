"""A tenant's `kubectl logs`, `exec`, `attach` and `port-forward` through kcp, carried to the pod's physical
cluster by its syncer's tunnel (issue 23): kcp, two simulated clusters, and the cluster controller running
both syncers (push mode; pull mode's syncer dials the same tunnel, see test_pull_mode_*).

Two Deployments labelled `app=web` run one on each cluster, so one selector reaches pods on both."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from mirror_fixtures import tenant
from syncer_fixtures import eventually, sim_cluster, syncer_env
from test_cluster_controller import installed_syncer

from kcp_process import (
    KcpServer,
    OutputLines,
    free_port,
    kubectl_1_35,
    kubectl_at,
    kubectl_binary,
    kubectl_following,
    run_kubectl,
    stop_process,
)

KUBECTLS = pytest.mark.parametrize("binary", [kubectl_binary(), kubectl_1_35()], ids=["path", "1.35"])
CLUSTERS = ("east", "west")
# kubectl's switches back to plain SPDY/3.1, the wire of kubectl 1.29 (exec) and 1.30 (port-forward) and older
SPDY_EXEC = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}
SPDY_PORT_FORWARD = {"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}


def deployment(target: str) -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{target}
  labels: {{app: web, workloads.kcp.io/cluster: {target}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web, at: {target}}}}}
  template:
    metadata:
      labels: {{app: web, at: {target}}}
      annotations: {{sim.kcp.io/log-interval: "0.2"}}
    spec:
      containers:
      - name: app
        image: nginx
        ports: [{{containerPort: 80}}]
        env: [{{name: GREETING, value: hi-{target}}}]
      - name: side
        image: busybox
"""


@dataclass
class Setup:
    kcp: KcpServer
    kubeconfig: Path
    controller: ClusterControllerProcess
    pods: dict[str, str]  # SyncTarget -> the name of its pod in kcp
    syncer: subprocess.Popen[bytes] | None = None  # pull mode's syncer process


def pods_by_target(kcp: KcpServer, kubeconfig: Path, targets: tuple[str, ...]) -> dict[str, str]:
    listed = run_kubectl(kcp, "get", "pods", "-l", "app=web", "-o", "json", kubeconfig=kubeconfig, check=False)
    if listed.returncode:
        return {}
    found = {}
    for pod in yaml.safe_load(listed.stdout)["items"]:
        running = (pod.get("status") or {}).get("phase") == "Running"
        for target in targets:
            if running and pod["metadata"]["labels"].get(f"state.workload.kcp.io/{target}") == "Upsync":
                found[target] = pod["metadata"]["name"]
    return found


def running_pods(kcp: KcpServer, kubeconfig: Path, targets: tuple[str, ...]) -> dict[str, str]:
    """Once the SyncTargets are Ready: a Deployment on each, and the name of its pod mirrored into kcp."""
    for target in targets:
        run_kubectl(kcp, "wait", f"synctarget/{target}", "--for", "condition=Ready", "--timeout=90s",
                    kubeconfig=kubeconfig, timeout=100)
    eventually(lambda: run_kubectl(kcp, "get", "deployments", kubeconfig=kubeconfig, check=False).returncode == 0,
               "Deployments imported", timeout=90)
    run_kubectl(kcp, "apply", "-f", "-", kubeconfig=kubeconfig, input_text="---\n".join(deployment(t) for t in targets))
    return eventually(lambda: (found := pods_by_target(kcp, kubeconfig, targets)) and len(found) == len(targets)
                      and found, "a running pod of each cluster mirrored into kcp", timeout=90)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("pod-streams")
    kcp = KcpServer(root / "kcp", free_port())
    physical = {name: sim_cluster(root / name) for name in CLUSTERS}
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, *physical.values()):
            server.start()
            started.append(server)
        controller.start()
        kubeconfig = tenant(kcp, "tenant", physical)
        yield Setup(kcp, kubeconfig, controller, running_pods(kcp, kubeconfig, CLUSTERS))
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def cli(setup: Setup, binary: str, *args: str, stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return kubectl_at(binary, setup.kubeconfig, *args, stdin=stdin, env=env, timeout=30)


def follow(setup: Setup, binary: str, *args: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], OutputLines]:
    return kubectl_following(binary, setup.kubeconfig, *args, env=env)


stop = stop_process


@KUBECTLS
def test_logs_follow_through_kcp_receives_new_lines(setup: Setup, binary: str) -> None:
    pod = setup.pods["east"]
    printed = cli(setup, binary, "logs", pod, "-c", "app").stdout.splitlines()
    assert printed and printed[0].startswith("app started"), printed
    upcoming = int(printed[-1].rsplit(" ", 1)[1]) + 3
    process, lines = follow(setup, binary, "logs", "-f", pod, "-c", "app", "--tail", "1")
    try:
        lines.wait_for(f"app line {upcoming}")
    finally:
        stop(process)


def test_logs_options_are_the_physical_clusters(setup: Setup) -> None:
    pod = setup.pods["west"]
    assert len(cli(setup, kubectl_binary(), "logs", pod, "-c", "app", "--tail", "2").stdout.splitlines()) == 2
    recent = cli(setup, kubectl_binary(), "logs", pod, "-c", "side", "--since", "1s").stdout.splitlines()
    assert recent and all(line.startswith("side line ") for line in recent)
    both = cli(setup, kubectl_binary(), "logs", pod, "--all-containers", "--tail", "1").stdout.splitlines()
    assert sorted(line.split(" ")[0] for line in both) == ["app", "side"]
    # --raw paths are absolute: on the base URL (kubectl 1.35 puts the server's own path before them, 1.32 not)
    refused = cli(setup, kubectl_binary(), "--server", setup.kcp.url, "get", "--raw",
                  f"/clusters/tenant/api/v1/namespaces/default/pods/{pod}/log")
    assert "choose one of: [app side]" in refused.stderr, refused  # the physical cluster's Status, as it said it


def test_logs_of_a_deployment_and_of_a_selector_across_both_clusters(setup: Setup) -> None:
    by_deployment = cli(setup, kubectl_binary(), "logs", "deploy/web-west", "-c", "app", "--tail", "1")
    assert by_deployment.returncode == 0 and by_deployment.stdout.startswith("app "), by_deployment
    prefixed = cli(setup, kubectl_1_35(), "logs", "-l", "app=web", "--prefix", "-c", "app", "--tail", "1").stdout
    assert {line.split(" ")[0] for line in prefixed.splitlines()} == {f"[pod/{p}/app]" for p in setup.pods.values()}


def test_a_pod_that_is_not_there_or_not_mirrored(setup: Setup) -> None:
    missing = cli(setup, kubectl_binary(), "logs", "nope")
    assert 'pods "nope" not found' in missing.stderr, missing
    run_kubectl(setup.kcp, "run", "local", "--image", "busybox", kubeconfig=setup.kubeconfig)
    local = cli(setup, kubectl_binary(), "logs", "local")
    assert "pod local does not have a host assigned" in local.stderr, local


@KUBECTLS
def test_exec_through_kcp_runs_in_the_pods_container(setup: Setup, binary: str) -> None:
    pod = setup.pods["east"]
    env = cli(setup, binary, "exec", pod, "-c", "app", "--", "env")
    assert env.returncode == 0, env.stderr
    assert {"GREETING=hi-east", f"HOSTNAME={pod}"} <= set(env.stdout.splitlines())
    exited = cli(setup, binary, "exec", pod, "-c", "app", "--", "sh", "-c", "echo out; exit 3")
    assert (exited.returncode, exited.stdout) == (3, "out\n")
    assert "command terminated with exit code 3" in exited.stderr
    piped = cli(setup, binary, "exec", "-i", setup.pods["west"], "-c", "app", "--", "sh",
                stdin="echo $GREETING\nexit 4\n")
    assert (piped.returncode, piped.stdout) == (4, "hi-west\n")


def test_exec_refusals_are_the_physical_clusters(setup: Setup) -> None:
    for binary in (kubectl_binary(), kubectl_1_35()):  # the refused WebSocket, then kubectl's SPDY fallback
        missing = cli(setup, binary, "exec", setup.pods["east"], "-c", "nope", "--", "env")
        assert f"container nope is not valid for pod {setup.pods['east']}" in missing.stderr, missing


def test_exec_and_port_forward_on_plain_spdy_through_kcp(setup: Setup) -> None:
    pod = setup.pods["west"]
    exited = cli(setup, kubectl_binary(), "exec", pod, "-c", "app", "--", "sh", "-c", "echo $GREETING; exit 3",
                 env=SPDY_EXEC)
    assert (exited.returncode, exited.stdout) == (3, "hi-west\n"), exited
    piped = cli(setup, kubectl_binary(), "exec", "-i", pod, "-c", "app", "--", "sh", stdin="hostname\nexit 4\n",
                env=SPDY_EXEC)
    assert (piped.returncode, piped.stdout) == (4, f"{pod}\n"), piped
    port = free_port()
    process, lines = follow(setup, kubectl_binary(), "port-forward", f"pod/{pod}", f"{port}:80", "--address",
                            "127.0.0.1", env=SPDY_PORT_FORWARD)
    try:
        lines.wait_for(f"Forwarding from 127.0.0.1:{port} -> 80")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/spdy", timeout=10) as reply:
            assert reply.read().decode().endswith(f"/{pod} port 80 path /spdy\n")
    finally:
        stop(process)


def _read_until(fd: int, token: bytes, seen: bytearray, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while token not in seen:
        assert time.monotonic() < deadline, f"no {token!r} in {bytes(seen)!r}"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            seen += os.read(fd, 4096)


def test_exec_it_through_kcp_is_an_interactive_shell_on_a_terminal(setup: Setup) -> None:
    binary = kubectl_1_35()
    pid, fd = pty.fork()
    if pid == 0:  # the child: kubectl on the pty, as a user's terminal
        os.execv(binary, [binary, "--kubeconfig", str(setup.kubeconfig), "exec", "-it", setup.pods["west"],
                          "-c", "app", "--", "sh"])
    seen = bytearray()
    try:
        _read_until(fd, b"/ # ", seen)
        os.write(fd, b"echo $GREETING-there\r")
        _read_until(fd, b"hi-west-there\r\n", seen)
        os.write(fd, b"exit 7\r")
        _, status = os.waitpid(pid, 0)
        pid = 0
        assert os.waitstatus_to_exitcode(status) == 7
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)


def test_attach_through_kcp_shows_what_the_container_prints(setup: Setup) -> None:
    process, lines = follow(setup, kubectl_binary(), "attach", setup.pods["west"], "-c", "side")
    try:
        lines.wait_for("side line")
    finally:
        stop(process)


@KUBECTLS
def test_port_forward_through_kcp_answers_http(setup: Setup, binary: str) -> None:
    port = free_port()
    process, lines = follow(setup, binary, "port-forward", f"pod/{setup.pods['east']}", f"{port}:80",
                            "--address", "127.0.0.1")
    try:
        lines.wait_for(f"Forwarding from 127.0.0.1:{port} -> 80")
        for path in ("/hello", "/again?x=1"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
                body = reply.read().decode()
            assert body.startswith("pod kcp-") and body.endswith(f"/{setup.pods['east']} port 80 path {path}\n")
    finally:
        stop(process)


def test_logs_previous_through_kcp_show_the_crashed_instance(setup: Setup) -> None:
    crashing = deployment("east").replace("web-east", "crashy").replace("app: web", "app: crashy").replace(
        "sim.kcp.io/log-interval: \"0.2\"", "sim.kcp.io/crash: \"true\"")
    run_kubectl(setup.kcp, "apply", "-f", "-", kubeconfig=setup.kubeconfig, input_text=crashing)

    def crashed_pod() -> str | None:
        listed = yaml.safe_load(run_kubectl(setup.kcp, "get", "pods", "-l", "app=crashy", "-o", "json",
                                            kubeconfig=setup.kubeconfig).stdout)["items"]
        return next((p["metadata"]["name"] for p in listed
                     if any(s.get("restartCount") for s in (p.get("status") or {}).get("containerStatuses") or [])),
                    None)

    pod = eventually(crashed_pod, "a crashed pod mirrored into kcp", timeout=60)
    previous = cli(setup, kubectl_binary(), "logs", "--previous", pod, "-c", "app")
    assert previous.returncode == 0 and previous.stdout.startswith("app started (image nginx, start "), previous
    never = cli(setup, kubectl_binary(), "logs", "--previous", setup.pods["east"], "-c", "app")
    assert f'previous terminated container "app" in pod "{setup.pods["east"]}" not found' in never.stderr, never


def as_user(setup: Setup, cluster: str | None, token: str | None, *args: str,
            binary: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl in logical cluster `cluster` (None: on kcp's base URL, for `--raw` paths that name it)."""
    server = f"{setup.kcp.url}/clusters/{cluster}" if cluster else setup.kcp.url
    flags = ["--server", server, *(["--token", token] if token else [])]
    return subprocess.run([binary or kubectl_binary(), "--kubeconfig", str(setup.kcp.kubeconfig), *flags, *args],
                          capture_output=True, text=True, timeout=30)


def test_streams_are_authorized_in_the_logical_cluster_with_kubes_verbs(setup: Setup) -> None:
    pod = setup.pods["east"]
    for args in (("create", "serviceaccount", "viewer"),
                 ("create", "role", "viewer", "--verb=get", "--resource=pods,pods/log"),
                 ("create", "rolebinding", "viewer", "--role=viewer", "--serviceaccount=default:viewer")):
        assert as_user(setup, "tenant", None, *args).returncode == 0
    viewer = as_user(setup, "tenant", None, "create", "token", "viewer").stdout.strip()
    eventually(lambda: as_user(setup, "tenant", viewer, "logs", pod, "-c", "app", "--tail", "1").returncode == 0,
               "the viewer reads the log")
    user = 'User "system:serviceaccount:default:viewer"'
    for binary in (kubectl_binary(), kubectl_1_35()):
        denied = as_user(setup, "tenant", viewer, "exec", pod, "-c", "app", "--", "hostname", binary=binary)
        assert denied.returncode == 1
        assert f'{user} cannot create resource "pods/exec" in API group "" in the namespace "default"' in denied.stderr
    attach = as_user(setup, "tenant", viewer, "attach", pod, "-c", "app")
    assert f'{user} cannot create resource "pods/attach"' in attach.stderr, attach
    # the admin of another logical cluster is a stranger here, and its own cluster has no such pod
    for args in (("create", "serviceaccount", "boss"),
                 ("create", "clusterrolebinding", "boss", "--clusterrole=cluster-admin",
                  "--serviceaccount=default:boss")):
        assert as_user(setup, "elsewhere", None, *args).returncode == 0
    boss = as_user(setup, "elsewhere", None, "create", "token", "boss").stdout.strip()
    eventually(lambda: as_user(setup, "elsewhere", boss, "get", "secrets").returncode == 0, "the boss at home")
    stranger = 'User "system:serviceaccount:default:boss"'
    logs = as_user(setup, "tenant", boss, "logs", pod, "-c", "app")
    assert f'{stranger} cannot get resource "pods" in API group "" in the namespace "default"' in logs.stderr, logs
    raw = as_user(setup, None, boss, "get", "--raw", f"/clusters/tenant/api/v1/namespaces/default/pods/{pod}/log")
    assert f'{stranger} cannot get resource "pods/log"' in raw.stderr, raw
    opened = as_user(setup, "tenant", boss, "exec", pod, "-c", "app", "--", "hostname", binary=kubectl_1_35())
    assert opened.returncode == 1 and "forbidden" in opened.stderr.lower(), opened
    at_home = as_user(setup, None, boss, "get", "--raw",
                      f"/clusters/elsewhere/api/v1/namespaces/default/pods/{pod}/log")
    assert "(NotFound)" in at_home.stderr, at_home


@pytest.fixture(scope="module")
def pulled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """Pull mode: a kcp of its own whose controller installs the syncer into the cluster; the test runs the
    installed syncer (its flags and its Secret's kubeconfigs, so its own identities) as a process."""
    root = tmp_path_factory.mktemp("pod-streams-pull")
    kcp, far = KcpServer(root / "kcp", free_port()), sim_cluster(root / "far")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "pull", "--no-leader-elect", "--heartbeat-interval", "2", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    syncer: subprocess.Popen[bytes] | None = None
    try:
        for server in (kcp, far):
            server.start()
            started.append(server)
        controller.start()
        kubeconfig = tenant(kcp, "pulled", {"far": far})
        command = installed_syncer(far, "far", root / "syncer")
        with open(root / "syncer.log", "ab") as log:
            syncer = subprocess.Popen(command, stdout=log, stderr=log, env=syncer_env(), start_new_session=True)
        yield Setup(kcp, kubeconfig, controller, running_pods(kcp, kubeconfig, ("far",)), syncer)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        if syncer is not None:
            syncer.send_signal(signal.SIGTERM)
            syncer.wait(30)
        controller.stop()
        for server in started:
            server.stop()


def test_pull_mode_logs_exec_and_port_forward_go_through_the_syncers_own_tunnel(pulled: Setup) -> None:
    pod = pulled.pods["far"]
    process, lines = follow(pulled, kubectl_1_35(), "logs", "-f", pod, "-c", "app", "--tail", "1")
    try:
        lines.wait_for("app line")
    finally:
        stop(process)
    env = cli(pulled, kubectl_binary(), "exec", pod, "-c", "app", "--", "env")
    assert env.returncode == 0 and "GREETING=hi-far" in env.stdout.splitlines(), env
    port = free_port()
    process, lines = follow(pulled, kubectl_1_35(), "port-forward", f"pod/{pod}", f"{port}:80", "--address",
                            "127.0.0.1")
    try:
        lines.wait_for(f"Forwarding from 127.0.0.1:{port} -> 80")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/pulled", timeout=10) as reply:
            assert reply.read().decode().endswith(f"/{pod} port 80 path /pulled\n")
    finally:
        stop(process)


def test_once_the_syncer_stopped_its_pods_streams_are_unavailable(pulled: Setup) -> None:
    assert pulled.syncer is not None
    pulled.syncer.send_signal(signal.SIGTERM)
    assert pulled.syncer.wait(30) == 0
    gone = cli(pulled, kubectl_binary(), "logs", pulled.pods["far"], "-c", "app")
    assert 'Error from server (ServiceUnavailable): the syncer of SyncTarget "far" has no tunnel' in gone.stderr, gone
    exec_ = cli(pulled, kubectl_1_35(), "exec", pulled.pods["far"], "-c", "app", "--", "env")
    assert exec_.returncode == 1 and 'SyncTarget "far" has no tunnel' in exec_.stderr, exec_

