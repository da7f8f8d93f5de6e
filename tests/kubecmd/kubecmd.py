"""Run kube's own kubectl tests (test/cmd, fetched by scripts/kube_source.sh) against kcp-sim-cluster or
against kcp with two simulated clusters attached, with each kubectl given; print and save the outcome
of every assertion.

    python tests/kubecmd/kubecmd.py --target sim --kubectl kubectl --kubectl .tools/bin/kubectl \
        run_deployment_tests run_rs_tests ...

The servers are the project's own launchers (tests/e2e's KcpServer, cluster controller, splitter).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from daemon_process import ClusterControllerProcess  # noqa: E402
from splitter_fixtures import SplitterProcess  # noqa: E402
from syncer_fixtures import eventually, sim_cluster  # noqa: E402

from kcp_process import KcpServer, free_port, run_kubectl  # noqa: E402

# What kcp syncs down to its clusters: the kinds its kube test functions create
KCP_RESOURCES = ["deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps",
                 "controllerrevisions.apps", "services", "configmaps", "secrets", "jobs.batch", "cronjobs.batch", "pods",
                 "serviceaccounts", "replicationcontrollers", "resourcequotas", "horizontalpodautoscalers.autoscaling",
                 # kubectl apply --prune's default list, every kind of which must be served: Endpoints, PVCs, PVs, ...
                 "endpoints", "persistentvolumeclaims", "persistentvolumes", "ingresses.networking.k8s.io"]
SYNC_TARGET_CRD = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"


@dataclass
class Assertion:
    function: str
    status: str  # PASS, FAIL, or DONE (the function's end; detail = its exit status)
    where: str
    detail: str


@dataclass
class FunctionOutcome:
    name: str
    kubectl: str
    passed: int = 0
    failed: list[Assertion] = field(default_factory=list)
    exit_status: int | None = None
    seconds: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.failed


def passing_functions(target: str) -> list[str]:
    """The functions functions.txt lists for `target` (those that pass)."""
    prefix = f"{target}:"
    return [name for line in (HERE / "functions.txt").read_text().splitlines() if line.startswith(prefix)
            for name in line[len(prefix):].split()]


def kube_source() -> Path:
    """kube's extracted source tree (downloaded and checked by scripts/kube_source.sh on first use)."""
    out = subprocess.run([str(REPO / "scripts" / "kube_source.sh")], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def kubectl_version(kubectl: str) -> str:
    out = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, check=True)
    return str(json.loads(out.stdout)["clientVersion"]["gitVersion"])


def run_functions(kubeconfig: Path, kubectl: str, functions: list[str], results: Path, *,
                  keep_going: bool = False, target: str = "sim", log: Path | None = None,
                  timeout: float = 900) -> list[FunctionOutcome]:
    """Run kube's `functions` with `kubectl` against the `target` server ("sim" or "kcp") of `kubeconfig`; one outcome
    each."""
    results.unlink(missing_ok=True)
    results.touch()
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C", "TERM": "dumb",
           "KUBECMD_KEEP_GOING": "1" if keep_going else "",
           "KUBECMD_CREATE_NODE": "1" if target == "sim" else "", "KUBECMD_TARGET": target}
    with open(log or results.with_suffix(".log"), "a") as out:
        subprocess.run(["bash", str(HERE / "run.sh"), str(kube_source()), str(kubeconfig),
                        os.path.abspath(shutil.which(kubectl) or kubectl), str(results), *functions],
                       stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
    version = kubectl_version(kubectl)
    outcomes = {name: FunctionOutcome(name, version) for name in functions}
    for line in results.read_text().splitlines():
        assertion = Assertion(*line.split("\t", 3))
        outcome = outcomes[assertion.function]
        if assertion.status == "PASS":
            outcome.passed += 1
        elif assertion.status == "FAIL":
            outcome.failed.append(assertion)
        else:
            outcome.exit_status = int(assertion.where)
            outcome.seconds = int(assertion.detail.split()[0])
    return list(outcomes.values())


@contextlib.contextmanager
def sim_server(root: Path) -> Iterator[Path]:
    """One kcp-sim-cluster shaped as kube's test-cmd cluster: no Nodes of its own (kube's harness runs no
    kubelet and creates Node 127.0.0.1 by hand; run.sh does the same); yields its admin kubeconfig. kube's
    functions meet that Node long after its controller-manager's 60 s startup grace has made it Unknown; here
    the grace is 0, so it is Unknown as soon as run.sh has made it. Service IPs come from kube's harness's
    range (its scripts name 10.0.0.12)."""
    sim = sim_cluster(root / "sim", "--nodes", "0", "--node-startup-grace-period", "0",
                      "--service-cluster-ip-range", "10.0.0.0/24")
    try:
        sim.start()
        yield sim.kubeconfig
    finally:
        sim.stop()


@contextlib.contextmanager
def kcp_fleet(root: Path) -> Iterator[Path]:
    """kcp, two simulated clusters (kube 1.25 and the newest) registered as SyncTargets, the cluster
    controller (push mode: imports their types, runs their syncers) and the deployment splitter."""
    import yaml

    # Service IPs from kube's harness's range, as the sim's (kube's scripts name 10.0.0.12)
    kcp = KcpServer(root / "kcp", free_port(), ["--service-cluster-ip-range", "10.0.0.0/24"])
    # no Nodes, as kube's harness runs no kubelet (README, adaptation 6): the pods stay Pending in the clusters, so
    # a rollout is still in progress where kube's scripts expect it to be
    clusters = {"old": sim_cluster(root / "old", "--nodes", "0", "--kubernetes-version", "1.25"),
                "new": sim_cluster(root / "new", "--nodes", "0")}
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8",
        "--discovery-interval", "5"])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, *clusters.values()):
            server.start()
            started.append(server)
        controller.start()
        splitter.start(wait_ready=False)
        run_kubectl(kcp, "apply", "-f", str(SYNC_TARGET_CRD))
        eventually(lambda: run_kubectl(kcp, "get", "synctargets", check=False).returncode == 0, "SyncTargets served")
        for name, physical in clusters.items():
            target = {"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
                      "spec": {"kubeconfig": physical.kubeconfig.read_text(), "resources": KCP_RESOURCES}}
            run_kubectl(kcp, "apply", "-f", "-", input_text=yaml.safe_dump(target))
        for name in clusters:
            run_kubectl(kcp, "wait", f"synctarget/{name}", "--for", "condition=Ready", "--timeout=90s", timeout=100)
        eventually(lambda: run_kubectl(kcp, "get", "deployments,replicasets,services,jobs", check=False).returncode == 0,
                   "the types imported into kcp", timeout=90)
        yield kcp.kubeconfig
    finally:
        splitter.stop()
        controller.stop()
        for server in reversed(started):
            server.stop()


def summary(outcomes: list[FunctionOutcome]) -> str:
    lines = []
    for outcome in outcomes:
        verdict = "ok" if outcome.ok else f"FAILED (exit {outcome.exit_status})"
        lines.append(f"{outcome.kubectl:>10} {outcome.name:<45} {outcome.passed:>4} passed "
                     f"{len(outcome.failed):>3} failed {outcome.seconds:>4} s  {verdict}")
        lines.extend(f"{'':>12}{a.where}: {a.detail}" for a in outcome.failed)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=["sim", "kcp"], default="sim")
    parser.add_argument("--kubectl", action="append", help="a kubectl binary (repeat for several)")
    parser.add_argument("--keep-going", action="store_true", help="count the assertions after a failed one too")
    parser.add_argument("--out", type=Path, default=REPO / "tests/kubecmd/results")
    parser.add_argument("functions", nargs="*", help="default: those functions.txt lists for the target")
    args = parser.parse_args(argv)
    args.functions = args.functions or passing_functions(args.target)
    args.out.mkdir(parents=True, exist_ok=True)
    server = sim_server if args.target == "sim" else kcp_fleet
    outcomes: list[FunctionOutcome] = []
    for kubectl in args.kubectl or ["kubectl"]:  # a fresh server each: one kubectl's leftovers fail no other's
        version = kubectl_version(kubectl)
        servers = args.out / f"{args.target}-servers-{version}"
        shutil.rmtree(servers, ignore_errors=True)  # an earlier invocation's etcd data is not a fresh server
        with server(servers) as kubeconfig:
            outcomes += run_functions(kubeconfig, kubectl, args.functions,
                                      args.out / f"{args.target}-{version}.tsv", keep_going=args.keep_going,
                                      target=args.target)
    print(summary(outcomes))
    (args.out / f"{args.target}.json").write_text(json.dumps(
        [{"function": o.name, "kubectl": o.kubectl, "passed": o.passed, "exit_status": o.exit_status, "seconds": o.seconds,
          "failed": [{"where": a.where, "detail": a.detail} for a in o.failed]} for o in outcomes], indent=1))
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
