"""kcp-cluster-controller with real processes: kcp, two physical clusters (a simulated one at Kubernetes 1.25,
and one at the newest release: simulated, or a real kube 1.20 with agent Nodes under `make kube-e2e`) and `python -m kcp_cluster_controller --syncer-mode push` (and, on a
kcp of its own, `--syncer-mode pull`, whose installed syncer the test runs as a process).

SyncTargets become Ready (kubectl wait), the physical clusters' types appear in kcp (api-resources,
explain), a bad kubeconfig is reported, schema negotiation names what the older cluster lacks and
forgets it when that cluster leaves, and a stopped cluster goes NotReady and comes back with
nothing deleted downstream. Every wait is on a condition, never a fixed sleep.
"""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from physical_fixtures import Physical, sim_only
from syncer_fixtures import ASSIGNMENT_LABEL, Rest, SyncerProcess, eventually, sim_cluster, syncer_env

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl
from kcpcommon.keys import PLACED, placed_label
from kcpcommon.sharding import owns
from kcpsyncer import downstream_namespace

PATIENCE = 60.0
# test_real_kube.py installs and runs a pull-mode syncer in kube 1.20 (real RBAC, per-namespace Secrets)
PULL_ON_THE_SIM = "pull mode against kube 1.20 is test_real_kube.py's"
THRESHOLD = 8  # seconds without a heartbeat before NotReady (the flag; 30 s by default)
CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
ST_PATH = "/apis/workload.kcp.io/v1alpha1/synctargets"
LOCATION_CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/location-crd.yaml"
LOCATIONS = "/apis/scheduling.kcp.io/v1alpha1/locations"


@dataclass
class Env:
    kcp: KcpServer
    new: Physical  # the newest release (sim) or a real kube 1.20
    old: KcpServer  # Kubernetes 1.25 (sim)
    root: Path
    physical: Callable[[Path], Physical]  # another cluster of new's kind


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, physical: Callable[[Path], Physical]) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("cluster-controller")
    kcp = KcpServer(root / "kcp", free_port())
    new, old = physical(root / "new"), sim_cluster(root / "old", "--kubernetes-version", "1.25")
    started: list[KcpServer | Physical] = []
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2",
        "--heartbeat-threshold", str(THRESHOLD), "--discovery-interval", "5"])
    try:
        for server in (kcp, new, old):
            server.start()
            started.append(server)
        controller.start()
        yield Env(kcp, new, old, root, physical)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def logical_cluster(env: Env | EnvLike, name: str) -> Path:
    """A kubeconfig for logical cluster `name`, into which the SyncTarget CRD is applied (copied, as a user
    would copy it from admin: that is all a logical cluster needs for SyncTargets to work)."""
    kubeconfig = cluster_kubeconfig(env.kcp, name, name)
    run_kubectl(env.kcp, "apply", "-f", str(CRD_FILE), kubeconfig=kubeconfig)
    eventually(lambda: run_kubectl(env.kcp, "get", "synctargets", kubeconfig=kubeconfig, check=False).returncode == 0,
               f"SyncTargets served in {name}")
    return kubeconfig


def sync_target(name: str, physical: KcpServer | None, kubeconfig_text: str | None = None) -> str:
    text = kubeconfig_text if kubeconfig_text is not None else physical.kubeconfig.read_text()  # type: ignore[union-attr]
    return yaml.safe_dump({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget",
                           "metadata": {"name": name}, "spec": {"kubeconfig": text}})


def condition(rest: Rest, name: str, type_: str) -> dict[str, Any]:
    st = rest.get(f"{ST_PATH}/{name}") or {}
    for cond in (st.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def wait_ready(env: Env | EnvLike, kubeconfig: Path, name: str, timeout: int = 30) -> None:
    run_kubectl(env.kcp, "wait", f"synctarget/{name}", "--for", "condition=Ready", f"--timeout={timeout}s",
                kubeconfig=kubeconfig, timeout=timeout + 10)


def test_the_controller_installs_the_synctarget_crd_into_admin(env: Env) -> None:
    eventually(lambda: run_kubectl(env.kcp, "get", "crd", "synctargets.workload.kcp.io", check=False).returncode == 0,
               "the SyncTarget CRD in admin")
    # seed 004's YAML applies verbatim (its kubeconfig points nowhere: the SyncTarget is created, not Ready)
    seed = (REPO / "services/cluster-controller/tests/seed-004-synctarget.yaml").read_text()
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=seed)
    out = run_kubectl(env.kcp, "get", "clusters").stdout
    assert out.split("\n")[0].split() == ["NAME", "READY", "SYNCER", "EVICTION", "CAPACITY", "AGE"]
    run_kubectl(env.kcp, "delete", "synctarget", "my-cluster", "--timeout=60s")


def test_push_mode_synctarget_ready_and_types_imported(env: Env) -> None:
    kubeconfig = logical_cluster(env, "cc-push")
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target("east", env.new), kubeconfig=kubeconfig)
    wait_ready(env, kubeconfig, "east", timeout=30)

    table = run_kubectl(env.kcp, "get", "clusters", kubeconfig=kubeconfig).stdout.splitlines()
    assert table[1].split()[:2] == ["east", "True"], table
    rest = Rest(env.kcp).at("cc-push")
    status = rest.get(f"{ST_PATH}/east")["status"]
    assert status["capacity"]["cpu"] and status["allocatable"]["pods"]
    assert {"deployments.apps", "services", "jobs.batch"} <= set(status["importedResources"])

    resources = run_kubectl(env.kcp, "api-resources", "-o", "name", kubeconfig=kubeconfig).stdout.split()
    assert {"deployments.apps", "statefulsets.apps", "services", "jobs.batch"} <= set(resources)
    explained = run_kubectl(env.kcp, "explain", "deployment.spec.replicas", kubeconfig=kubeconfig).stdout
    assert "replicas" in explained and "<integer>" in explained


@sim_only("a simulated fleet of clusters served below /clusters/<name>; kube 1.20 serves at its root")
def test_a_cluster_served_below_a_path_imports_its_types(env: Env) -> None:
    """kcp-sim-cluster --clusters 2 serves each cluster at /clusters/<name>, as kcp does: its OpenAPI index's URLs
    are relative to the host's root, and the controller reads them so (it stayed ImportsFailed before)."""
    fleet = sim_cluster(env.root / "fleet", "--clusters", "2")
    fleet.start()
    try:
        kubeconfig = logical_cluster(env, "cc-below-path")
        run_kubectl(env.kcp, "apply", "-f", "-", kubeconfig=kubeconfig,
                    input_text=sync_target("second", None, (fleet.root / "sim-2.kubeconfig").read_text()))
        wait_ready(env, kubeconfig, "second", timeout=60)
        status = Rest(env.kcp).at("cc-below-path").get(f"{ST_PATH}/second")["status"]
        assert {"deployments.apps", "services"} <= set(status["importedResources"])
        run_kubectl(env.kcp, "delete", "synctarget", "second", "--timeout=60s", kubeconfig=kubeconfig)
    finally:
        fleet.stop()


def test_a_location_groups_the_synctargets_it_selects_and_sums_what_the_ready_ones_offer(env: Env) -> None:
    """A compute workspace: two clusters registered once with region labels, a Location per region; each
    Location's status follows its SyncTargets (a label change moves one across) and kubectl shows it."""
    kubeconfig = logical_cluster(env, "cc-compute")
    run_kubectl(env.kcp, "apply", "-f", str(LOCATION_CRD_FILE), kubeconfig=kubeconfig)
    eventually(lambda: run_kubectl(env.kcp, "get", "locations", kubeconfig=kubeconfig, check=False).returncode == 0,
               "Locations served in cc-compute")
    for name, physical, region in (("eu-1", env.new, "eu"), ("us-1", env.old, "us")):
        body = yaml.safe_load(sync_target(name, physical))
        body["metadata"]["labels"] = {"region": region}
        run_kubectl(env.kcp, "apply", "-f", "-", input_text=yaml.safe_dump(body), kubeconfig=kubeconfig)
    for region in ("eu", "us"):
        run_kubectl(env.kcp, "apply", "-f", "-", kubeconfig=kubeconfig, input_text=yaml.safe_dump({
            "apiVersion": "scheduling.kcp.io/v1alpha1", "kind": "Location", "metadata": {"name": region},
            "spec": {"instanceSelector": {"matchLabels": {"region": region}}}}))
    wait_ready(env, kubeconfig, "eu-1", timeout=60)
    wait_ready(env, kubeconfig, "us-1", timeout=60)
    rest = Rest(env.kcp).at("cc-compute")
    eu_pods = int(rest.get(f"{ST_PATH}/eu-1")["status"]["allocatable"]["pods"])
    us_pods = int(rest.get(f"{ST_PATH}/us-1")["status"]["allocatable"]["pods"])

    def location(name: str, instances: int, available: int) -> dict[str, Any] | None:
        status = (rest.get(f"{LOCATIONS}/{name}") or {}).get("status") or {}
        ok = status.get("instances") == instances and status.get("availableInstances") == available
        return status if ok else None

    eu = eventually(lambda: location("eu", 1, 1), "Location eu counts eu-1")
    assert int(eu["allocatable"]["pods"]) == eu_pods
    assert eu["conditions"][0]["reason"] == "InstancesAvailable"
    table = run_kubectl(env.kcp, "get", "locations", kubeconfig=kubeconfig).stdout.splitlines()
    assert table[0].split() == ["NAME", "RESOURCE", "AVAILABLE", "INSTANCES", "AGE"]
    assert table[1].split()[:4] == ["eu", "synctargets", "1", "1"]
    run_kubectl(env.kcp, "label", "synctarget", "us-1", "region=eu", "--overwrite", kubeconfig=kubeconfig)
    eu = eventually(lambda: location("eu", 2, 2), "Location eu counts us-1 once relabelled")
    assert int(eu["allocatable"]["pods"]) == eu_pods + us_pods
    us = eventually(lambda: location("us", 0, 0), "Location us left empty")
    assert us["conditions"][0]["reason"] == "NoInstancesAvailable"
    run_kubectl(env.kcp, "patch", "synctarget", "eu-1", "--type=merge", "-p", '{"spec":{"unschedulable":true}}',
                kubeconfig=kubeconfig)
    eventually(lambda: location("eu", 2, 1), "an unschedulable SyncTarget is no longer available")
    for name in ("eu-1", "us-1"):
        run_kubectl(env.kcp, "delete", "synctarget", name, "--timeout=60s", kubeconfig=kubeconfig)


def test_a_kubeconfig_that_does_not_parse_is_invalid_kubeconfig(env: Env) -> None:
    kubeconfig = logical_cluster(env, "cc-bad")
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target("broken", None, "clusters: [ {oops"),
                kubeconfig=kubeconfig)
    rest = Rest(env.kcp).at("cc-bad")
    ready = eventually(lambda: (c := condition(rest, "broken", "Ready")).get("reason") and c, "Ready reported")
    assert (ready["status"], ready["reason"]) == ("False", "InvalidKubeConfig")
    assert "YAML" in ready["message"]


def test_unauthorized_credentials_are_reported_with_the_servers_answer(env: Env) -> None:
    kubeconfig = logical_cluster(env, "cc-bad")
    config = yaml.safe_load(env.new.kubeconfig.read_text())
    config["users"][0]["user"]["token"] = "not-a-valid-token"
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target("stranger", None, yaml.safe_dump(config)),
                kubeconfig=kubeconfig)
    rest = Rest(env.kcp).at("cc-bad")
    ready = eventually(lambda: (c := condition(rest, "stranger", "Ready")).get("reason") and c, "Ready reported")
    assert (ready["status"], ready["reason"]) == ("False", "ClusterUnreachable")
    assert "401" in ready["message"] and "Unauthorized" in ready["message"]
    for detail in ("SyncerReady", "HeartbeatHealthy"):  # none reads True while Ready says the cluster is away
        assert (condition(rest, "stranger", detail).get("status"), condition(rest, "stranger", detail).get(
            "reason")) == ("False", "ClusterUnreachable"), detail


@sim_only("needs the newest release beside 1.25; test_real_kube.py negotiates kube 1.20 with the newest sim")
def test_negotiation_names_what_the_older_cluster_lacks_and_forgets_it_when_it_leaves(env: Env) -> None:
    kubeconfig = logical_cluster(env, "cc-neg")
    rest = Rest(env.kcp).at("cc-neg")
    for name, server in (("newest", env.new), ("older", env.old)):
        run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target(name, server), kubeconfig=kubeconfig)
    for name in ("newest", "older"):
        wait_ready(env, kubeconfig, name, timeout=60)

    def incompatible() -> dict[str, list[str]]:
        return rest.get("/apis/workload.kcp.io/v1alpha1/synctargets/older").get("status", {}).get(
            "incompatibleFields") or {}

    eventually(lambda: "deployments.apps" in incompatible(), f"deployments.apps incompatible ({incompatible()})")
    lacking = incompatible()
    assert "spec.template.spec.containers[*].resizePolicy" in lacking["deployments.apps"]
    older = condition(rest, "older", "APIsImported")
    assert (older["status"], older["reason"]) == ("False", "IncompatibleSchema")
    assert "deployments.apps: this cluster lacks fields the other clusters have: " in older["message"], older
    assert len(older["message"]) < 600 * len(lacking), "three fields per type, not every one"
    newest = eventually(lambda: (c := condition(rest, "newest", "APIsImported")).get("status") and c, "newest")
    assert newest["status"] == "True", newest

    explain = ["explain", "deployment.spec.template.spec.containers.resizePolicy"]
    assert run_kubectl(env.kcp, *explain, kubeconfig=kubeconfig, check=False).returncode != 0  # the common subset

    run_kubectl(env.kcp, "delete", "synctarget", "older", "--timeout=60s", kubeconfig=kubeconfig)
    eventually(lambda: run_kubectl(env.kcp, *explain, kubeconfig=kubeconfig, check=False).returncode == 0,
               "the published Deployment widened to the newest cluster's schema")
    assert condition(rest, "newest", "APIsImported")["status"] == "True"


@sim_only("against kube 1.20 the splitter demo's failover (NotReady, then back) and the syncer suite's stopped "
          "cluster cover it: a third restart of a real control plane would cost make kube-e2e 90 s")
def test_a_stopped_cluster_goes_not_ready_and_comes_back_with_nothing_deleted(env: Env) -> None:
    physical = env.physical(env.root / "flaky")
    physical.start()
    try:
        kubeconfig = logical_cluster(env, "cc-flaky")
        run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target("flaky", physical), kubeconfig=kubeconfig)
        wait_ready(env, kubeconfig, "flaky", timeout=30)
        up, down = Rest(env.kcp).at("cc-flaky"), Rest(physical)
        up.create("/api/v1/namespaces/default/configmaps", {
            "metadata": {"name": "settings", "labels": {ASSIGNMENT_LABEL: "flaky"}}, "data": {"a": "1"}})
        mapped = f"/api/v1/namespaces/{downstream_namespace('cc-flaky', 'default')}/configmaps/settings"
        eventually(lambda: down.get(mapped), "the ConfigMap synced downstream")

        assert physical.stop() == 0
        stopped = time.monotonic()
        eventually(lambda: condition(up, "flaky", "Ready").get("status") == "False", "NotReady", timeout=PATIENCE)
        assert time.monotonic() - stopped < THRESHOLD + 15  # the threshold, plus a look and a write
        ready = condition(up, "flaky", "Ready")
        assert ready["reason"] in ("ClusterUnreachable", "HeartbeatStale"), ready

        physical.start()
        wait_ready(env, kubeconfig, "flaky", timeout=60)
        assert down.get(mapped)["data"] == {"a": "1"}  # nothing deleted downstream meanwhile
    finally:
        physical.stop()


def test_deleting_a_synctarget_stops_its_syncer_and_removes_its_imports_and_downstream_objects(env: Env) -> None:
    kubeconfig = logical_cluster(env, "cc-delete")
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target("gone", env.new), kubeconfig=kubeconfig)
    wait_ready(env, kubeconfig, "gone", timeout=30)
    rest, down = Rest(env.kcp).at("cc-delete"), Rest(env.new)
    assert rest.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/deployments.apps")
    st = rest.get(f"{ST_PATH}/gone")
    assert "workload.kcp.io/cluster-controller" in st["metadata"]["finalizers"]
    rest.create("/api/v1/namespaces/default/configmaps", {
        "metadata": {"name": "doomed", "labels": {ASSIGNMENT_LABEL: "gone"}}, "data": {"a": "1"}})
    mapped_namespace = downstream_namespace("cc-delete", "default")
    eventually(lambda: down.get(f"/api/v1/namespaces/{mapped_namespace}/configmaps/doomed"), "synced downstream")
    eventually(lambda: "workload.kcp.io/syncer-gone" in
               (rest.get("/api/v1/namespaces/default/configmaps/doomed")["metadata"].get("finalizers") or []),
               "the syncer's upstream finalizer")

    run_kubectl(env.kcp, "delete", "synctarget", "gone", "--timeout=60s", kubeconfig=kubeconfig)
    eventually(lambda: rest.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/deployments.apps") is None,
               "the imported Deployment CRD removed")
    # no syncer will lift its finalizer any more: the controller did, so the object can still be deleted
    assert not rest.get("/api/v1/namespaces/default/configmaps/doomed")["metadata"].get("finalizers")
    eventually(lambda: (ns := down.get(f"/api/v1/namespaces/{mapped_namespace}")) is None
               or ns["metadata"].get("deletionTimestamp"), "the syncer's downstream namespace removed")


def test_a_synctarget_annotated_keep_downstream_leaves_what_it_synced_when_deleted(env: Env) -> None:
    kubeconfig = logical_cluster(env, "cc-keep")
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=sync_target("kept", env.new), kubeconfig=kubeconfig)
    wait_ready(env, kubeconfig, "kept", timeout=30)
    rest, down = Rest(env.kcp).at("cc-keep"), Rest(env.new)
    rest.create("/api/v1/namespaces/default/configmaps", {
        "metadata": {"name": "stays", "labels": {ASSIGNMENT_LABEL: "kept"}}, "data": {"a": "1"}})
    mapped_namespace = downstream_namespace("cc-keep", "default")
    synced = eventually(lambda: down.get(f"/api/v1/namespaces/{mapped_namespace}/configmaps/stays"), "synced downstream")

    run_kubectl(env.kcp, "annotate", "synctarget", "kept", "workload.kcp.io/keep-downstream=true", kubeconfig=kubeconfig)
    run_kubectl(env.kcp, "delete", "synctarget", "kept", "--timeout=60s", kubeconfig=kubeconfig)
    assert rest.get(f"{ST_PATH}/kept") is None
    # the upstream finalizer is lifted all the same, and downstream everything is where it was
    assert not rest.get("/api/v1/namespaces/default/configmaps/stays")["metadata"].get("finalizers")
    namespace = down.get(f"/api/v1/namespaces/{mapped_namespace}")
    assert namespace is not None and not namespace["metadata"].get("deletionTimestamp")
    still = down.get(f"/api/v1/namespaces/{mapped_namespace}/configmaps/stays")
    assert still is not None and still["metadata"]["uid"] == synced["metadata"]["uid"]


# -- pull mode: the syncer is installed into the physical cluster ------------------------------------

@dataclass
class PullEnv:
    kcp: KcpServer
    physical: KcpServer
    root: Path


def controller_of_its_own(env: Env, mode: str) -> Iterator[PullEnv]:
    """A kcp of its own (one controller per kcp) with a `--syncer-mode <mode>` controller; the newest sim cluster."""
    root = env.root / mode
    kcp = KcpServer(root / "kcp", free_port())
    kcp.start()
    controller = ClusterControllerProcess(kcp, env.root / f"{mode}-controller.log", [
        "--syncer-mode", mode, "--no-leader-elect", "--heartbeat-interval", "2",
        "--heartbeat-threshold", str(THRESHOLD)])
    try:
        controller.start()
        yield PullEnv(kcp, env.new, root)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        kcp.stop()


@pytest.fixture(scope="module")
def pull_env(env: Env) -> Iterator[PullEnv]:
    yield from controller_of_its_own(env, "pull")


def installed_syncer(physical: KcpServer, target: str, workdir: Path) -> list[str]:
    """The installed Deployment's command and flags, with its Secret's kubeconfigs written where the
    flags point (the simulated kubelet runs no containers: the test runs the syncer as a process)."""
    down = Rest(physical)
    namespaces = eventually(lambda: [ns for ns in down.get("/api/v1/namespaces")["items"]
                                     if (ns["metadata"].get("labels") or {}).get("workload.kcp.io/sync-target")
                                     == target], "the syncer's namespace")
    namespace = namespaces[0]["metadata"]["name"]
    deployment = eventually(lambda: down.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/kcp-syncer"),
                            "the syncer Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    (mount,) = container["volumeMounts"]
    secret = down.get(f"/api/v1/namespaces/{namespace}/secrets/{pod['volumes'][0]['secret']['secretName']}")
    workdir.mkdir(parents=True, exist_ok=True)
    for name, value in secret["data"].items():
        (workdir / name).write_bytes(base64.b64decode(value))
    assert container["command"] == ["kcp-syncer"]
    args = [arg.replace(mount["mountPath"], str(workdir)) for arg in container["args"]]
    return [sys.executable, "-m", "kcp_syncer", *args, "--health-port", "0"]


@sim_only(PULL_ON_THE_SIM)
def test_pull_mode_installs_a_syncer_that_makes_the_synctarget_ready(pull_env: PullEnv) -> None:
    kubeconfig = logical_cluster(EnvLike(pull_env), "pull-a")
    run_kubectl(pull_env.kcp, "apply", "-f", "-", input_text=sync_target("east", pull_env.physical),
                kubeconfig=kubeconfig)
    up = Rest(pull_env.kcp).at("pull-a")
    eventually(lambda: condition(up, "east", "SyncerReady").get("status") == "True", "the syncer Deployment available")
    command = installed_syncer(pull_env.physical, "east", pull_env.root / "syncer-east")
    log = open(pull_env.root / "syncer-east.log", "ab")
    syncer = subprocess.Popen(command, stdout=log, stderr=log, env=syncer_env(), start_new_session=True)
    log.close()
    try:
        wait_ready(EnvLike(pull_env), kubeconfig, "east", timeout=30)
        up.create("/api/v1/namespaces/default/configmaps", {
            "metadata": {"name": "pulled", "labels": {ASSIGNMENT_LABEL: "east"}}, "data": {"a": "1"}})
        mapped = f"/api/v1/namespaces/{downstream_namespace('pull-a', 'default')}/configmaps/pulled"
        eventually(lambda: Rest(pull_env.physical).get(mapped), "the ConfigMap synced down by the pulled syncer")
        # its pods come up into kcp: the installed RBAC lets the syncer make kcp's copies
        up.create("/apis/apps/v1/namespaces/default/deployments", {
            "metadata": {"name": "pulled", "labels": {ASSIGNMENT_LABEL: "east"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "pulled"}},
                     "template": {"metadata": {"labels": {"app": "pulled"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
        eventually(lambda: len((up.get("/api/v1/namespaces/default/pods?labelSelector="
                                       "state.workload.kcp.io%2Feast%3DUpsync") or {}).get("items") or []) == 2,
                   "the Deployment's 2 pods mirrored into kcp by the pulled syncer")
        assert_confined_to_its_own_namespaces(pull_env.physical, pull_env.root / "syncer-east" / "cluster.kubeconfig",
                                              downstream_namespace("pull-a", "default"))
    finally:
        syncer.send_signal(signal.SIGTERM)
        syncer.wait(30)


def assert_confined_to_its_own_namespaces(physical: KcpServer, token: Path, own: str) -> None:
    """The pulled syncer's token on the physical cluster writes and reads namespaced objects only in `own`."""
    mine = run_kubectl(physical, "get", "configmap", "pulled", "-n", own, kubeconfig=token, check=False)
    assert mine.returncode == 0, mine.stderr  # the token works, in a namespace the syncer made
    for args in (("create", "configmap", "intruder", "-n", "default", "--from-literal", "a=1"),
                 ("create", "deployment", "intruder", "--image", "nginx", "-n", "default"),
                 ("get", "pods", "--all-namespaces")):
        refused = run_kubectl(physical, *args, kubeconfig=token, check=False)
        assert refused.returncode != 0 and " is forbidden: User " in refused.stderr, (args, refused.stdout, refused.stderr)


@sim_only(PULL_ON_THE_SIM)
def test_a_pull_mode_syncers_kcp_identity_cannot_read_another_logical_cluster(pull_env: PullEnv) -> None:
    kubeconfig = logical_cluster(EnvLike(pull_env), "pull-b")
    run_kubectl(pull_env.kcp, "apply", "-f", "-", input_text=sync_target("west", pull_env.physical),
                kubeconfig=kubeconfig)
    workdir = pull_env.root / "syncer-west"
    installed_syncer(pull_env.physical, "west", workdir)
    syncer_kcp = workdir / "kcp.kubeconfig"
    own = run_kubectl(pull_env.kcp, "get", "configmaps", "-n", "default", kubeconfig=syncer_kcp, check=False)
    assert own.returncode == 0, own.stderr
    Rest(pull_env.kcp).at("pull-other").create("/api/v1/namespaces/default/configmaps",
                                               {"metadata": {"name": "secret-plans"}, "data": {"x": "1"}})
    server = f"{pull_env.kcp.url}/clusters/pull-other"
    other = run_kubectl(pull_env.kcp, "--server", server, "get", "configmap", "secret-plans", "-n", "default",
                        kubeconfig=syncer_kcp, check=False)
    assert other.returncode != 0 and "secret-plans" not in other.stdout
    assert "Forbidden" in other.stderr or "Unauthorized" in other.stderr or "forbidden" in other.stderr, other.stderr
    # nor what its own logical cluster holds beyond the synced types
    denied = run_kubectl(pull_env.kcp, "get", "roles", "-n", "default", kubeconfig=syncer_kcp, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr

    run_kubectl(pull_env.kcp, "delete", "synctarget", "west", "--timeout=60s", kubeconfig=kubeconfig)
    down = Rest(pull_env.physical)
    eventually(lambda: not [ns for ns in down.get("/api/v1/namespaces")["items"]
                            if (ns["metadata"].get("labels") or {}).get("workload.kcp.io/sync-target") == "west"
                            and not ns["metadata"].get("deletionTimestamp")], "the installed syncer removed")


@sim_only(PULL_ON_THE_SIM)
def test_a_pull_mode_syncer_serves_placed_workspaces_through_the_syncer_view_and_reaches_nothing_else(
        pull_env: PullEnv) -> None:
    """Shared compute in pull mode: the SyncTarget's installed syncer (a ServiceAccount of the compute workspace,
    a stranger everywhere else) reaches a team's namespace placed on it through kcp's syncer virtual workspace, and
    only that: not the team's other namespaces, not the team's workspace directly, not another SyncTarget's view."""
    compute, team = "pull-compute", "pull-team"
    kubeconfig = logical_cluster(EnvLike(pull_env), compute)
    run_kubectl(pull_env.kcp, "apply", "-f", "-", input_text=sync_target("north", pull_env.physical),
                kubeconfig=kubeconfig)
    up = Rest(pull_env.kcp).at(compute)
    eventually(lambda: condition(up, "north", "SyncerReady").get("status") == "True", "the syncer Deployment available")
    workdir = pull_env.root / "syncer-north"
    command = installed_syncer(pull_env.physical, "north", workdir)
    mine = Rest(pull_env.kcp).at(team)
    placed = {ASSIGNMENT_LABEL: "north", placed_label(compute, "north"): PLACED}
    mine.create("/api/v1/namespaces", {"metadata": {"name": "private", "labels": {ASSIGNMENT_LABEL: "north"}}})
    mine.patch("/api/v1/namespaces/default", {"metadata": {"labels": placed}})
    for namespace in ("default", "private"):
        mine.create(f"/api/v1/namespaces/{namespace}/configmaps", {
            "metadata": {"name": "plans", "labels": {ASSIGNMENT_LABEL: "north"}}, "data": {"where": namespace}})
    log = open(pull_env.root / "syncer-north.log", "ab")
    syncer = subprocess.Popen(command, stdout=log, stderr=log, env=syncer_env(), start_new_session=True)
    log.close()
    try:
        wait_ready(EnvLike(pull_env), kubeconfig, "north", timeout=30)
        down = Rest(pull_env.physical)
        synced = f"/api/v1/namespaces/{downstream_namespace(team, 'default')}/configmaps/plans"
        copy = eventually(lambda: down.get(synced), "the placed namespace's ConfigMap synced down through the view")
        assert copy["data"] == {"where": "default"}
        assert not down.get(f"/api/v1/namespaces/{downstream_namespace(team, 'private')}/configmaps/plans")
        token = workdir / "kcp.kubeconfig"
        view = f"{pull_env.kcp.url}/services/syncer/{compute}/north/clusters/{team}"

        def as_syncer(server: str, *args: str) -> subprocess.CompletedProcess[str]:
            return run_kubectl(pull_env.kcp, "--server", server, *args, kubeconfig=token, check=False)

        allowed = as_syncer(view, "get", "configmap", "plans", "-n", "default", "-o", "jsonpath={.data.where}")
        assert allowed.returncode == 0 and allowed.stdout == "default", allowed.stderr
        listed = as_syncer(view, "get", "namespaces", "-o", "name")
        assert listed.stdout.split() == ["namespace/default"], listed
        for server, args in ((view, ("get", "configmap", "plans", "-n", "private")),
                             (view, ("create", "configmap", "dropped", "-n", "private")),
                             (f"{pull_env.kcp.url}/services/syncer/{compute}/south/clusters/{team}",
                              ("get", "configmap", "plans", "-n", "default")),
                             (f"{pull_env.kcp.url}/clusters/{team}", ("get", "configmap", "plans", "-n", "default"))):
            refused = as_syncer(server, *args)
            assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), (server, args, refused.stderr)
    finally:
        syncer.send_signal(signal.SIGTERM)
        syncer.wait(30)


@dataclass
class EnvLike:
    """What `logical_cluster` and `wait_ready` need of an environment: its kcp."""

    source: PullEnv

    @property
    def kcp(self) -> KcpServer:
        return self.source.kcp


# -- mode none: the syncer is someone else's ---------------------------------------------------------

@pytest.fixture(scope="module")
def none_env(env: Env) -> Iterator[PullEnv]:
    yield from controller_of_its_own(env, "none")


@sim_only("the controller's mode none, whatever the cluster; the syncer suite heartbeats against kube 1.20")
def test_mode_none_starts_no_syncer_and_goes_ready_on_the_heartbeat_of_one_started_by_someone_else(
        none_env: PullEnv) -> None:
    envlike = EnvLike(none_env)
    kubeconfig = logical_cluster(envlike, "cc-none")
    run_kubectl(none_env.kcp, "apply", "-f", "-", input_text=sync_target("solo", none_env.physical),
                kubeconfig=kubeconfig)
    rest = Rest(none_env.kcp).at("cc-none")
    syncer_ready = eventually(lambda: (c := condition(rest, "solo", "SyncerReady")).get("reason") and c,
                              "SyncerReady reported")
    assert (syncer_ready["status"], syncer_ready["reason"]) == ("Unknown", "ExternalSyncer")
    assert condition(rest, "solo", "APIsImported").get("status") == "True"  # the controller's own part is done
    assert condition(rest, "solo", "Ready").get("status") != "True"
    assert not (rest.get(f"{ST_PATH}/solo").get("status") or {}).get("lastSyncerHeartbeatTime")

    syncer = SyncerProcess(none_env.kcp, none_env.physical, "solo", "cc-none", none_env.root / "solo-syncer.log")
    syncer.start()
    try:
        wait_ready(envlike, kubeconfig, "solo", timeout=30)
        assert (rest.get(f"{ST_PATH}/solo")["status"]).get("lastSyncerHeartbeatTime")
    finally:
        assert syncer.stop() == 0


# -- shards: replicas split the logical clusters between them ----------------------------------------

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"  # in admin, where the controllers elect

@sim_only("the controller's sharding, whatever the cluster")
def test_two_shards_split_the_logical_clusters_and_each_reconciles_only_its_own(env: Env) -> None:
    root = env.root / "shards"
    kcp = KcpServer(root / "kcp", free_port())
    kcp.start()
    envlike = EnvLike(PullEnv(kcp, env.new, root))
    names = [f"shard-lc-{i}" for i in range(16)]
    by_shard = {index: [name for name in names if owns(name, index, 2)][:2] for index in (0, 1)}
    assert all(len(clusters) == 2 for clusters in by_shard.values())

    def controller(index: int) -> ClusterControllerProcess:
        return ClusterControllerProcess(kcp, root / f"shard-{index}.log", [
            "--syncer-mode", "none", "--leader-elect", "--shards", "2", "--shard-index", str(index)])

    def reported(cluster: str) -> bool:
        return bool(condition(Rest(kcp).at(cluster), "t", "SyncerReady"))

    started = [controller(0).start()]
    try:
        for cluster in by_shard[0] + by_shard[1]:
            kubeconfig = logical_cluster(envlike, cluster)
            run_kubectl(kcp, "apply", "-f", "-", input_text=sync_target("t", env.new), kubeconfig=kubeconfig)
        eventually(lambda: all(reported(cluster) for cluster in by_shard[0]), "shard 0's SyncTargets reported")
        assert not any(reported(cluster) for cluster in by_shard[1])  # the other shard's: left alone

        started.append(controller(1).start())  # leads its own shard's Lease at once: shard 0's is not in its way
        eventually(lambda: all(reported(cluster) for cluster in by_shard[1]), "shard 1's SyncTargets reported")
        for index, process in enumerate(started):  # each the leader of its shard's own Lease
            lease = Rest(kcp).get(f"{LEASES}/kcp-cluster-controller-shard-{index}")
            assert process.holds(lease["spec"]["holderIdentity"]), lease
    finally:
        for process in started:
            process.stop()
        kcp.stop()
