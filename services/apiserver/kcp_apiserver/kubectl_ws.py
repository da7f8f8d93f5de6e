"""`kubectl ws`: the kubectl plugin (console script `kubectl-ws`) that moves between workspaces, as kcp's does.

Where a user is is the current kubeconfig context's server URL (`https://host/clusters/<path>`). Moving
writes the context `workspace.kcp.io/current` (a copy of the current context's cluster with the new URL,
the same user) and keeps the one left as `workspace.kcp.io/previous`, so `kubectl ws -` goes back. API
calls go through `kubectl` itself, so every credential kubectl understands (tokens, certificates, exec
plugins) works unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

CURRENT, PREVIOUS = "workspace.kcp.io/current", "workspace.kcp.io/previous"
HOME = "root"  # `kubectl ws ~`: no home workspaces here, so home is the root of the tree
CLUSTERS = "/clusters/"
READY_TIMEOUT = 60.0


class WsError(Exception):
    """What the plugin prints on stderr before exiting 1."""


def kubeconfig_path(explicit: str) -> Path:
    return Path(explicit or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or Path.home() / ".kube/config")


class Kubeconfig:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.config: dict[str, Any] = yaml.safe_load(path.read_text()) or {}

    def _named(self, kind: str, name: str) -> dict[str, Any]:
        for entry in self.config.get(kind) or []:
            if entry.get("name") == name:
                return entry  # type: ignore[no-any-return]
        raise WsError(f"kubeconfig has no {kind[:-1]} {name!r}")

    def context(self, name: str = "") -> dict[str, Any]:
        return self._named("contexts", name or self.config.get("current-context", ""))["context"]  # type: ignore[no-any-return]

    def server(self, context: str = "") -> str:
        return str(self._named("clusters", self.context(context)["cluster"])["cluster"]["server"])

    def _put(self, kind: str, name: str, body_key: str, body: dict[str, Any]) -> None:
        entries = [e for e in self.config.setdefault(kind, []) if e.get("name") != name]
        self.config[kind] = [*entries, {"name": name, body_key: body}]

    def move_to(self, server: str) -> None:
        """Point `workspace.kcp.io/current` at `server`; what was current becomes `workspace.kcp.io/previous`
        (a context of the user's own is left as it was)."""
        context = dict(self.context())
        cluster = dict(self._named("clusters", context["cluster"])["cluster"])
        self._put("clusters", PREVIOUS, "cluster", cluster)  # where the user was, for `kubectl ws -`
        self._put("contexts", PREVIOUS, "context", {**context, "cluster": PREVIOUS})
        self._put("clusters", CURRENT, "cluster", {**cluster, "server": server})
        self._put("contexts", CURRENT, "context", {**context, "cluster": CURRENT})
        self.config["current-context"] = CURRENT
        self.path.write_text(yaml.safe_dump(self.config, sort_keys=False))


def split_server(server: str) -> tuple[str, str]:
    """`https://h:6443/clusters/root:a` -> (`https://h:6443`, `root:a`); a server without a path is `admin`'s."""
    base, found, path = server.rstrip("/").partition(CLUSTERS)
    return (base, path.split("/")[0]) if found else (base, "admin")


def resolve(current: str, target: str) -> str:
    """kcp's path rules: `..` the parent, `~` home, `:x` or `a:b` or `root` absolute, `name` a child."""
    if target == "..":
        parent, sep, _ = current.rpartition(":")
        if not sep:
            raise WsError(f"workspace {current!r} has no parent")
        return parent
    if target == "~":
        return HOME
    if target.startswith(":"):
        return target[1:]
    if ":" in target or target == HOME:
        return target
    return f"{current}:{target}"


class Client:
    """API calls through kubectl, against one server base URL."""

    def __init__(self, kubeconfig: Path, base: str) -> None:
        self.kubeconfig = kubeconfig
        self.base = base

    def kubectl(self, path: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([os.environ.get("KUBECTL", "kubectl"), "--kubeconfig", str(self.kubeconfig),
                               "--server", f"{self.base}{CLUSTERS}{path}", *args],
                              input=stdin, capture_output=True, text=True, check=False)

    def workspaces(self, path: str) -> list[dict[str, Any]]:
        done = self.kubectl(path, "get", "workspaces.tenancy.kcp.io", "-o", "json")
        if done.returncode:
            raise WsError(done.stderr.strip())
        return list(json.loads(done.stdout).get("items") or [])

    def workspace(self, path: str, name: str) -> dict[str, Any] | None:
        done = self.kubectl(path, "get", "workspaces.tenancy.kcp.io", name, "-o", "json", "--ignore-not-found")
        if done.returncode:
            raise WsError(done.stderr.strip())
        return json.loads(done.stdout) if done.stdout.strip() else None


def cmd_current(config: Kubeconfig) -> None:
    print(f'Current workspace is "{split_server(config.server())[1]}".')


def cmd_use(config: Kubeconfig, target: str) -> None:
    base, current = split_server(config.server())
    if target == "-":
        path = split_server(config.server(PREVIOUS))[1]
    else:
        path = resolve(current, target)
        parent, sep, name = path.rpartition(":")
        if sep and Client(config.path, base).workspace(parent, name) is None and target not in ("..", "~"):
            raise WsError(f'workspace "{path}" not found')
    config.move_to(f"{base}{CLUSTERS}{path}")
    print(f'Current workspace is "{path}".')


def type_reference(qualified: str) -> dict[str, str]:
    """`team` or `root:org:team` (the type `team` of workspace `root:org`), as kcp's plugin takes --type."""
    path, _, name = qualified.rpartition(":")
    return {"name": name, "path": path} if path else {"name": name}


def shown_type(ws: dict[str, Any] | None) -> str:
    ref = ((ws or {}).get("spec") or {}).get("type") or {}
    return ":".join(p for p in (ref.get("path"), ref.get("name")) if p) or "unknown"


def cmd_create(config: Kubeconfig, name: str, enter: bool, type_name: str = "") -> None:
    base, current = split_server(config.server())
    client = Client(config.path, base)
    body: dict[str, Any] = {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}}
    if type_name:
        body["spec"] = {"type": type_reference(type_name)}
    done = client.kubectl(current, "create", "-f", "-", stdin=json.dumps(body))
    if done.returncode:
        raise WsError(done.stderr.strip())
    ws = client.workspace(current, name)
    print(f'Workspace "{name}" (type {shown_type(ws)}) created. Waiting for it to be ready...')
    deadline = time.monotonic() + READY_TIMEOUT
    while ((ws or {}).get("status") or {}).get("phase") != "Ready":
        if time.monotonic() > deadline:
            left = ", ".join(((ws or {}).get("status") or {}).get("initializers") or [])
            raise WsError(f'workspace "{name}" not ready after {READY_TIMEOUT:.0f}s'
                          + (f" (waiting for initializers: {left})" if left else ""))
        time.sleep(0.2)
        ws = client.workspace(current, name)
    print(f'Workspace "{name}" (type {shown_type(ws)}) is ready to use.')
    if enter:
        cmd_use(config, name)


def cmd_tree(config: Kubeconfig) -> None:
    base, current = split_server(config.server())
    client = Client(config.path, base)
    print(current)

    def walk(path: str, indent: str) -> None:
        children = sorted(ws["metadata"]["name"] for ws in client.workspaces(path))
        for i, name in enumerate(children):
            last = i == len(children) - 1
            print(f"{indent}{'└── ' if last else '├── '}{name}")
            walk(f"{path}:{name}", indent + ("    " if last else "│   "))

    walk(current, "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubectl ws", description="Move between kcp workspaces.")
    parser.add_argument("--kubeconfig", default="")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("current", help="print the current workspace")
    use = sub.add_parser("use", help="enter a workspace: PATH, .., -, ~")
    use.add_argument("target")
    create = sub.add_parser("create", help="create a workspace here and wait until it is Ready")
    create.add_argument("name")
    create.add_argument("--enter", action="store_true")
    create.add_argument("--type", default="", help="the WorkspaceType: NAME or PATH:NAME")
    sub.add_parser("tree", help="the workspaces under the current one")
    args_in = list(sys.argv[1:] if argv is None else argv)
    known = {"current", "use", "create", "tree", "-h", "--help"}
    positional = [a for a in args_in if not a.startswith("--kubeconfig")]
    if (positional and positional[0] not in known and not positional[0].startswith("-")) or positional == ["-"]:
        args_in.insert(args_in.index(positional[0]), "use")  # `kubectl ws root:a` is `kubectl ws use root:a`
    args = parser.parse_args(args_in)
    try:
        config = Kubeconfig(kubeconfig_path(args.kubeconfig))
        if args.command == "use":
            cmd_use(config, args.target)
        elif args.command == "create":
            cmd_create(config, args.name, args.enter, args.type)
        elif args.command == "tree":
            cmd_tree(config)
        else:
            cmd_current(config)
    except WsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
