"""The simulated container's interpreter: what exec's commands print and the exit codes they end with."""

from __future__ import annotations

import pytest

from kcp_sim_cluster.api.directory import Directory, Endpoint, Route, names_of
from kcp_sim_cluster.api.shell import (
    NOT_FOUND,
    PROMPT,
    STDERR,
    STDOUT,
    Box,
    Output,
    Shell,
    Sleep,
    Terminal,
    run,
    run_script,
)

BOX = Box("web-0", {"GREETING": "hi", "TWO": "a b"}, {"/etc/config/KEY": b"value\n", "/etc/config/other": b"x"})


def stdout(outcome_steps: list[object]) -> str:
    return "".join(s.data.decode() for s in outcome_steps if isinstance(s, Output) and s.stream == STDOUT)


def stderr(outcome_steps: list[object]) -> str:
    return "".join(s.data.decode() for s in outcome_steps if isinstance(s, Output) and s.stream == STDERR)


@pytest.mark.parametrize(("argv", "out", "code"), [
    (["env"], "GREETING=hi\nTWO=a b\n", 0),
    (["hostname"], "web-0\n", 0),
    (["echo", "-n", "a", "b"], "a b", 0),
    (["cat", "/etc/config/KEY"], "value\n", 0),
    (["ls", "/etc/config"], "KEY\nother\n", 0),
    (["/bin/sh", "-c", "echo $GREETING ${TWO}; exit 3; echo never"], "hi a b\n", 3),
    (["sh", "-c", "false && echo no || echo yes"], "yes\n", 0),
    (["sh", "-c", "echo '$GREETING' \"$GREETING\""], "$GREETING hi\n", 0),
    (["exit", "300"], "", 44),
])
def test_commands_print_what_a_container_would(argv: list[str], out: str, code: int) -> None:
    outcome = run(argv, BOX)
    assert (stdout(outcome.steps), outcome.code) == (out, code)


def test_an_unknown_command_is_the_shells_not_found() -> None:
    outcome = run(["nope", "x"], BOX)
    assert (stderr(outcome.steps), outcome.code) == ("sh: nope: not found\n", NOT_FOUND)


def test_missing_files_fail_with_busybox_messages() -> None:
    outcome = run(["cat", "/etc/config/KEY", "/missing"], BOX)
    assert stdout(outcome.steps) == "value\n"
    assert stderr(outcome.steps) == "cat: can't open '/missing': No such file or directory\n"
    assert outcome.code == 1
    assert run(["ls", "/nowhere"], BOX).code == 1


def test_sleep_is_a_step_the_protocol_waits_out() -> None:
    outcome = run_script("sleep 1.5 && hostname", BOX)
    assert outcome.steps[0] == Sleep(1.5)
    assert stdout(outcome.steps) == "web-0\n"
    assert run(["sleep", "soon"], BOX).code == 1


def test_an_interactive_shell_keeps_the_last_code_until_exit() -> None:
    shell = Shell(BOX)
    assert shell.feed("nope").code == NOT_FOUND
    assert shell.feed("").code == NOT_FOUND
    ended = shell.feed("exit")
    assert (ended.exited, ended.code) == (True, NOT_FOUND)
    assert PROMPT == "/ # "


def test_the_terminal_echoes_erases_and_ends_on_ctrl_d() -> None:
    terminal = Terminal()
    echo, lines = terminal.feed(b"ecx\x7fho\r")
    assert echo == b"ecx\b \bho\r\n"
    assert lines == ["echo"]
    assert terminal.feed(b"\x04") == (b"", [])
    assert terminal.closed
    assert Terminal.output(b"a\nb\r\n") == b"a\r\nb\r\n"


def network_box() -> Box:
    live = Endpoint("10.64.0.5", {"http": 8080}, "pod=web-1 cluster=east")
    dead = Endpoint("10.68.0.9", {"http": 8080}, None)
    web = Route("web", "default", "10.96.0.10", {80: "http"}, (live,))
    stale = Route("stale", "default", "10.96.0.11", {80: "http"}, (dead,))
    empty = Route("empty", "default", "10.96.0.12", {80: "http"}, ())
    routes = {name: route for route in (web, stale, empty)
              for name in names_of(route.name, "default", "default", route.cluster_ip)}
    return Box("caller", network=Directory(routes))


@pytest.mark.parametrize("host", ["web", "web.default", "web.default.svc.cluster.local", "10.96.0.10"])
def test_wget_reaches_a_service_by_any_of_its_names_and_the_answer_names_the_pod_and_cluster(host: str) -> None:
    outcome = run(["wget", "-qO-", f"http://{host}/"], network_box())
    assert (outcome.code, stdout(outcome.steps), stderr(outcome.steps)) == (0, "pod=web-1 cluster=east\n", "")
    assert run(["wget", "-q", "-O", "-", host], network_box()).code == 0


def test_wget_fails_as_busybox_does_on_an_unknown_name_a_wrong_port_no_endpoint_or_a_dead_one() -> None:
    box = network_box()
    unknown = run(["wget", "-qO-", "http://nope/"], box)
    assert (unknown.code, stderr(unknown.steps)) == (1, "wget: bad address 'nope'\n")
    for url in ("http://web:81/", "http://empty/", "http://stale/"):
        failed = run(["wget", "-qO-", url], box)
        assert failed.code == 1 and "Connection refused" in stderr(failed.steps), url
    assert run(["sh", "-c", "wget -qO- http://stale || echo down"], box).code == 0
