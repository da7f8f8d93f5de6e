#!/usr/bin/env python3
"""`make demo`: seed 004's KubeCon demo against a running suite (`make run` in another shell).

Prints each kubectl command and its real output: the SyncTargets, a 15-replica Deployment created
in kcp, and `kubectl get deployments` whenever its output changes, until the splitter reports
my-deployment 15/15 aggregated from its per-cluster children.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-deployment
spec:
  replicas: 15
  selector:
    matchLabels: {app: my-app}
  template:
    metadata:
      labels: {app: my-app}
    spec:
      containers:
      - name: app
        image: nginx:1.27
"""


class Kubectl:
    def __init__(self, kubeconfig: Path, kubectl: str) -> None:
        self.base = [kubectl, "--kubeconfig", str(kubeconfig)]

    def quiet(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=60)

    def show(self, *args: str, shown: str | None = None) -> str:
        """Print `$ kubectl ARGS` (or `shown`) and the real output; fail the demo if kubectl fails."""
        print(f"$ kubectl {shown or ' '.join(args)}", flush=True)
        result = self.quiet(*args)
        print((result.stdout + result.stderr).rstrip(), flush=True)
        if result.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)} failed")
        return result.stdout


def wait(check, what: str, timeout: float) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"demo: {what} not within {timeout:.0f}s")
        time.sleep(0.5)


def ready_targets(k: Kubectl) -> int:
    result = k.quiet("get", "synctargets", "-o", "json")
    if result.returncode != 0:
        return 0
    return sum(any(c["type"] == "Ready" and c["status"] == "True" for c in t.get("status", {}).get("conditions", []))
               for t in json.loads(result.stdout)["items"])


def preflight(kubeconfig: Path) -> None:
    """Fail in seconds, saying why, when kcp does not answer or does not take the kubeconfig's token."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from register_sync_targets import Kcp  # beside this script

    kcp = Kcp(kubeconfig, "")
    try:
        status, answer = kcp.request("GET", "/api", timeout=5)
    except OSError as err:
        raise SystemExit(f"demo: kcp is not running at {kcp.base} ({getattr(err, 'reason', err)}): start it "
                         "with `make run` in another shell") from None
    if status in (401, 403):
        reason = (answer or {}).get("reason", "") if isinstance(answer, dict) else ""
        raise SystemExit(f"demo: kcp at {kcp.base} refused the token in {kubeconfig} ({status} {reason}): that "
                         "kubeconfig is not the running suite's (`make run` writes it under its root dir)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, default=Path(".kcp/admin.kubeconfig"))
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    if not args.kubeconfig.exists():
        raise SystemExit(f"{args.kubeconfig} not found: start the suite first (`make run` in another shell)")
    preflight(args.kubeconfig)
    k = Kubectl(args.kubeconfig, args.kubectl)
    wait(lambda: ready_targets(k) >= 2, "two Ready SyncTargets", args.timeout)
    k.show("get", "synctargets")
    k.quiet("delete", "deployment", "my-deployment", "--ignore-not-found", "--wait=true")
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "deployment.yaml"
        manifest.write_text(DEPLOYMENT)
        print(f"$ cat deployment.yaml\n{DEPLOYMENT.rstrip()}", flush=True)
        k.show("create", "-f", str(manifest), shown="create -f deployment.yaml")
    last = ""
    deadline = time.monotonic() + args.timeout
    while True:
        out = k.quiet("get", "deployments").stdout
        if out != last:
            k.show("get", "deployments")
            last = out
        root = next((line.split() for line in out.splitlines() if line.startswith("my-deployment ")), [])
        if len(root) > 1 and root[1] == "15/15":
            return 0
        if time.monotonic() > deadline:
            raise SystemExit(f"demo: my-deployment not 15/15 within {args.timeout:.0f}s")
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
