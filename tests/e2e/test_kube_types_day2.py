"""Day-2 kubectl on kube's own types served through kcp, with every real process: kcp, two simulated
physical clusters of different releases (kube 1.25 and the newest), the cluster controller (push mode:
it imports the types and runs both syncers) and the deployment splitter.

kubectl sends strategic merge patches (client-side apply, set, rollout restart, edit, patch) and
protobuf bodies (`kubectl create deployment|job|cronjob|service`) for these kinds: kcp takes both for
the imported types, and each change reaches the pods the physical clusters run. A hand-made CRD keeps
kube's 415 for strategic merge patch. Every command runs with kubectl 1.32 and 1.35; one set-up serves
all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from splitter_fixtures import SplitterProcess
from syncer_fixtures import Rest, eventually, sim_cluster

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl
from kcpcommon.podtemplatehash import pod_template_hash
from kcpsyncer import downstream_namespace

CRD_FILE = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"
LOGICAL_CLUSTER = "day2"
SECOND_CLUSTER = "team-a"  # another tenant's logical cluster on the same two physical clusters
RESOURCES = ["deployments.apps", "replicasets.apps", "services", "configmaps", "secrets", "jobs.batch",
             "cronjobs.batch"]


@dataclass
class Fleet:
    kcp: KcpServer
    clusters: dict[str, KcpServer]  # SyncTarget name -> physical cluster
    kubeconfig: Path
    logical_cluster: str = LOGICAL_CLUSTER

    def kubectl(self, *args: str, **kwargs: Any) -> str:
        return run_kubectl(self.kcp, *args, kubeconfig=self.kubeconfig, **kwargs).stdout


def sync_target(name: str, physical: KcpServer) -> str:
    return yaml.safe_dump({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
                           "spec": {"kubeconfig": physical.kubeconfig.read_text(), "resources": RESOURCES}})


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("day2")
    kcp = KcpServer(root / "kcp", free_port())
    old, new = sim_cluster(root / "old", "--kubernetes-version", "1.25"), sim_cluster(root / "new")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--heartbeat-interval", "2", "--heartbeat-threshold", "8",
        "--discovery-interval", "5"])
    splitter = SplitterProcess(kcp, root / "splitter.log", ["--no-leader-elect", "--grace-period", "3"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, old, new):
            server.start()
            started.append(server)
        controller.start()
        splitter.start(wait_ready=False)
        fleet = attach(Fleet(kcp, {"old": old, "new": new}, cluster_kubeconfig(kcp, LOGICAL_CLUSTER, LOGICAL_CLUSTER)))
        yield fleet
        assert splitter.stop() == 0, splitter.log_tail()
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        splitter.stop()
        controller.stop()
        for server in started:
            server.stop()


def attach(fleet: Fleet) -> Fleet:
    """SyncTargets for both physical clusters in the fleet's logical cluster, Ready, their types imported."""
    fleet.kubectl("apply", "-f", str(CRD_FILE))
    eventually(lambda: run_kubectl(fleet.kcp, "get", "synctargets", kubeconfig=fleet.kubeconfig,
                                   check=False).returncode == 0, "SyncTargets served")
    for name, physical in fleet.clusters.items():
        fleet.kubectl("apply", "-f", "-", input_text=sync_target(name, physical))
    for name in fleet.clusters:
        fleet.kubectl("wait", f"synctarget/{name}", "--for", "condition=Ready", "--timeout=90s", timeout=100)
    eventually(lambda: run_kubectl(fleet.kcp, "get", "deployments,replicasets,services,jobs,cronjobs",
                                   kubeconfig=fleet.kubeconfig, check=False).returncode == 0,
               "the types imported into kcp", timeout=90)
    return fleet


@pytest.fixture(scope="module")
def second(fleet: Fleet) -> Fleet:
    """The same physical clusters attached to a second tenant's logical cluster."""
    kubeconfig = cluster_kubeconfig(fleet.kcp, SECOND_CLUSTER, SECOND_CLUSTER)
    return attach(Fleet(fleet.kcp, fleet.clusters, kubeconfig, SECOND_CLUSTER))


@pytest.fixture(params=[LOGICAL_CLUSTER, SECOND_CLUSTER])
def tenant(request: pytest.FixtureRequest, fleet: Fleet) -> Fleet:
    """Each logical cluster in turn."""
    return fleet if request.param == LOGICAL_CLUSTER else request.getfixturevalue("second")


def manifest(name: str, image: str, ports: list[int]) -> str:
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": name, "labels": {"app": name}},
                           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                                    "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                                        {"name": "nginx", "image": image,
                                         "ports": [{"containerPort": p} for p in ports]},
                                        {"name": "sidecar", "image": "envoy:1"}]}}}})


def downstream(physical: KcpServer, logical_cluster: str, plural: str, app: str) -> list[dict[str, Any]]:
    """The live objects of `app` the physical cluster holds for the logical cluster's `default` namespace."""
    namespace = downstream_namespace(logical_cluster, "default")
    group = "/api/v1" if plural == "pods" else "/apis/apps/v1"
    found = Rest(physical).get(f"{group}/namespaces/{namespace}/{plural}?labelSelector=app%3D{app}") or {}
    return [p for p in found.get("items") or [] if not p["metadata"].get("deletionTimestamp")]


def downstream_pods(physical: KcpServer, app: str, logical_cluster: str = LOGICAL_CLUSTER) -> list[dict[str, Any]]:
    return downstream(physical, logical_cluster, "pods", app)


def every_pod(fleet: Fleet, app: str, check: Callable[[dict[str, Any]], bool]) -> bool:
    """Both physical clusters run pods of `app`, and every live one passes `check`."""
    for physical in fleet.clusters.values():
        pods = downstream_pods(physical, app, fleet.logical_cluster)
        if not pods or not all(check(p) for p in pods):
            return False
    return True


def container(pod: dict[str, Any], name: str = "nginx") -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


def test_day_2_commands_on_a_deployment_reach_the_pods_of_both_clusters(fleet: Fleet, kubectl_version: str) -> None:
    app = f"web-{kubectl_version.replace('.', '-')}"
    fleet.kubectl("apply", "-f", "-", input_text=manifest(app, "nginx:1.26", [80, 9090]))
    # client-side apply again: a strategic merge patch with a new image and one port fewer
    fleet.kubectl("apply", "-f", "-", input_text=manifest(app, "nginx:1.27", [80]))
    stored = yaml.safe_load(fleet.kubectl("get", f"deployment/{app}", "-o", "yaml"))
    nginx, sidecar = stored["spec"]["template"]["spec"]["containers"]
    assert (nginx["image"], [p["containerPort"] for p in nginx["ports"]]) == ("nginx:1.27", [80])
    assert sidecar["image"] == "envoy:1"
    eventually(lambda: every_pod(fleet, app, lambda p: container(p)["image"] == "nginx:1.27"),
               "nginx:1.27 on the downstream pods", timeout=90)

    fleet.kubectl("set", "image", f"deployment/{app}", "nginx=nginx:1.28")
    fleet.kubectl("set", "env", f"deployment/{app}", "-c", "nginx", "GREETING=hello")
    fleet.kubectl("set", "resources", f"deployment/{app}", "-c", "nginx", "--limits=cpu=200m")
    fleet.kubectl("rollout", "restart", f"deployment/{app}")
    fleet.kubectl("patch", f"deployment/{app}", "-p", '{"spec":{"template":{"spec":{"containers":'
                  '[{"name":"nginx","env":[{"name":"STRATEGIC","value":"1"}]}]}}}}')
    fleet.kubectl("patch", f"deployment/{app}", "--type", "merge", "-p", '{"metadata":{"annotations":{"merged":"1"}}}')
    fleet.kubectl("patch", f"deployment/{app}", "--type", "json",
                  "-p", '[{"op":"add","path":"/metadata/labels/json","value":"1"}]')
    fleet.kubectl("edit", f"deployment/{app}", env={"KUBE_EDITOR": "sed -i s/nginx:1.28/nginx:1.29/"})
    fleet.kubectl("label", f"deployment/{app}", "team=a")
    fleet.kubectl("annotate", f"deployment/{app}", "note=x")

    stored = yaml.safe_load(fleet.kubectl("get", f"deployment/{app}", "-o", "yaml"))
    assert {"json": "1", "team": "a"}.items() <= stored["metadata"]["labels"].items()
    assert {"merged": "1", "note": "x"}.items() <= stored["metadata"]["annotations"].items()
    assert "kubectl.kubernetes.io/restartedAt" in stored["spec"]["template"]["metadata"]["annotations"]
    nginx, sidecar = stored["spec"]["template"]["spec"]["containers"]
    assert nginx["image"] == "nginx:1.29" and (sidecar["name"], sidecar["image"]) == ("sidecar", "envoy:1")
    assert sidecar["imagePullPolicy"] == "IfNotPresent"  # kube's defaults, as on a cluster
    # merged by name; kube puts a patch's new item before the server's own when no order directive says otherwise
    assert nginx["env"] == [{"name": "STRATEGIC", "value": "1"}, {"name": "GREETING", "value": "hello"}]

    def changed(pod: dict[str, Any]) -> bool:
        nginx = container(pod)
        env = {e["name"]: e.get("value") for e in nginx.get("env") or []}
        return nginx["image"] == "nginx:1.29" and env == {"GREETING": "hello", "STRATEGIC": "1"} and \
            nginx.get("resources", {}).get("limits", {}).get("cpu") == "200m" and \
            container(pod, "sidecar")["image"] == "envoy:1"

    eventually(lambda: every_pod(fleet, app, changed), "image, env and limits on the downstream pods", timeout=120)


def test_scale_pause_resume_and_diff_on_a_deployment_through_kcp(fleet: Fleet) -> None:
    """More of issue 21's day-2 list: the scale subresource, a paused rollout and `kubectl diff`."""
    app = "steady"
    fleet.kubectl("apply", "-f", "-", input_text=manifest(app, "nginx:1.26", [80]))
    fleet.kubectl("scale", f"deployment/{app}", "--replicas=4")
    assert fleet.kubectl("get", f"deployment/{app}", "-o", "jsonpath={.spec.replicas}") == "4"
    eventually(lambda: sum(len(downstream_pods(p, app)) for p in fleet.clusters.values()) == 4,
               "4 pods over the two clusters", timeout=90)
    fleet.kubectl("rollout", "pause", f"deployment/{app}")
    assert fleet.kubectl("get", f"deployment/{app}", "-o", "jsonpath={.spec.paused}") == "true"
    fleet.kubectl("rollout", "resume", f"deployment/{app}")
    assert fleet.kubectl("get", f"deployment/{app}", "-o", "jsonpath={.spec.paused}") == ""
    same = run_kubectl(fleet.kcp, "diff", "-f", "-", input_text=manifest(app, "nginx:1.26", [80]),
                       kubeconfig=fleet.kubeconfig, check=False)
    changed = run_kubectl(fleet.kcp, "diff", "-f", "-", input_text=manifest(app, "nginx:1.27", [80]),
                          kubeconfig=fleet.kubeconfig, check=False)
    assert same.returncode == 1 and "replicas" in same.stdout, same.stdout + same.stderr  # the file says 2, not 4
    assert changed.returncode == 1 and "+      - image: nginx:1.27" in changed.stdout, changed.stdout + changed.stderr
    assert fleet.kubectl("get", f"deployment/{app}", "-o", "jsonpath={.spec.template.spec.containers[0].image}") == \
        "nginx:1.26"  # diff is a dry run


def test_kubectl_create_sends_protobuf_for_kube_s_types_and_kcp_takes_it(fleet: Fleet, kubectl_version: str) -> None:
    suffix = kubectl_version.replace(".", "-")
    fleet.kubectl("create", "deployment", f"made-{suffix}", "--image=nginx:1.27", "--replicas=2")
    fleet.kubectl("create", "job", f"once-{suffix}", "--image=busybox")
    fleet.kubectl("create", "cronjob", f"tick-{suffix}", "--image=busybox", "--schedule=*/5 * * * *")
    fleet.kubectl("create", "service", "clusterip", f"front-{suffix}", "--tcp=80:8080")
    kinds = fleet.kubectl("get", f"deployment/made-{suffix}", f"job/once-{suffix}", f"cronjob/tick-{suffix}",
                          f"service/front-{suffix}", "-o", "jsonpath={.items[*].kind}")
    assert kinds.split() == ["Deployment", "Job", "CronJob", "Service"]
    eventually(lambda: every_pod(fleet, f"made-{suffix}", lambda p: container(p)["image"] == "nginx:1.27"),
               "the created deployment's pods downstream", timeout=90)


def history(fleet: Fleet, app: str) -> dict[int, str]:
    """`kubectl rollout history` as {revision: change-cause}."""
    result = run_kubectl(fleet.kcp, "rollout", "history", f"deployment/{app}", kubeconfig=fleet.kubeconfig,
                         check=False)
    rows = [line.split(None, 1) for line in result.stdout.splitlines()[2:] if line.strip()]
    return {int(row[0]): (row[1].strip() if len(row) > 1 else "") for row in rows}


def roots_replica_sets(fleet: Fleet, app: str) -> list[dict[str, Any]]:
    """The ReplicaSets kcp keeps as the root's revisions: those it controls (the clusters' own, made by the root's
    copies there, are not mirrored into kcp)."""
    items = yaml.safe_load(fleet.kubectl("get", "replicasets", "-l", f"app={app}", "-o", "yaml"))["items"]
    return [rs for rs in items if any(ref.get("controller") and ref["kind"] == "Deployment" and ref["name"] == app
                                      for ref in rs["metadata"].get("ownerReferences", []))]


def image_of(fleet: Fleet, app: str) -> str:
    return fleet.kubectl("get", f"deployment/{app}", "-o", "jsonpath={.spec.template.spec.containers[0].image}")


def test_rollout_history_undo_describe_and_expose_through_kcp(tenant: Fleet, kubectl_version: str) -> None:
    """kcp keeps the root's revisions as ReplicaSets: history with change causes, undo to the previous and to a
    numbered revision (each reaching the pods of both clusters), describe, expose; in each logical cluster."""
    fleet, app = tenant, f"hist-{kubectl_version.replace('.', '-')}"
    fleet.kubectl("apply", "-f", "-", input_text=manifest(app, "nginx:1.26", [80]))
    fleet.kubectl("annotate", f"deployment/{app}", "kubernetes.io/change-cause=first")
    eventually(lambda: history(fleet, app) == {1: "first"}, "revision 1 in the history")
    eventually(lambda: every_pod(fleet, app, lambda p: container(p)["image"] == "nginx:1.26"), "nginx:1.26 pods",
               timeout=90)
    fleet.kubectl("set", "image", f"deployment/{app}", "nginx=nginx:1.27")
    fleet.kubectl("annotate", "--overwrite", f"deployment/{app}", "kubernetes.io/change-cause=to 1.27")
    eventually(lambda: history(fleet, app) == {1: "first", 2: "to 1.27"}, "revision 2 in the history")
    assert "nginx:1.26" in fleet.kubectl("rollout", "history", f"deployment/{app}", "--revision=1")
    eventually(lambda: every_pod(fleet, app, lambda p: container(p)["image"] == "nginx:1.27"), "nginx:1.27 pods",
               timeout=90)

    fleet.kubectl("rollout", "undo", f"deployment/{app}")  # to the previous revision: 1 comes back as 3
    assert image_of(fleet, app) == "nginx:1.26"
    eventually(lambda: history(fleet, app) == {2: "to 1.27", 3: "first"}, "revision 1 moved to 3")
    eventually(lambda: every_pod(fleet, app, lambda p: container(p)["image"] == "nginx:1.26"),
               "the undo on the downstream pods", timeout=90)
    fleet.kubectl("rollout", "undo", f"deployment/{app}", "--to-revision=2")
    assert image_of(fleet, app) == "nginx:1.27"
    eventually(lambda: history(fleet, app) == {3: "first", 4: "to 1.27"}, "revision 2 moved to 4")
    eventually(lambda: every_pod(fleet, app, lambda p: container(p)["image"] == "nginx:1.27"),
               "the undo to revision 2 on the downstream pods", timeout=90)
    assert fleet.kubectl("get", f"deployment/{app}", "-o",
                         "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}") == "4"

    replica_sets = roots_replica_sets(fleet, app)
    by_revision = {rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: rs["metadata"]["name"]
                   for rs in replica_sets}
    assert sorted(by_revision) == ["3", "4"]
    newest, older = by_revision["4"], by_revision["3"]

    def described() -> str | None:
        text = fleet.kubectl("describe", f"deployment/{app}")
        lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in text.splitlines() if ":" in line}
        good = (lines.get("StrategyType") == "RollingUpdate"
                and lines.get("RollingUpdateStrategy") == "25% max unavailable, 25% max surge"
                and lines.get("NewReplicaSet") == f"{newest} (2/2 replicas created)"
                and lines.get("OldReplicaSets") == f"{older} (0/0 replicas created)" and "Conditions:" in text
                and f"Scaled up replica set {newest}" in text)
        if not good:
            print(text)  # shown when the test fails
        return text if good else None

    eventually(described, "describe: strategy, new and old ReplicaSets, conditions, events", timeout=60)
    # the root's ReplicaSets are history only: none is copied down (the clusters run their copies' own)
    kept = {rs["metadata"]["name"] for rs in replica_sets}
    for physical in fleet.clusters.values():
        assert not kept & {rs["metadata"]["name"] for rs in downstream(physical, fleet.logical_cluster,
                                                                       "replicasets", app)}

    fleet.kubectl("expose", f"deployment/{app}", "--port=80", "--target-port=8080")
    service = yaml.safe_load(fleet.kubectl("get", f"service/{app}", "-o", "yaml"))
    assert service["spec"]["selector"] == {"app": app}
    assert (service["spec"]["type"], service["spec"]["sessionAffinity"]) == ("ClusterIP", "None")
    assert service["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert service["spec"]["clusterIP"] not in (None, "", "None")

    fleet.kubectl("delete", f"deployment/{app}")
    eventually(lambda: not fleet.kubectl("get", "replicasets", "-l", f"app={app}", "-o", "name"),
               "the root's ReplicaSets collected with it")


def test_a_taken_replica_set_name_bumps_the_root_s_collision_count(fleet: Fleet) -> None:
    """kube's collisionCount: the name of the root's next revision is held by a ReplicaSet it does not control."""
    app = "collide"
    fleet.kubectl("apply", "-f", "-", input_text=manifest(app, "nginx:1.26", [80]))
    eventually(lambda: list(history(fleet, app)) == [1], "revision 1 in the history")
    fleet.kubectl("rollout", "pause", f"deployment/{app}")
    fleet.kubectl("set", "image", f"deployment/{app}", "nginx=nginx:1.27")  # paused: no revision yet
    root = yaml.safe_load(fleet.kubectl("get", f"deployment/{app}", "-o", "yaml"))
    taken = f"{app}-{pod_template_hash(root['spec']['template'])}"
    squatter = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": taken},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"squatter": app}},
                         "template": {"metadata": {"labels": {"squatter": app}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    fleet.kubectl("create", "-f", "-", input_text=yaml.safe_dump(squatter))
    fleet.kubectl("rollout", "resume", f"deployment/{app}")
    eventually(lambda: list(history(fleet, app)) == [1, 2], "revision 2 under another name", timeout=60)
    assert fleet.kubectl("get", f"deployment/{app}", "-o", "jsonpath={.status.collisionCount}") == "1"
    newest = " ".join(rs["metadata"]["name"] for rs in roots_replica_sets(fleet, app)
                      if rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2")
    assert newest == f"{app}-{pod_template_hash(root['spec']['template'], 1)}"
    assert fleet.kubectl("get", f"replicaset/{taken}", "-o", "jsonpath={.spec.template.spec.containers[0].image}") \
        == "busybox"  # the squatter is left alone
    fleet.kubectl("delete", f"deployment/{app}", f"replicaset/{taken}")


def test_a_user_s_own_replica_set_with_an_assignment_label_still_syncs(fleet: Fleet) -> None:
    own = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": "own", "labels": {"app": "own", "workloads.kcp.io/cluster": "new"}},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "own"}},
                    "template": {"metadata": {"labels": {"app": "own"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    fleet.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(own))
    eventually(lambda: downstream_pods(fleet.clusters["new"], "own"), "its pod in the cluster it names", timeout=60)
    assert [rs["metadata"]["name"] for rs in downstream(fleet.clusters["new"], LOGICAL_CLUSTER, "replicasets",
                                                        "own")] == ["own"]
    assert not downstream(fleet.clusters["old"], LOGICAL_CLUSTER, "replicasets", "own")


HAND_MADE = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"""


def test_a_hand_made_crd_still_answers_415_to_a_strategic_merge_patch(fleet: Fleet) -> None:
    fleet.kubectl("apply", "-f", "-", input_text=HAND_MADE)
    fleet.kubectl("wait", "crd/widgets.example.com", "--for", "condition=Established", "--timeout=30s")
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n"
    eventually(lambda: run_kubectl(fleet.kcp, "apply", "-f", "-", input_text=widget, kubeconfig=fleet.kubeconfig,
                                   check=False).returncode == 0, "a Widget created")
    refused = run_kubectl(fleet.kcp, "patch", "widget/w", "--type", "strategic", "-p", '{"spec":{"size":2}}',
                          kubeconfig=fleet.kubeconfig, check=False)
    assert refused.returncode != 0
    assert "the body of the request was in an unknown format" in refused.stderr, refused.stderr
    fleet.kubectl("patch", "widget/w", "--type", "merge", "-p", '{"spec":{"size":2}}')
