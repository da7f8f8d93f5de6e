"""pods/exec and pods/attach: on kube's WebSocket protocols (`v5.channel.k8s.io`, `v4.channel.k8s.io`),
which kubectl 1.30+ speaks by default, or on SPDY/3.1 (`v4.channel.k8s.io`: kubectl 1.29 and older, or
KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false); channels.py carries the streams.

The commands run in the simulated container's interpreter (shell.py); attach joins the container's own
process: its printed lines (podlog.printed), or a shell reading stdin when the container has `stdin: true`.
The session ends with one metav1.Status on the error channel: Success, or NonZeroExitCode with the code as
an `ExitCode` cause.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from kcp_apiserver.embedding import Action, ActionCall, ActionResult, Obj, Resource, spdyupgrade
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api import podlog
from kcp_sim_cluster.api.channels import (
    CHANNEL_STDOUT,
    ERROR,
    SPDY_PROTOCOLS,
    WEBSOCKET_PROTOCOLS,
    Channels,
    SpdyChannels,
    StreamOptions,
    WebSocketChannels,
)
from kcp_sim_cluster.api.containerview import container_box
from kcp_sim_cluster.api.network import Network, namespace_alias
from kcp_sim_cluster.api.shell import PROMPT, SHELLS, STDOUT, Box, Shell, Terminal, run

log = structlog.get_logger(__name__)

TRUE = ("true", "1")


def _all(query: Mapping[str, str], name: str) -> list[str]:
    getall = getattr(query, "getall", None)  # aiohttp's MultiDict: `command` repeats
    return list(getall(name, [])) if getall else ([query[name]] if name in query else [])


def stream_options(query: Mapping[str, str], pod: Obj, name: str, *, attach: bool) -> StreamOptions:
    """Checks what kube's exec and attach check before the upgrade, with kube's messages."""
    spec, phase = pod.get("spec") or {}, (pod.get("status") or {}).get("phase")
    container = podlog.chosen_container(query, pod, name)
    if not spec.get("nodeName"):
        raise st.bad_request(f"pod {name} does not have a host assigned")
    if phase in ("Succeeded", "Failed"):
        verb = "attach" if attach else "exec"
        raise st.bad_request(f"cannot {verb} into a container in a completed pod; current phase is {phase}")
    status = pod.get("status") or {}
    running = any(s.get("name") == container and (s.get("state") or {}).get("running") is not None
                  for key in ("containerStatuses", "initContainerStatuses") for s in status.get(key) or [])
    if not running:
        raise st.bad_request(f'container not found ("{container}")')  # the kubelet's answer, as kubectl shows it
    flags = {key: query.get(key, "") in TRUE for key in ("stdin", "stdout", "stderr", "tty")}
    command = tuple(_all(query, "command"))
    if not attach and not command:
        raise st.bad_request("you must specify at least 1 command")
    if not (flags["stdin"] or flags["stdout"] or flags["stderr"]):
        raise st.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    return StreamOptions(container, command, flags["stdin"], flags["stdout"], flags["stderr"] and not flags["tty"],
                         flags["tty"])


def exit_status(code: int, command: tuple[str, ...]) -> dict[str, Any]:
    """The error channel's last word: Success, or the exit code as kube's NonZeroExitCode."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(command)}], exit code {code}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


async def interactive(channels: Channels, box: Box) -> int:
    """A shell reading stdin line by line (through a terminal's line discipline with -t), until `exit`
    or the end of input."""
    shell, terminal, pending = Shell(box), Terminal(), b""
    tty = channels.options.tty
    if tty:
        await channels.output(STDOUT, PROMPT.encode())
    while not terminal.closed:
        data = await channels.stdin.get()
        if data is None:
            break
        for chunk in re.split(rb"(?<=[\r\n])", data):  # a line runs before what was typed after it shows
            if tty:
                echo, lines = terminal.feed(chunk)
                await channels.send(CHANNEL_STDOUT, echo)
            else:
                *complete, pending = (pending + chunk).split(b"\n")
                lines = [line.decode(errors="replace") for line in complete]
            for line in lines:
                outcome = shell.feed(line)
                await channels.play(outcome)
                if outcome.exited:
                    return outcome.code
            if tty and lines:
                await channels.output(STDOUT, PROMPT.encode())
    if pending.strip():
        outcome = shell.feed(pending.decode(errors="replace"))
        await channels.play(outcome)
    return shell.code


async def _copy_stdin(channels: Channels) -> int:
    """`cat` without files: stdin back to stdout until its end."""
    while (data := await channels.stdin.get()) is not None:
        await channels.output(STDOUT, data)
    return 0


async def execute(channels: Channels, box: Box) -> int:
    command = list(channels.options.command)
    if channels.options.stdin and command[0] in SHELLS and len(command) == 1:
        return await interactive(channels, box)
    if channels.options.stdin and command == ["cat"]:
        return await _copy_stdin(channels)
    outcome = run(command, box)
    await channels.play(outcome)
    return outcome.code


async def attached(channels: Channels, call: ActionCall, pod: Obj, container: Obj, box: Box,
                   default_interval: float) -> int:
    """The container's own process: a shell on stdin if the container keeps stdin open, else its output."""
    if channels.options.stdin and container.get("stdin"):
        return await interactive(channels, box)
    async for lines in podlog.printed(call, pod, channels.options.container, time.time(), default_interval):
        await channels.output(STDOUT, "".join(f"{line.text}\n" for line in lines).encode())
    return 0


READY_TIMEOUT = 30.0  # seconds the client has to open its SPDY streams, as the kubelet's stream creation timeout


@dataclass(frozen=True)
class Reach:
    """What exec's `wget` reaches: the network and the resources its directory is read from (network.py)."""

    network: Network
    services: Resource
    slices: Resource
    namespaces: Resource


async def _namespace_alias(call: ActionCall, namespaces: Resource) -> str:
    try:
        return namespace_alias(await call.registry.get(namespaces, call.cluster, "", call.namespace))
    except st.APIError:
        return ""


def calls_services(command: tuple[str, ...], interactive: bool) -> bool:
    """Whether the command may call a Service (an interactive shell may): only then is the directory read."""
    return interactive or any("wget" in word for word in command)


async def session(call: ActionCall, pod: Obj, channels: Channels, *, attach: bool, default_interval: float,
                  reach: Reach | None = None) -> None:
    """Runs the command (or joins the container) once the client's streams are open, then sends the exit
    status; the client leaving ends it too."""
    options = channels.options
    container = next(c for key in ("containers", "initContainers") for c in (pod.get("spec") or {}).get(key) or []
                     if c.get("name") == options.container)
    reader = asyncio.create_task(channels.read(), name=f"exec-stdin-{call.name}")
    runner: asyncio.Task[int] | None = None
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            await channels.ready()
        box = await container_box(call, pod, container)
        if reach is not None and not attach and calls_services(options.command, options.stdin):
            box = dataclasses.replace(box, network=await reach.network.directory(
                call, reach.services, reach.slices, call.resource, call.namespace,
                await _namespace_alias(call, reach.namespaces)))
        work = attached(channels, call, pod, container, box, default_interval) if attach else execute(channels, box)
        runner = asyncio.create_task(work, name=f"exec-{call.name}")
        await asyncio.wait({runner, reader}, return_when=asyncio.FIRST_COMPLETED)
        if runner.done():
            status = exit_status(runner.result(), options.command)
            await channels.send(ERROR, json.dumps(status).encode())
    except (ConnectionError, RuntimeError, TimeoutError) as exc:
        log.info("exec stream ended", pod=call.name, error=str(exc))
    finally:
        tasks = [t for t in (runner, reader) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await channels.close()


def _connecter(attach: bool, default_interval: float = 0.0,
               reach: Reach | None = None) -> Callable[[ActionCall], Awaitable[ActionResult]]:
    async def connect(call: ActionCall) -> ActionResult:
        pod = await call.registry.get(call.resource, call.cluster, call.namespace, call.name)
        options = stream_options(call.query, pod, call.name, attach=attach)
        return ActionResult(respond=lambda request: _upgrade(call, request, pod, options, attach, default_interval,
                                                             reach))

    return connect


async def _upgrade(call: ActionCall, request: web.Request, pod: Obj, options: StreamOptions,
                   attach: bool, default_interval: float, reach: Reach | None = None) -> web.StreamResponse:
    """Takes the connection over (a WebSocket, or SPDY/3.1) and runs the session on it."""
    upgrade = request.headers.get("Upgrade", "")
    channels: Channels
    if upgrade.lower() == "websocket":
        ws = web.WebSocketResponse(protocols=WEBSOCKET_PROTOCOLS)
        await ws.prepare(request)
        response: web.StreamResponse = ws
        channels = WebSocketChannels(ws, options)
    elif upgrade.upper() == "SPDY/3.1":
        connection = await spdyupgrade.upgrade(request, spdyupgrade.spdy_protocol(request, SPDY_PROTOCOLS))
        response, channels = connection.response, SpdyChannels(connection, options)
    else:
        raise st.bad_request("Upgrade request required")
    await session(call, pod, channels, attach=attach, default_interval=default_interval, reach=reach)
    return response


def exec_action(reach: Reach | None = None) -> Action:
    """pods/exec; with `reach`, a container's `wget` calls Services over the simulated network."""
    return Action("exec", ("create", "get"), _connecter(False, reach=reach), ("", "v1", "PodExecOptions"),
                  connect=True)


EXEC = exec_action()


def attach_action(default_interval: float = 0.0) -> Action:
    """pods/attach, whose output is the log's lines (`default_interval`: podlog.log_action's)."""
    return Action("attach", ("create", "get"), _connecter(True, default_interval), ("", "v1", "PodAttachOptions"),
                  connect=True)


ATTACH = attach_action()
