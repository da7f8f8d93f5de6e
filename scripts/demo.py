#!/usr/bin/env python3
"""`make demo`: seed 004's KubeCon demo against a running suite (`make run` in another shell).

The story, step by step, each kubectl command printed with its real output, in a logical cluster
`demo` of its own (the suite's SyncTargets in `admin` are left alone):

1. a fresh logical cluster serves no Deployments;
2. the suite's two simulated clusters attach as SyncTargets (seed 004's YAML), and
3. `kubectl api-resources` gains `deployments`: their types were imported;
4. a 15-replica Deployment is split over the clusters (one share per cluster, written on the Deployment
   itself) whose pods turn Ready a few at a time (the sims' --ready-delay), until `my-deployment` shows
   15/15; the splitter's Events say how it divided them;
5. the pods, through kcp, each with the cluster it runs on (the syncers mirror them up), a log and an
   exec through kcp (the syncers' tunnels), then each physical cluster's own view (`kubectl get pods` with
   the sim's kubeconfig);
6. sim-2 is lost (its process paused: SIGSTOP) and its replicas move to sim-1;
7. sim-2 comes back (SIGCONT) and gets its share again;
8. a cluster on an older Kubernetes release (1.25) attaches: API negotiation says which fields
   it lacks. The demo stops that cluster and removes its SyncTarget at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
# a split Deployment's shares, on it (the splitter's README): per cluster a state label, a spec diff, a status
STATE = "state.workload.kcp.io/"
SPEC_DIFF = "experimental.spec-diff.workload.kcp.io/"
STATUS = "experimental.status.workload.kcp.io/"
SPLIT_EVENTS = ("get", "events", "--field-selector", "involvedObject.name=my-deployment,source=kcp-deployment-splitter",
                "--sort-by=.lastTimestamp", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
sys.path.insert(0, str(HERE))

from register_sync_targets import Kcp  # noqa: E402  (beside this script)

CLUSTER = "demo"  # the logical cluster the demo plays in
OLD_RELEASE = "1.25"

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


class Demo:
    """kubectl against the demo's logical cluster, every command and its output printed."""

    def __init__(self, kubeconfig: Path, kubectl: str, pause: float, timeout: float) -> None:
        self.kubeconfig, self.kubectl, self.pause, self.timeout = kubeconfig, kubectl, pause, timeout
        self.steps = 0

    def quiet(self, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.kubectl, "--kubeconfig", str(kubeconfig or self.kubeconfig), *args],
                              capture_output=True, text=True, timeout=60)

    def show(self, *args: str, shown: str | None = None, kubeconfig: Path | None = None) -> str:
        """Print `$ kubectl ARGS` (or `shown`) and the real output; fail the demo if kubectl fails."""
        print(f"$ kubectl {shown or ' '.join(args)}", flush=True)
        result = self.quiet(*args, kubeconfig=kubeconfig)
        print((result.stdout + result.stderr).rstrip(), flush=True)
        if result.returncode != 0:
            raise SystemExit(f"demo: kubectl {' '.join(args)} failed")
        return result.stdout

    def step(self, title: str) -> None:
        time.sleep(self.pause if self.steps else 0)
        self.steps += 1
        print(f"\n# {self.steps}. {title}", flush=True)

    def say(self, text: str) -> None:
        print(f"# {text}", flush=True)

    def get(self, resource: str) -> list[dict[str, Any]]:
        result = self.quiet("get", resource, "-o", "json")
        items: list[dict[str, Any]] = json.loads(result.stdout)["items"] if result.returncode == 0 else []
        return items

    def watch(self, args: tuple[str, ...], done: Callable[[str], bool], what: str, columns: int) -> None:
        """`kubectl ARGS` printed each time its first `columns` columns change (not for AGE ticking),
        until `done(output)`."""
        last: list[list[str]] = []
        deadline = time.monotonic() + self.timeout
        while True:
            out = self.quiet(*args).stdout
            shape = [line.split()[:columns] for line in out.splitlines()]
            if shape != last:
                out = self.show(*args)
                last = [line.split()[:columns] for line in out.splitlines()]
            if done(out):
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"demo: {what} not within {self.timeout:.0f}s")
            time.sleep(1)

    def wait(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not check():
            if time.monotonic() > deadline:
                raise SystemExit(f"demo: {what} not within {self.timeout:.0f}s")
            time.sleep(0.5)


def preflight(kubeconfig: Path) -> None:
    """Fail in seconds, saying why, when kcp does not answer or does not take the kubeconfig's token."""
    kcp = Kcp(kubeconfig, "")
    try:
        status, answer = kcp.request("GET", "/api", timeout=5)
    except OSError as err:
        raise SystemExit(f"demo: kcp is not running at {kcp.base} ({getattr(err, 'reason', err)}): start it "
                         "with `make run` in another shell") from None
    if status in (401, 403):
        reason = answer.get("reason", "") if isinstance(answer, dict) else ""
        raise SystemExit(f"demo: kcp at {kcp.base} refused the token in {kubeconfig} ({status} {reason}): that "
                         "kubeconfig is not the running suite's (`make run` writes it under its root dir)")


def in_cluster(kubeconfig: Path, cluster: str, into: Path) -> Path:
    """A copy of kcp's kubeconfig whose servers address logical cluster `cluster`."""
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = entry["cluster"]["server"].split("/clusters/")[0] + f"/clusters/{cluster}"
    into.write_text(yaml.safe_dump(config, sort_keys=False))
    return into


def sims(root: Path) -> dict[str, int]:
    """The suite's simulated clusters and their pids, from the suite.json `make run` writes."""
    try:
        state = json.loads((root / "suite.json").read_text())
    except (FileNotFoundError, ValueError):
        raise SystemExit(f"demo: no {root / 'suite.json'}: the demo plays with the clusters `make run` "
                         "starts (use the admin.kubeconfig under its root dir)") from None
    found = {p["name"]: int(p["pid"]) for p in state["processes"] if p["name"].startswith("sim-")}
    if len(found) < 2:
        raise SystemExit("demo: needs two simulated clusters (`make run` without SIM=, or SIM=2)")
    return found


def sync_target(name: str, kubeconfig: str) -> dict[str, Any]:
    return {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
            "spec": {"kubeconfig": kubeconfig}}


def abbreviated(target: dict[str, Any]) -> str:
    """Seed 004's SyncTarget YAML as printed: the kubeconfig's secrets left out."""
    config = yaml.safe_load(target["spec"]["kubeconfig"])
    for entry in config.get("clusters", []):
        entry["cluster"] = {k: ("..." if k.endswith("-data") else v) for k, v in entry["cluster"].items()}
    for entry in config.get("users", []):
        entry["user"] = {k: "..." for k in entry["user"]}
    shown = {**target, "spec": {"kubeconfig": yaml.safe_dump(config, sort_keys=False)}}
    return yaml.dump(shown, sort_keys=False, Dumper=LiteralDumper).rstrip()


class LiteralDumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks, as a person writes a kubeconfig inside a SyncTarget."""


LiteralDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def condition(target: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in target.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def ready(demo: Demo, name: str) -> bool:
    return any(t["metadata"]["name"] == name and condition(t, "Ready").get("status") == "True"
               for t in demo.get("synctargets"))


def row(out: str, name: str) -> list[str]:
    return next((line.split() for line in out.splitlines() if line.split()[:1] == [name]), [])


def ready_figure(out: str, name: str) -> str:
    fields = row(out, name)
    return fields[1] if len(fields) > 1 else ""


def shares(deployment: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """target -> (ready, share) of a split Deployment: the splitter's spec diff per cluster and what each
    cluster's syncer reported, both annotations on the Deployment."""
    meta = deployment.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    found = {}
    for key, value in annotations.items():
        target = key.removeprefix(SPEC_DIFF)
        if key.startswith(SPEC_DIFF) and labels.get(STATE + target) == "Sync":
            share = next(op["value"] for op in json.loads(value) if op["path"] == "/replicas")
            found[target] = (int(json.loads(annotations.get(STATUS + target) or "{}").get("readyReplicas") or 0), share)
    return found


def spread(demo: Demo, ready: dict[str, int]) -> Callable[[str], bool]:
    """`kubectl get deployments` shows my-deployment 15/15, its shares these, each fully Ready."""
    def done(out: str) -> bool:
        if ready_figure(out, "my-deployment") != "15/15":
            return False
        found = next((d for d in demo.get("deployments") if d["metadata"]["name"] == "my-deployment"), {})
        return {t: n for t, (r, n) in shares(found).items() if r == n} == ready
    return done


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def paused(pid: int) -> Iterator[None]:
    """The process stopped (SIGSTOP: it answers nothing, as a cluster cut off) until the block ends."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def old_cluster(root: Path) -> Iterator[Path]:
    """A simulated cluster of an older release, started for the demo and stopped after it."""
    sim_root = root / "sim-old"
    argv = [str(Path(sys.executable).parent / "kcp-sim-cluster"), "--root-dir", str(sim_root), "--name", "sim-old",
            "--secure-port", str(free_port()), "--nodes", "1", "--kubernetes-version", OLD_RELEASE]
    if not Path(argv[0]).exists():
        argv[:1] = [sys.executable, "-m", "kcp_sim_cluster"]
    (root / "logs").mkdir(exist_ok=True)
    (sim_root / "admin.kubeconfig").unlink(missing_ok=True)
    with open(root / "logs" / "sim-old.log", "ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        yield sim_root / "admin.kubeconfig"
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def install_sync_target_type(demo: Demo, *, admin_kubeconfig: Path, tmp: Path) -> None:
    """The SyncTarget CRD, as kcp-cluster-controller installed it in `admin`, created in the demo's cluster."""
    if demo.quiet("get", "crd", "synctargets.workload.kcp.io").returncode == 0:
        return
    crd = json.loads(demo.quiet("get", "crd", "synctargets.workload.kcp.io", "-o", "json",
                                kubeconfig=admin_kubeconfig).stdout)
    crd["metadata"] = {"name": crd["metadata"]["name"], "labels": crd["metadata"].get("labels", {})}
    crd.pop("status", None)
    (tmp / "synctarget-crd.json").write_text(json.dumps(crd))
    demo.say("kcp's SyncTarget type is a CRD (kcp-cluster-controller installs it in `admin`); here too:")
    demo.show("create", "-f", str(tmp / "synctarget-crd.json"), shown="create -f synctarget-crd.yaml")
    demo.wait(lambda: demo.quiet("get", "synctargets").returncode == 0, "the SyncTarget type served")


def attach(demo: Demo, targets: list[dict[str, Any]], tmp: Path) -> None:
    manifest = tmp / "synctargets.yaml"
    manifest.write_text(yaml.safe_dump_all(targets, sort_keys=False))
    print("$ cat synctargets.yaml\n" + "\n---\n".join(abbreviated(t) for t in targets), flush=True)
    demo.show("apply", "-f", str(manifest), shown="apply -f synctargets.yaml")


def play(demo: Demo, root: Path, tmp: Path) -> None:
    pids = sims(root)
    names = sorted(pids)[:2]
    demo.say(f"The demo plays in logical cluster `{CLUSTER}`: export KUBECONFIG={demo.kubeconfig}")
    demo.quiet("delete", "deployment", "my-deployment", "--ignore-not-found", "--wait=true")
    demo.quiet("delete", "synctargets", "--all", "--wait=true")

    demo.step("A fresh logical cluster: kcp itself serves no Deployments (group apps is empty)")
    demo.show("api-resources", "--api-group=apps")

    demo.step(f"Two physical clusters attach: SyncTargets {names[0]} and {names[1]}, each with its kubeconfig")
    install_sync_target_type(demo, admin_kubeconfig=root / "admin.kubeconfig", tmp=tmp)
    attach(demo, [sync_target(n, (root / n / "admin.kubeconfig").read_text()) for n in names], tmp)
    demo.wait(lambda: all(ready(demo, n) for n in names), "both SyncTargets Ready")
    demo.show("get", "synctargets")

    demo.step("Their API types were imported: kcp now serves deployments")
    demo.wait(lambda: "deployments" in demo.quiet("api-resources", "--api-group=apps").stdout, "deployments served")
    demo.show("api-resources", "--api-group=apps")

    demo.step("A Deployment of 15 replicas, split over the clusters; pods turn Ready a few at a time")
    manifest = tmp / "deployment.yaml"
    manifest.write_text(DEPLOYMENT)
    print(f"$ cat deployment.yaml\n{DEPLOYMENT.rstrip()}", flush=True)
    demo.show("create", "-f", str(manifest), shown="create -f deployment.yaml")
    demo.watch(("get", "deployments"), lambda out: ready_figure(out, "my-deployment") == "15/15", "15/15", 4)
    demo.say("one Deployment in kcp, one copy per cluster: the splitter's Events say how it divided the replicas")
    demo.show(*SPLIT_EVENTS)

    demo.step("The pods, through kcp: each with the cluster it runs on; then each physical cluster's own view, "
              "with its own kubeconfig (namespace kcp-...: this logical cluster's default)")
    # kcp's copies of the pods carry the status the syncer last mirrored, which can trail the Deployment's figure
    demo.wait(lambda: len(re.findall(r" 1/1 +Running ", demo.quiet("get", "pods").stdout)) == 15,
              "15 pods Ready in kcp")
    pods = demo.show("get", "pods")
    demo.say("debugging through kcp, wherever a pod runs: its log and a command in it (through each syncer's tunnel)")
    demo.show("logs", "deployment/my-deployment", "--tail=2")
    demo.show("exec", pods.splitlines()[1].split()[0], "--", "hostname")
    for name in names:
        sim_kubeconfig = root / name / "admin.kubeconfig"
        demo.show("get", "pods", "-A", shown=f"--kubeconfig {sim_kubeconfig} get pods -A", kubeconfig=sim_kubeconfig)

    lost, kept = names[1], names[0]
    demo.step(f"{lost} is lost: its process is paused (SIGSTOP), it answers nothing; its replicas move to {kept}")
    with paused(pids[lost]):
        demo.watch(("get", "synctargets"), lambda out: (row(out, lost)[1:2] or [""])[0] != "True",
                   f"{lost} not Ready", 2)
        demo.watch(("get", "deployments"), spread(demo, {kept: 15}), f"15 replicas on {kept}", 4)
        demo.show(*SPLIT_EVENTS)
        demo.step(f"{lost} comes back (SIGCONT): the replicas are split over both clusters again")
    demo.watch(("get", "synctargets"), lambda out: (row(out, lost)[1:2] or [""])[0] == "True", f"{lost} Ready", 2)
    demo.watch(("get", "deployments"), spread(demo, {kept: 8, lost: 7}), f"replicas back on {lost}", 4)
    demo.show(*SPLIT_EVENTS)

    demo.step(f"A cluster on an older release (Kubernetes {OLD_RELEASE}) attaches: kcp negotiates the APIs "
              "(each type's schema is what every cluster has)")
    with old_cluster(root) as old_kubeconfig:
        demo.wait(old_kubeconfig.exists, "sim-old started")
        with contextlib.suppress(SystemExit):
            demo.wait(lambda: demo.quiet("get", "--raw", "/version", kubeconfig=old_kubeconfig).returncode == 0,
                      "sim-old serving")
        demo.show("get", "--raw", "/version", shown=f"--kubeconfig {old_kubeconfig} get --raw /version",
                  kubeconfig=old_kubeconfig)
        attach(demo, [sync_target("sim-old", old_kubeconfig.read_text())], tmp)
        demo.wait(lambda: any(t["metadata"]["name"] == "sim-old" and condition(t, "APIsImported")
                              for t in demo.get("synctargets")), "sim-old's APIsImported condition")
        demo.show("get", "synctargets")
        demo.show("get", "synctarget", "sim-old", "-o",
                  "jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}{\"\\n\"}{end}")
        old_target = next(t for t in demo.get("synctargets") if t["metadata"]["name"] == "sim-old")
        incompatible = (old_target.get("status") or {}).get("incompatibleFields") or {"(none)": []}
        # the Deployment's are the ones this demo is about, when it has any (the types come in name order)
        resource, lacking = next(((r, f) for r, f in incompatible.items() if r == "deployments.apps"),
                                 next(iter(incompatible.items())))
        demo.say(f"APIsImported's message names the {len(lacking)} fields of {resource} that Kubernetes "
                 f"{OLD_RELEASE} lacks, e.g. {', '.join(lacking[:2])}")
        demo.say("sim-old leaves: its SyncTarget is deleted and the demo stops its process")
        demo.show("delete", "synctarget", "sim-old")
    print(f"\n# The end. The demo's objects stay in logical cluster `{CLUSTER}`: "
          f"KUBECONFIG={demo.kubeconfig} kubectl get deployments,synctargets", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, default=Path(".kcp/admin.kubeconfig"))
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds each step may take")
    parser.add_argument("--pause", type=float, default=3.0, help="seconds between steps, to read each one")
    args = parser.parse_args(argv)
    if not args.kubeconfig.exists():
        raise SystemExit(f"{args.kubeconfig} not found: start the suite first (`make run` in another shell)")
    preflight(args.kubeconfig)
    root = args.kubeconfig.resolve().parent
    demo = Demo(in_cluster(args.kubeconfig, CLUSTER, root / f"{CLUSTER}.kubeconfig"), args.kubectl, args.pause,
                args.timeout)
    with tempfile.TemporaryDirectory() as tmp:
        play(demo, root, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
