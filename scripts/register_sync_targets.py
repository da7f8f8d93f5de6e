#!/usr/bin/env python3
"""Register physical clusters in kcp as SyncTargets: the one-shot step of `docker compose up`,
`make run` and `make demo`.

    register_sync_targets.py --kubeconfig KCP.kubeconfig \
        --target sim-1=/sims/sim-1/admin.kubeconfig@https://sim-1:7443 ...

Each target's kubeconfig goes into `spec.kubeconfig`, its server replaced by the URL after `@` (how
the cluster controller reaches it, which may differ from how this host does). The SyncTarget CRD is
installed by kcp-cluster-controller at start: creation is retried until the type is served.
Idempotent, as `kubectl apply`: an existing SyncTarget whose kubeconfig differs (its cluster came back
on another port) gets the new one ("configured"); an equal one is left as it is ("unchanged").
Only the standard library and PyYAML.
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

PATH = "/apis/workload.kcp.io/v1alpha1/synctargets"


def load(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    return config


def current(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The current context's cluster and user entries."""
    name = config["current-context"]
    context = next(c["context"] for c in config["contexts"] if c["name"] == name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    return cluster, user


def with_server(config: dict[str, Any], server: str | None) -> str:
    """The kubeconfig as text, every cluster entry pointing at `server` when one is given."""
    if server:
        for entry in config["clusters"]:
            entry["cluster"]["server"] = server
    return yaml.safe_dump(config, sort_keys=False)


class Kcp:
    """Just enough of a client: POST and GET with the kubeconfig's CA and bearer token."""

    def __init__(self, kubeconfig: Path, cluster: str, server: str = "") -> None:
        entry, user = current(load(kubeconfig))
        self.base = (server or entry["server"]).rstrip("/")
        if cluster and "/clusters/" not in self.base:
            self.base = f"{self.base}/clusters/{cluster}"
        self.token = user["token"]
        self.context = ssl.create_default_context()
        if "certificate-authority-data" in entry:
            with tempfile.NamedTemporaryFile("wb", suffix=".crt") as ca:
                ca.write(base64.b64decode(entry["certificate-authority-data"]))
                ca.flush()
                self.context.load_verify_locations(ca.name)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                timeout: float = 10) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": content_type,
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")


def register(kcp: Kcp, name: str, kubeconfig_text: str, deadline: float) -> str:
    body = {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
            "spec": {"kubeconfig": kubeconfig_text}}
    while True:
        try:
            status, answer = kcp.request("POST", PATH, body)
        except OSError as err:  # kcp not up yet
            status, answer = 0, str(err)
        if status == 201:
            return "created"
        if status == 409:
            return update(kcp, name, kubeconfig_text)
        if time.monotonic() > deadline:
            raise SystemExit(f"SyncTarget {name}: kcp answered {status}: {answer}")
        time.sleep(1)  # 404 until kcp-cluster-controller has installed the CRD


def update(kcp: Kcp, name: str, kubeconfig_text: str) -> str:
    """An existing SyncTarget: its kubeconfig replaced when it differs (a merge patch touches nothing else)."""
    status, existing = kcp.request("GET", f"{PATH}/{name}")
    if status == 200 and existing.get("spec", {}).get("kubeconfig") == kubeconfig_text:
        return "unchanged"
    status, answer = kcp.request("PATCH", f"{PATH}/{name}", {"spec": {"kubeconfig": kubeconfig_text}},
                                 content_type="application/merge-patch+json")
    if status != 200:
        raise SystemExit(f"SyncTarget {name}: updating its kubeconfig, kcp answered {status}: {answer}")
    return "configured"


def parse_target(text: str) -> tuple[str, Path, str | None]:
    name, sep, rest = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=KUBECONFIG[@SERVER]")
    path, _, server = rest.partition("@")
    return name, Path(path), server or None


def wait_for_file(path: Path, deadline: float) -> None:
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{path}: not written (is that cluster running?)")
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True, help="kcp's admin kubeconfig")
    parser.add_argument("--cluster", default="", help="logical cluster of the SyncTargets (default: the "
                                                      "kubeconfig's)")
    parser.add_argument("--server", default="", help="kcp's URL (default: the kubeconfig's)")
    parser.add_argument("--target", type=parse_target, action="append", required=True,
                        help="NAME=KUBECONFIG[@SERVER], repeated")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for kcp and the CRD")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.timeout
    wait_for_file(args.kubeconfig, deadline)
    kcp = Kcp(args.kubeconfig, args.cluster, args.server)
    for name, path, server in args.target:
        wait_for_file(path, deadline)
        outcome = register(kcp, name, with_server(load(path), server), deadline)
        print(f"synctarget.workload.kcp.io/{name} {outcome}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
