"""The commands a simulated container runs for `kubectl exec` and `attach`: no process is started, a
small busybox-like interpreter answers from what the container would see (its env, hostname and the
files of its ConfigMap and Secret volumes).

Commands: `env`, `hostname`, `echo [-n] ...`, `cat FILE...`, `ls [DIR...]`, `sleep N`, `exit [N]`, `true`,
`false`, `wget [-q] [-O -] http://SERVICE[:PORT][/PATH]` (a call to a Service over the simulated data plane,
directory.py and network.py: its answer names the pod and cluster that served it), `sh -c SCRIPT` (commands joined by `;`, `&&`, `||`, with `$VAR` and `${VAR}` expanded outside
single quotes). Anything else is busybox sh's `sh: NAME: not found`, exit code 127. An interactive `sh`
is a `Shell` fed one line at a time; `Terminal` is the line discipline a tty adds (echo, erase, ^D).

Pure: a run returns the steps (output, sleeps) and the exit code; the protocol module plays them out.
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from kcp_sim_cluster.api.directory import Directory

STDOUT, STDERR = 1, 2
NOT_FOUND = 127
SHELLS = frozenset({"sh", "/bin/sh", "bash", "/bin/bash", "ash", "/bin/ash"})
ROOT_DIRS = ("bin", "dev", "etc", "home", "proc", "root", "sys", "tmp", "usr", "var")
PROMPT = "/ # "  # busybox sh's prompt for root in /


@dataclass(frozen=True)
class Box:
    """What a container sees: its hostname, environment (in order) and files (absolute path -> bytes)."""

    hostname: str
    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)
    network: Directory = field(default_factory=Directory)  # the Services it reaches (read when `wget` runs)

    def is_dir(self, path: str) -> bool:
        path = _normal(path)
        if path == "/":
            return True
        if path.strip("/") in ROOT_DIRS:
            return True
        return any(name.startswith(path + "/") for name in self.files)

    def entries(self, path: str) -> list[str]:
        path = _normal(path)
        prefix = "/" if path == "/" else path + "/"
        found = {name[len(prefix):].split("/")[0] for name in self.files if name.startswith(prefix)}
        if path == "/":
            found.update(ROOT_DIRS)
        return sorted(found)


@dataclass(frozen=True)
class Output:
    stream: int  # STDOUT or STDERR
    data: bytes


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Output | Sleep


@dataclass
class Outcome:
    """What a run did: its steps in order, its exit code, and whether `exit` ended the shell."""

    steps: list[Step] = field(default_factory=list)
    code: int = 0
    exited: bool = False

    def out(self, text: str) -> None:
        self.steps.append(Output(STDOUT, text.encode()))

    def err(self, text: str) -> None:
        self.steps.append(Output(STDERR, text.encode()))


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            parts = parts[:-1]
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def run(argv: list[str], box: Box) -> Outcome:
    """One command as exec runs it (argv, no shell unless argv names one)."""
    outcome = Outcome()
    _command(argv, box, outcome)
    return outcome


def run_script(script: str, box: Box, outcome: Outcome | None = None) -> Outcome:
    """A line of shell: commands joined by `;`, `&&` and `||`."""
    outcome = outcome or Outcome()
    try:
        lexer = shlex.shlex(_expand(script, box.env), posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        outcome.err("sh: syntax error: unterminated quoted string\n")
        outcome.code = 2
        return outcome
    words: list[str] = []
    joiner = ";"
    for token in [*tokens, ";"]:
        if token not in (";", "&&", "||"):
            words.append(token)
            continue
        if words and (joiner == ";" or (joiner == "&&") == (outcome.code == 0)):
            _command(words, box, outcome)
            if outcome.exited:
                return outcome
        words, joiner = [], token
    return outcome


def _expand(script: str, env: Mapping[str, str]) -> str:
    """`$NAME` and `${NAME}` outside single quotes, unset names empty, `$?` left alone."""
    pieces = re.split(r"('[^']*')", script)
    variable = re.compile(r"\$\{(\w+)\}|\$([A-Za-z_]\w*)")
    return "".join(piece if piece.startswith("'") else
                   variable.sub(lambda m: env.get(m.group(1) or m.group(2), ""), piece)
                   for piece in pieces)


def _command(argv: list[str], box: Box, outcome: Outcome) -> None:
    name, args = argv[0], argv[1:]
    builtin = COMMANDS.get(name.rsplit("/", 1)[-1] if name.startswith("/") else name)
    if name in SHELLS:
        if len(args) >= 2 and args[0] == "-c":
            run_script(args[1], box, outcome)
            outcome.exited = False
            return
        outcome.code = 0  # a shell without -c and without stdin reads nothing and ends
        return
    if builtin is None:
        outcome.err(f"sh: {name}: not found\n")
        outcome.code = NOT_FOUND
        return
    outcome.code = builtin(args, box, outcome)


def _env(args: list[str], box: Box, outcome: Outcome) -> int:
    outcome.out("".join(f"{key}={value}\n" for key, value in box.env.items()))
    return 0


def _hostname(args: list[str], box: Box, outcome: Outcome) -> int:
    outcome.out(box.hostname + "\n")
    return 0


def _echo(args: list[str], box: Box, outcome: Outcome) -> int:
    newline = not (args and args[0] == "-n")
    words = args[1:] if not newline else args
    outcome.out(" ".join(words) + ("\n" if newline else ""))
    return 0


def _cat(args: list[str], box: Box, outcome: Outcome) -> int:
    code = 0
    for path in args:
        data = box.files.get(_normal(path))
        if data is not None:
            outcome.steps.append(Output(STDOUT, data))
        elif box.is_dir(path):
            outcome.err("cat: read error: Is a directory\n")
            code = 1
        else:
            outcome.err(f"cat: can't open '{path}': No such file or directory\n")
            code = 1
    return code


def _ls(args: list[str], box: Box, outcome: Outcome) -> int:
    code = 0
    paths = [a for a in args if not a.startswith("-")] or ["/"]
    for path in paths:
        if _normal(path) in box.files:
            outcome.out(path + "\n")
        elif box.is_dir(path):
            header = f"{path}:\n" if len(paths) > 1 else ""
            outcome.out(header + "".join(f"{entry}\n" for entry in box.entries(path)))
        else:
            outcome.err(f"ls: {path}: No such file or directory\n")
            code = 1
    return code


def _sleep(args: list[str], box: Box, outcome: Outcome) -> int:
    if not args:
        outcome.err("sleep: missing operand\n")
        return 1
    try:
        seconds = float(args[0])
    except ValueError:
        outcome.err(f"sleep: invalid number '{args[0]}'\n")
        return 1
    outcome.steps.append(Sleep(max(seconds, 0.0)))
    return 0


def _exit(args: list[str], box: Box, outcome: Outcome) -> int:
    outcome.exited = True
    if not args:
        return outcome.code
    try:
        return int(args[0]) & 0xFF
    except ValueError:
        outcome.err(f"sh: exit: Illegal number: {args[0]}\n")
        return 2


def _wget(args: list[str], box: Box, outcome: Outcome) -> int:
    """busybox wget of one http URL: to stdout with `-O -`, else (a file nobody reads) only its progress."""
    quiet, to_stdout, urls, rest = False, False, [], list(args)
    while rest:
        arg = rest.pop(0)
        if arg.startswith("--"):
            quiet = quiet or arg == "--quiet"
            to_stdout = to_stdout or arg == "--output-document=-"
        elif arg.startswith("-") and len(arg) > 1:
            for at, letter in enumerate(arg[1:]):
                quiet = quiet or letter == "q"
                if letter in "OT":  # an option with a value: the rest of the word, or the next one
                    value = arg[at + 2:] or (rest.pop(0) if rest else "")
                    to_stdout = to_stdout or (letter == "O" and value == "-")
                    break
        else:
            urls.append(arg)
    if not urls:
        outcome.err("BusyBox v1.36.1 multi-call binary.\n\nUsage: wget [-q] [-O FILE] URL\n")
        return 1
    url = urlsplit(urls[0] if "://" in urls[0] else f"http://{urls[0]}")
    if url.scheme != "http" or not url.hostname:
        outcome.err(f"wget: not an http or ftp url: {urls[0]}\n")
        return 1
    route = box.network.resolve(url.hostname)
    if route is None:
        outcome.err(f"wget: bad address '{url.hostname}'\n")
        return 1
    port = url.port or 80
    name = route.ports.get(port)
    serving = [e for e in route.endpoints if name is not None and name in e.ports]
    chosen = random.choice(serving) if serving else None
    if not quiet:
        outcome.err(f"Connecting to {url.hostname} ({route.cluster_ip}:{port})\n")
    if chosen is None or chosen.answer is None:
        outcome.err(f"wget: can't connect to remote host ({route.cluster_ip}): Connection refused\n")
        return 1
    if to_stdout:
        outcome.out(chosen.answer + "\n")
    elif not quiet:
        outcome.err("saving to 'index.html'\n'index.html' saved\n")
    return 0


COMMANDS = {
    "wget": _wget,
    "env": _env, "hostname": _hostname, "echo": _echo, "cat": _cat, "ls": _ls, "sleep": _sleep, "exit": _exit,
    "true": lambda args, box, outcome: 0, "false": lambda args, box, outcome: 1,
}


class Shell:
    """An interactive sh: fed lines, it runs each and remembers the last exit code."""

    def __init__(self, box: Box) -> None:
        self.box = box
        self.code = 0

    def feed(self, line: str) -> Outcome:
        outcome = Outcome(code=self.code)
        if line.strip():
            run_script(line, self.box, outcome)
        self.code = outcome.code
        return outcome


class Terminal:
    """The line discipline of a tty in cooked mode: input echoed, backspace erases, Enter completes a
    line, ^D on an empty line is the end of input; output newlines become CR LF."""

    def __init__(self) -> None:
        self.line = ""
        self.closed = False

    def feed(self, data: bytes) -> tuple[bytes, list[str]]:
        """Typed bytes -> (what the terminal echoes, the lines they complete)."""
        echo = bytearray()
        lines: list[str] = []
        for char in data.decode(errors="replace"):
            if char in "\r\n":
                echo += b"\r\n"
                lines.append(self.line)
                self.line = ""
            elif char in "\x7f\x08":
                if self.line:
                    self.line = self.line[:-1]
                    echo += b"\b \b"
            elif char == "\x04":
                if not self.line:
                    self.closed = True
                    break
            elif char == "\x03":
                echo += b"^C\r\n"
                lines.append("")
                self.line = ""
            else:
                self.line += char
                echo += char.encode()
        return bytes(echo), lines

    @staticmethod
    def output(data: bytes) -> bytes:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
