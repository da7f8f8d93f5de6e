"""kcp-sim-cluster's simulated control plane with the real kubectl: deployments roll out, update, roll
back and scale; services follow ready pods; a full cluster leaves pods Pending with kube's message;
the kubelet's annotations; jobs complete; cascading and namespace deletion; a sick node's pods move;
and a restart keeps every object with its pods Ready.

Every wait is on a condition (`kubectl rollout status`, `kubectl wait`, or a polled condition with a
generous deadline), never a fixed sleep.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sim_fixtures import get, kubectl

from kcp_process import KcpServer, free_port, run_kubectl, sim_cluster_command, sim_cluster_env

T = TypeVar("T")
PATIENCE = 60.0  # seconds: generous, the machine is shared

UNREADY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: unready}
spec:
  replicas: 2
  selector: {matchLabels: {app: unready}}
  template:
    metadata: {labels: {app: unready}, annotations: {sim.kcp.io/ready: "false"}}
    spec: {containers: [{name: c, image: nginx}]}
"""

CRASHING = """
apiVersion: v1
kind: Pod
metadata: {name: crasher, annotations: {sim.kcp.io/crash: "true"}}
spec: {containers: [{name: c, image: busybox}]}
"""

GREEDY = """
apiVersion: v1
kind: Pod
metadata: {name: greedy}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "5"}}}]
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


def sim(root: Path, *args: str) -> KcpServer:
    return KcpServer(root, free_port(), list(args), command=sim_cluster_command(), env=sim_cluster_env())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = sim(tmp_path_factory.mktemp("sim-workloads"), "--nodes", "3", "--ready-delay", "0.5",
                 "--eviction-toleration", "2")
    server.start(timeout=120)
    try:
        yield server
    finally:
        assert server.stop() == 0, server.log_tail()


@pytest.fixture(scope="module", autouse=True)
def cronjob_tick(cluster: KcpServer) -> str:
    """A CronJob every minute, made when the module starts: its test runs last, after the next minute boundary
    has passed, instead of waiting up to a minute for it."""
    ns = namespace(cluster, "cron")
    kubectl(cluster, "-n", ns, "create", "cronjob", "tick", "--image", "busybox", "--schedule", "* * * * *")
    return ns


def eventually(check: Callable[[], T | None], what: str, timeout: float = PATIENCE) -> T:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def fetched_when(fetch: Callable[[], Any], holds: Callable[[Any], bool], what: str) -> Any:
    """Fetch until the object satisfies `holds`; return it."""
    return eventually(lambda: (lambda obj: obj if holds(obj) else None)(fetch()), what)


def namespace(server: KcpServer, name: str) -> str:
    kubectl(server, "create", "namespace", name)
    return name


def rollout(server: KcpServer, ns: str, what: str) -> str:
    return kubectl(server, "-n", ns, "rollout", "status", what, "--timeout", f"{int(PATIENCE)}s",
                   timeout=PATIENCE + 10)


def pods(server: KcpServer, ns: str, selector: str = "") -> list[Any]:
    args = ["-n", ns, "pods"] + (["-l", selector] if selector else [])
    return get(server, *args)["items"]


def condition(obj: Any, type_: str) -> Any:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


# -- deployments ------------------------------------------------------------------------------


CHANGE_CAUSE = "kubernetes.io/change-cause"


def test_a_deployment_rolls_out_updates_and_rolls_back(cluster: KcpServer) -> None:
    ns = namespace(cluster, "rollouts")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx:1.25", "--replicas", "3")
    assert "successfully rolled out" in rollout(cluster, ns, "deployment/web")
    deploy = get(cluster, "-n", ns, "deployment", "web")
    status = deploy["status"]
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"], status["availableReplicas"]) \
        == (3, 3, 3, 3)
    assert status["observedGeneration"] == deploy["metadata"]["generation"]
    assert condition(deploy, "Available")["reason"] == "MinimumReplicasAvailable"
    assert condition(deploy, "Progressing")["reason"] == "NewReplicaSetAvailable"
    first = get(cluster, "-n", ns, "replicasets")["items"]
    assert len(first) == 1
    rs_name = first[0]["metadata"]["name"]
    hash_ = first[0]["metadata"]["labels"]["pod-template-hash"]
    assert rs_name == f"web-{hash_}"
    assert first[0]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    for pod in pods(cluster, ns, "app=web"):
        assert pod["metadata"]["name"].startswith(rs_name + "-")
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("ReplicaSet", rs_name, True)
        assert pod["status"]["phase"] == "Running" and pod["status"]["podIP"] and pod["spec"]["nodeName"]

    # a change-cause written after the ReplicaSet exists still reaches it (kube copies it at every sync)
    kubectl(cluster, "-n", ns, "annotate", "deployment/web", f"{CHANGE_CAUSE}=first")
    eventually(lambda: get(cluster, "-n", ns, "replicaset", rs_name)["metadata"]["annotations"].get(CHANGE_CAUSE)
               == "first", "the change-cause on the ReplicaSet")
    kubectl(cluster, "-n", ns, "patch", "deployment/web", "-p", json.dumps({
        "metadata": {"annotations": {CHANGE_CAUSE: "second"}},
        "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.26"}]}}}}))
    assert "successfully rolled out" in rollout(cluster, ns, "deployment/web")
    images = {p["spec"]["containers"][0]["image"] for p in pods(cluster, ns, "app=web")
              if not p["metadata"].get("deletionTimestamp")}
    assert images == {"nginx:1.26"}
    history = kubectl(cluster, "-n", ns, "rollout", "history", "deployment/web")
    assert [line.split() for line in history.splitlines()[2:] if line.strip()] == [["1", "first"], ["2", "second"]]
    events = kubectl(cluster, "-n", ns, "get", "events", "--field-selector", "reason=ScalingReplicaSet")
    assert f"Scaled up replica set {rs_name} from 0 to 3" in events

    kubectl(cluster, "-n", ns, "rollout", "undo", "deployment/web")
    assert "successfully rolled out" in rollout(cluster, ns, "deployment/web")
    replica_sets = {rs["metadata"]["name"]: rs for rs in get(cluster, "-n", ns, "replicasets")["items"]}
    assert len(replica_sets) == 2  # the undo made the first ReplicaSet new again
    assert replica_sets[rs_name]["spec"]["replicas"] == 3
    assert replica_sets[rs_name]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert get(cluster, "-n", ns, "deployment", "web")["metadata"]["annotations"][
        "deployment.kubernetes.io/revision"] == "3"


def test_a_rollout_that_cannot_progress_exceeds_its_deadline(cluster: KcpServer) -> None:
    ns = namespace(cluster, "stuck")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 2
  progressDeadlineSeconds: 3
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: "100"}}}]}
""")
    result = run_kubectl(cluster, "-n", ns, "rollout", "status", "deployment/stuck", "--timeout", f"{int(PATIENCE)}s",
                         check=False, timeout=PATIENCE + 10)
    assert result.returncode != 0
    assert 'deployment "stuck" exceeded its progress deadline' in result.stderr
    progressing = condition(get(cluster, "-n", ns, "deployment", "stuck"), "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert progressing["message"].startswith('ReplicaSet "stuck-') and \
        progressing["message"].endswith('" has timed out progressing.')
    available = condition(get(cluster, "-n", ns, "deployment", "stuck"), "Available")
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")


def test_scaling_a_deployment_and_a_paused_rollout(cluster: KcpServer) -> None:
    ns = namespace(cluster, "scaling")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "2")
    rollout(cluster, ns, "deployment/web")
    kubectl(cluster, "-n", ns, "scale", "deployment/web", "--replicas", "5")
    rollout(cluster, ns, "deployment/web")
    assert len(pods(cluster, ns, "app=web")) == 5
    assert get(cluster, "-n", ns, "deployment", "web")["status"]["availableReplicas"] == 5
    kubectl(cluster, "-n", ns, "rollout", "pause", "deployment/web")
    kubectl(cluster, "-n", ns, "set", "image", "deployment/web", "nginx=nginx:2")
    paused = fetched_when(lambda: get(cluster, "-n", ns, "deployment", "web"),
                          lambda d: (condition(d, "Progressing") or {}).get("reason") == "DeploymentPaused",
                          "the Progressing condition to say DeploymentPaused")
    assert condition(paused, "Progressing")["status"] == "Unknown"
    assert len(get(cluster, "-n", ns, "replicasets")["items"]) == 1  # paused: no new ReplicaSet
    kubectl(cluster, "-n", ns, "rollout", "resume", "deployment/web")
    rollout(cluster, ns, "deployment/web")
    assert {p["spec"]["containers"][0]["image"] for p in pods(cluster, ns, "app=web")
            if not p["metadata"].get("deletionTimestamp")} == {"nginx:2"}
    kubectl(cluster, "-n", ns, "scale", "deployment/web", "--replicas", "1")
    eventually(lambda: len(pods(cluster, ns, "app=web")) == 1, "the pods to shrink to 1")


def test_a_recreate_rollout_empties_the_old_replica_set_first(cluster: KcpServer) -> None:
    ns = namespace(cluster, "recreate")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  strategy: {type: Recreate}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: "nginx:1"}]}
""")
    rollout(cluster, ns, "deployment/web")
    old = get(cluster, "-n", ns, "replicasets")["items"][0]["metadata"]["name"]
    kubectl(cluster, "-n", ns, "set", "image", "deployment/web", "c=nginx:2")
    rollout(cluster, ns, "deployment/web")
    new = next(rs["metadata"]["name"] for rs in get(cluster, "-n", ns, "replicasets")["items"]
               if rs["metadata"]["name"] != old)
    events = sorted(get(cluster, "-n", ns, "events", "--field-selector", "reason=ScalingReplicaSet")["items"],
                    key=lambda e: (e["firstTimestamp"], e["metadata"]["name"]))
    messages = [e["message"] for e in events]
    assert messages[-2:] == [f"Scaled down replica set {old} from 3 to 0", f"Scaled up replica set {new} from 0 to 3"]


def test_several_clusters_in_one_process_each_run_their_workloads(tmp_path: Path) -> None:
    server = sim(tmp_path / "fleet", "--clusters", "2", "--name", "edge", "--nodes", "2", "--ready-delay", "0")
    server.start(timeout=120)
    try:
        for name in ("edge-1", "edge-2"):
            config = server.root / f"{name}.kubeconfig"
            nodes = json.loads(kubectl(server, "get", "nodes", "-o", "json", kubeconfig=config))["items"]
            assert [n["metadata"]["name"] for n in nodes] == ["sim-node-1", "sim-node-2"]
        first = server.root / "edge-1.kubeconfig"
        kubectl(server, "create", "deployment", "web", "--image", "nginx", "--replicas", "3", kubeconfig=first)
        kubectl(server, "rollout", "status", "deployment/web", "--timeout", f"{int(PATIENCE)}s", kubeconfig=first,
                timeout=PATIENCE + 10)
        running = json.loads(kubectl(server, "get", "pods", "-o", "json", kubeconfig=first))["items"]
        assert len(running) == 3 and all(p["status"]["phase"] == "Running" for p in running)
        other = json.loads(kubectl(server, "get", "pods", "-A", "-o", "json",
                                   kubeconfig=server.root / "edge-2.kubeconfig"))["items"]
        assert other == []
    finally:
        server.stop()


def test_a_service_follows_its_ready_pods(cluster: KcpServer) -> None:
    ns = namespace(cluster, "services")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "2", "--port", "80")
    rollout(cluster, ns, "deployment/web")
    kubectl(cluster, "-n", ns, "expose", "deployment", "web", "--port", "8080", "--target-port", "80")

    def addresses() -> set[str]:
        endpoints = get(cluster, "-n", ns, "endpoints", "web")
        return {a["ip"] for s in endpoints.get("subsets") or [] for a in s.get("addresses") or []}

    pod_ips = {p["status"]["podIP"] for p in pods(cluster, ns, "app=web")}
    eventually(lambda: addresses() == pod_ips, "the endpoints to list both pods")
    subsets = get(cluster, "-n", ns, "endpoints", "web")["subsets"]
    assert subsets[0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    kubectl(cluster, "-n", ns, "scale", "deployment/web", "--replicas", "4")
    rollout(cluster, ns, "deployment/web")
    pod_ips = {p["status"]["podIP"] for p in pods(cluster, ns, "app=web")}
    assert len(pod_ips) == 4
    eventually(lambda: addresses() == pod_ips, "the endpoints to follow the scale-up")
    slices = get(cluster, "-n", ns, "endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
    assert len(slices) == 1
    assert {e["addresses"][0] for e in slices[0]["endpoints"] if e["conditions"]["ready"]} == pod_ips
    assert slices[0]["metadata"]["ownerReferences"][0]["kind"] == "Service"

    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=UNREADY)
    kubectl(cluster, "-n", ns, "expose", "deployment", "unready", "--port", "80")
    not_ready = eventually(lambda: [a for s in get(cluster, "-n", ns, "endpoints", "unready").get("subsets") or []
                                    for a in s.get("notReadyAddresses") or []] or None,
                           "unready pods under notReadyAddresses")
    assert len(not_ready) == 2


# -- the scheduler and the kubelet ---------------------------------------------------------------


def test_a_pod_that_fits_nowhere_stays_pending_with_kubes_message(cluster: KcpServer) -> None:
    ns = namespace(cluster, "full")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=GREEDY)
    message = ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
               "3 No preemption victims found for incoming pod.")
    pod = fetched_when(lambda: get(cluster, "-n", ns, "pod", "greedy"), lambda p: condition(p, "PodScheduled"),
                       "the PodScheduled condition")
    scheduled = condition(pod, "PodScheduled")
    assert (pod["status"]["phase"], scheduled["status"], scheduled["reason"], scheduled["message"]) == \
        ("Pending", "False", "Unschedulable", message)
    assert not pod["spec"].get("nodeName")
    events = eventually(lambda: get(cluster, "-n", ns, "events", "--field-selector",
                                    "reason=FailedScheduling")["items"], "the FailedScheduling event")
    assert events[0]["message"] == message and events[0]["type"] == "Warning"
    assert events[0]["involvedObject"]["name"] == "greedy"


def test_a_gated_pod_is_not_scheduled(cluster: KcpServer) -> None:
    ns = namespace(cluster, "gated")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: nginx}]
""")
    pod = fetched_when(lambda: get(cluster, "-n", ns, "pod", "gated"),
                       lambda p: (condition(p, "PodScheduled") or {}).get("reason") == "SchedulingGated",
                       "the SchedulingGated condition")
    assert not pod["spec"].get("nodeName")
    assert "SchedulingGated" in kubectl(cluster, "-n", ns, "get", "pod", "gated")


def test_a_pod_becomes_ready_with_kubes_status(cluster: KcpServer) -> None:
    ns = namespace(cluster, "kubelet")
    kubectl(cluster, "-n", ns, "run", "single", "--image", "nginx")
    kubectl(cluster, "-n", ns, "wait", "--for=condition=Ready", "pod/single", "--timeout", f"{int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    pod = get(cluster, "-n", ns, "pod", "single")
    status = pod["status"]
    assert status["phase"] == "Running"
    assert status["podIP"] and status["hostIP"] and status["startTime"]
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert all(c["status"] == "True" for c in status["conditions"])
    container = status["containerStatuses"][0]
    assert (container["ready"], container["started"], container["restartCount"]) == (True, True, 0)
    assert "running" in container["state"]
    reasons = {e["reason"] for e in get(cluster, "-n", ns, "events")["items"]}
    assert {"Scheduled", "Pulled", "Created", "Started"} <= reasons
    wide = kubectl(cluster, "-n", ns, "get", "pod", "single", "-o", "wide")
    assert status["podIP"] in wide and pod["spec"]["nodeName"] in wide and "Running" in wide


def test_the_unready_and_crash_annotations(cluster: KcpServer) -> None:
    ns = namespace(cluster, "steered")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=UNREADY)
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=CRASHING)
    running = eventually(lambda: [p for p in pods(cluster, ns, "app=unready") if p["status"].get("phase") == "Running"]
                         if len(pods(cluster, ns, "app=unready")) == 2 else None, "the unready pods to run")
    for pod in running:
        assert condition(pod, "Ready")["status"] == "False"
        assert pod["status"]["containerStatuses"][0]["ready"] is False
    deploy = get(cluster, "-n", ns, "deployment", "unready")
    assert deploy["status"].get("readyReplicas", 0) == 0

    def restarts() -> int:
        statuses = get(cluster, "-n", ns, "pod", "crasher")["status"].get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount", 0))

    eventually(lambda: restarts() >= 2, "the crashing container's restartCount to climb", timeout=PATIENCE)
    container = get(cluster, "-n", ns, "pod", "crasher")["status"]["containerStatuses"][0]
    assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert container["lastState"]["terminated"]["exitCode"] == 1
    assert "CrashLoopBackOff" in kubectl(cluster, "-n", ns, "get", "pod", "crasher")
    logs = kubectl(cluster, "-n", ns, "logs", "crasher").splitlines()
    assert len(logs) >= 2 and all(line.startswith("c started") for line in logs)  # a line per start


def test_a_job_completes(cluster: KcpServer) -> None:
    ns = namespace(cluster, "jobs")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=JOB)
    kubectl(cluster, "-n", ns, "wait", "--for=condition=complete", "job/batch", "--timeout", f"{int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    job = get(cluster, "-n", ns, "job", "batch")
    assert job["status"]["succeeded"] == 3
    assert job["status"]["completionTime"] and job["status"]["startTime"]
    assert not job["status"].get("active")
    phases = [p["status"]["phase"] for p in pods(cluster, ns)]
    assert phases == ["Succeeded"] * 3

    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=JOB.replace("name: batch", "name: indexed").replace(
        "parallelism: 2", "parallelism: 2\n  completionMode: Indexed"))
    kubectl(cluster, "-n", ns, "wait", "--for=condition=complete", "job/indexed", "--timeout", f"{int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    assert get(cluster, "-n", ns, "job", "indexed")["status"]["completedIndexes"] == "0-2"
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                     for p in pods(cluster, ns, "job-name=indexed"))
    assert indexes == ["0", "1", "2"]


def test_a_job_whose_pods_fail_stops_at_its_backoff_limit(cluster: KcpServer) -> None:
    ns = namespace(cluster, "failing")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: batch/v1
kind: Job
metadata: {name: doomed}
spec:
  backoffLimit: 1
  template:
    metadata: {annotations: {sim.kcp.io/crash: "true"}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
""")
    kubectl(cluster, "-n", ns, "wait", "--for=condition=failed", "job/doomed", "--timeout", f"{int(PATIENCE)}s",
            timeout=PATIENCE + 10)
    job = get(cluster, "-n", ns, "job", "doomed")
    assert job["status"]["failed"] == 2
    failed = condition(job, "Failed")
    assert (failed["reason"], failed["message"]) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert [p["status"]["phase"] for p in pods(cluster, ns)] == ["Failed", "Failed"]


def test_statefulset_and_daemonset_roll_out(cluster: KcpServer) -> None:
    ns = namespace(cluster, "sets")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: postgres, volumeMounts: [{name: data, mountPath: /data}]}]}
  volumeClaimTemplates:
  - metadata: {name: data, labels: {tier: storage}, annotations: {volume.beta.kubernetes.io/storage-class: fast}}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: agent}]}
""")
    rollout(cluster, ns, "statefulset/db")
    rollout(cluster, ns, "daemonset/agent")
    assert sorted(p["metadata"]["name"] for p in pods(cluster, ns, "app=db")) == ["db-0", "db-1", "db-2"]
    claims = get(cluster, "-n", ns, "persistentvolumeclaims")["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" and c["status"]["capacity"] == {"storage": "1Gi"} for c in claims)
    for claim in claims:  # a copy of the template: its labels and annotations, and the selector's labels
        assert claim["metadata"]["labels"] == {"tier": "storage", "app": "db"}
        assert claim["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"] == "fast"
    assert {v["persistentVolumeClaim"]["claimName"] for p in pods(cluster, ns, "app=db")
            for v in p["spec"]["volumes"] if "persistentVolumeClaim" in v} == {"data-db-0", "data-db-1", "data-db-2"}
    agents = pods(cluster, ns, "app=agent")
    assert sorted(p["spec"]["nodeName"] for p in agents) == ["sim-node-1", "sim-node-2", "sim-node-3"]
    for kind, container in (("statefulset/db", "c"), ("daemonset/agent", "c")):
        kubectl(cluster, "-n", ns, "patch", kind, "-p", json.dumps({  # as `kubectl set image --record` writes it
            "metadata": {"annotations": {CHANGE_CAUSE: f"{kind} v2"}},
            "spec": {"template": {"spec": {"containers": [{"name": container, "image": "v2"}]}}}}))
        rollout(cluster, ns, kind)
        history = kubectl(cluster, "-n", ns, "rollout", "history", kind)
        assert [line.split(maxsplit=1) for line in history.splitlines()[2:] if line.strip()] == [
            ["1", "<none>"], ["2", f"{kind} v2"]], history
        kubectl(cluster, "-n", ns, "rollout", "undo", kind)
        rollout(cluster, ns, kind)
    for selector, image in (("app=db", "postgres"), ("app=agent", "agent")):
        eventually(lambda selector=selector, image=image: {
            p["spec"]["containers"][0]["image"] for p in pods(cluster, ns, selector)} == {image},
            f"the {selector} pods to run {image} again")
    assert sorted(p["metadata"]["name"] for p in pods(cluster, ns, "app=db")) == ["db-0", "db-1", "db-2"]


def test_every_namespace_gets_the_root_ca_and_keeps_it(cluster: KcpServer) -> None:
    """kube's root-ca-cert-publisher (issue 28 items 5 and 9): created, recreated when deleted, restored."""
    ns = namespace(cluster, "rootca")
    ca = (cluster.root / "ca.crt").read_text()

    def published() -> Any:
        found = get(cluster, "-n", ns, "configmaps", "--field-selector", "metadata.name=kube-root-ca.crt")["items"]
        return found[0] if found and found[0]["data"] == {"ca.crt": ca} else None

    first = eventually(published, "kube-root-ca.crt in a new namespace")
    assert "kube-apiserver" in first["metadata"]["annotations"]["kubernetes.io/description"]
    kubectl(cluster, "-n", ns, "delete", "configmap", "kube-root-ca.crt")
    again = eventually(published, "kube-root-ca.crt recreated")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    kubectl(cluster, "-n", ns, "patch", "configmap", "kube-root-ca.crt", "-p", '{"data":{"ca.crt":"forged"}}')
    restored = eventually(published, "kube-root-ca.crt restored")
    assert restored["metadata"]["uid"] == again["metadata"]["uid"]
    assert published() is not None and get(cluster, "-n", "default", "configmap", "kube-root-ca.crt")["data"] == {
        "ca.crt": ca}


# -- deletion -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cascade", ["foreground", "background"])
def test_deleting_a_deployment_cascades(cluster: KcpServer, cascade: str) -> None:
    ns = namespace(cluster, f"cascade-{cascade}")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "3")
    rollout(cluster, ns, "deployment/web")
    kubectl(cluster, "-n", ns, "delete", "deployment", "web", f"--cascade={cascade}", timeout=PATIENCE + 10)
    eventually(lambda: not get(cluster, "-n", ns, "replicasets,pods")["items"], "the ReplicaSet and pods to go")


def test_deleting_a_namespace_removes_its_workloads(cluster: KcpServer) -> None:
    ns = namespace(cluster, "doomed")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "2")
    rollout(cluster, ns, "deployment/web")
    kubectl(cluster, "delete", "namespace", ns, "--timeout", f"{int(PATIENCE)}s", timeout=PATIENCE + 10)
    assert "doomed" not in kubectl(cluster, "get", "namespaces")
    assert not [p for p in get(cluster, "pods", "-A")["items"] if p["metadata"]["namespace"] == ns]


# -- nodes ----------------------------------------------------------------------------------------


def test_nodes_and_their_heartbeats(cluster: KcpServer) -> None:
    nodes = get(cluster, "nodes")["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["sim-node-1", "sim-node-2", "sim-node-3"]
    for node in nodes:
        assert node["status"]["allocatable"]["cpu"] == "4" and node["status"]["capacity"]["pods"] == "110"
        assert condition(node, "Ready")["status"] == "True"
    leases = get(cluster, "-n", "kube-node-lease", "leases")["items"]
    assert sorted(lease["spec"]["holderIdentity"] for lease in leases) == ["sim-node-1", "sim-node-2", "sim-node-3"]


def test_a_not_ready_node_has_its_pods_evicted_and_replaced(cluster: KcpServer) -> None:
    ns = namespace(cluster, "sick")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "6")
    rollout(cluster, ns, "deployment/web")
    victims = {p["metadata"]["name"] for p in pods(cluster, ns, "app=web") if p["spec"]["nodeName"] == "sim-node-2"}
    assert victims  # least-allocated spreading put some there
    kubectl(cluster, "annotate", "node", "sim-node-2", "sim.kcp.io/not-ready=true")
    try:
        node = fetched_when(lambda: get(cluster, "node", "sim-node-2"),
                            lambda n: condition(n, "Ready")["status"] == "False", "the node to turn NotReady")
        assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} == {
            ("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")}
        # --eviction-toleration 2: its pods are evicted (deleted gracefully: Terminating, as kube leaves the pods of
        # a node whose kubelet does not answer) and recreated on the healthy nodes
        eventually(lambda: victims <= {p["metadata"]["name"] for p in pods(cluster, ns, "app=web")
                                       if p["metadata"].get("deletionTimestamp")},
                   "the sick node's pods to be evicted")
        rollout(cluster, ns, "deployment/web")
        assert {p["spec"]["nodeName"] for p in pods(cluster, ns, "app=web")
                if not p["metadata"].get("deletionTimestamp")} <= {"sim-node-1", "sim-node-3"}
    finally:
        kubectl(cluster, "annotate", "node", "sim-node-2", "sim.kcp.io/not-ready-")
    eventually(lambda: condition(get(cluster, "node", "sim-node-2"), "Ready")["status"] == "True",
               "the node to be Ready again")
    # its kubelet back, the evicted pods' containers are stopped and the pods go
    eventually(lambda: not victims & {p["metadata"]["name"] for p in pods(cluster, ns, "app=web")},
               "the evicted pods to be gone")
    eventually(lambda: not get(cluster, "node", "sim-node-2")["spec"].get("taints"), "the taints to go")


def test_cordon_and_drain_move_pods_off_a_node(cluster: KcpServer) -> None:
    ns = namespace(cluster, "drained")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "6")
    rollout(cluster, ns, "deployment/web")
    kubectl(cluster, "cordon", "sim-node-3")
    try:
        fetched_when(lambda: get(cluster, "node", "sim-node-3"),
                     lambda n: ("node.kubernetes.io/unschedulable", "NoSchedule") in
                     {(t["key"], t["effect"]) for t in n["spec"].get("taints") or []}, "the unschedulable taint")
        kubectl(cluster, "drain", "sim-node-3", "--ignore-daemonsets", "--force", "--timeout", f"{int(PATIENCE)}s",
                timeout=PATIENCE + 10)
        rollout(cluster, ns, "deployment/web")
        assert "sim-node-3" not in {p["spec"]["nodeName"] for p in pods(cluster, ns, "app=web")}
    finally:
        kubectl(cluster, "uncordon", "sim-node-3")
    eventually(lambda: not get(cluster, "node", "sim-node-3")["spec"].get("taints"), "the taint to go")


# -- restart ----------------------------------------------------------------------------------------


def test_a_restart_keeps_everything_and_pods_are_ready_again(tmp_path: Path) -> None:
    server = sim(tmp_path / "sim", "--nodes", "2", "--ready-delay", "0")
    server.start(timeout=120)
    try:
        ns = namespace(server, "kept")
        kubectl(server, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "4")
        rollout(server, ns, "deployment/web")
        before = {p["metadata"]["uid"]: p["status"]["podIP"] for p in pods(server, ns)}
        nodes = {n["metadata"]["uid"] for n in get(server, "nodes")["items"]}
        assert server.stop() == 0
        server.start(timeout=120)
        assert "successfully rolled out" in rollout(server, ns, "deployment/web")
        after = pods(server, ns)
        assert {p["metadata"]["uid"]: p["status"]["podIP"] for p in after} == before  # nothing lost or duplicated
        assert all(condition(p, "Ready")["status"] == "True" for p in after)
        assert {n["metadata"]["uid"] for n in get(server, "nodes")["items"]} == nodes
        assert len(get(server, "-n", ns, "replicasets")["items"]) == 1
        kubectl(server, "-n", ns, "scale", "deployment/web", "--replicas", "5")
        rollout(server, ns, "deployment/web")
        ips = [p["status"]["podIP"] for p in pods(server, ns)]
        assert len(set(ips)) == 5  # the restarted kubelets did not hand out an address in use
    finally:
        server.stop()


def test_orphans_are_adopted_and_relabelled_pods_released(cluster: KcpServer) -> None:
    ns = namespace(cluster, "claims")
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "3")
    rollout(cluster, ns, "deployment/web")
    replica_set = get(cluster, "-n", ns, "replicasets")["items"][0]
    kubectl(cluster, "-n", ns, "delete", "deployment", "web", "--cascade=orphan", timeout=PATIENCE + 10)
    fetched_when(lambda: get(cluster, "-n", ns, "replicaset", replica_set["metadata"]["name"]),
                 lambda rs: not rs["metadata"].get("ownerReferences"), "the ReplicaSet to be orphaned")
    uids = {p["metadata"]["uid"] for p in pods(cluster, ns, "app=web")}
    kubectl(cluster, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "3")
    rollout(cluster, ns, "deployment/web")
    adopted = get(cluster, "-n", ns, "replicasets")["items"]
    assert [rs["metadata"]["uid"] for rs in adopted] == [replica_set["metadata"]["uid"]]
    assert adopted[0]["metadata"]["ownerReferences"][0]["name"] == "web"
    assert {p["metadata"]["uid"] for p in pods(cluster, ns, "app=web")} == uids

    released = sorted(uids)[0]
    name = next(p["metadata"]["name"] for p in pods(cluster, ns, "app=web") if p["metadata"]["uid"] == released)
    kubectl(cluster, "-n", ns, "label", "pod", name, "app=debug", "--overwrite")
    debug = fetched_when(lambda: get(cluster, "-n", ns, "pod", name),
                         lambda p: not p["metadata"].get("ownerReferences"), "the relabelled pod to be released")
    assert debug["metadata"]["uid"] == released
    eventually(lambda: len(pods(cluster, ns, "app=web")) == 3 and released not in
               {p["metadata"]["uid"] for p in pods(cluster, ns, "app=web")}, "a replacement for the released pod")
    rollout(cluster, ns, "deployment/web")


def test_a_node_no_longer_run_turns_unreachable_and_its_pods_move(tmp_path: Path) -> None:
    server = sim(tmp_path / "shrink", "--nodes", "2", "--ready-delay", "0", "--eviction-toleration", "1")
    server.start(timeout=120)
    try:
        ns = namespace(server, "shrink")
        kubectl(server, "-n", ns, "create", "deployment", "web", "--image", "nginx", "--replicas", "4")
        rollout(server, ns, "deployment/web")
        assert "sim-node-2" in {p["spec"]["nodeName"] for p in pods(server, ns)}
        assert server.stop() == 0
        server.extra_args[server.extra_args.index("--nodes") + 1] = "1"
        server.start(timeout=120)
        node = fetched_when(lambda: get(server, "node", "sim-node-2"),
                            lambda n: condition(n, "Ready")["status"] == "Unknown", "sim-node-2 to turn Unknown")
        assert condition(node, "Ready")["reason"] == "NodeStatusUnknown"
        # the unreachable node's pods stay Terminating (no kubelet ends them, as in kube); their replacements run
        eventually(lambda: {p["spec"].get("nodeName") for p in pods(server, ns)
                            if not p["metadata"].get("deletionTimestamp")} == {"sim-node-1"},
                   "the pods to move to the node still running")
        assert all(p["metadata"].get("deletionTimestamp") for p in pods(server, ns)
                   if p["spec"].get("nodeName") == "sim-node-2")
        rollout(server, ns, "deployment/web")
        taints = {(t["key"], t["effect"]) for t in get(server, "node", "sim-node-2")["spec"]["taints"]}
        assert taints == {("node.kubernetes.io/unreachable", "NoSchedule"),
                          ("node.kubernetes.io/unreachable", "NoExecute")}
    finally:
        server.stop()


def test_a_cronjob_runs_a_job_on_schedule(cluster: KcpServer, cronjob_tick: str) -> None:
    """Last in the module: its CronJob was made before the first test, so the minute boundary has passed."""
    ns = cronjob_tick
    eventually(lambda: get(cluster, "-n", ns, "jobs")["items"], "the first scheduled Job", timeout=90)
    kubectl(cluster, "-n", ns, "patch", "cronjob", "tick", "-p", '{"spec":{"suspend":true}}')  # no more after these
    jobs = get(cluster, "-n", ns, "jobs")["items"]
    job = max(jobs, key=lambda j: j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"])
    assert job["metadata"]["name"].startswith("tick-")
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    scheduled = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert int(job["metadata"]["name"].removeprefix("tick-")) * 60 == int(
        datetime.datetime.fromisoformat(scheduled.replace("Z", "+00:00")).timestamp())
    kubectl(cluster, "-n", ns, "wait", "--for=condition=complete", f"job/{job['metadata']['name']}", "--timeout",
            f"{int(PATIENCE)}s", timeout=PATIENCE + 10)
    cron = fetched_when(lambda: get(cluster, "-n", ns, "cronjob", "tick"),
                        lambda c: c["status"].get("lastSuccessfulTime") and not c["status"].get("active"),
                        "lastSuccessfulTime and no active Job")
    assert cron["status"]["lastScheduleTime"] == scheduled
