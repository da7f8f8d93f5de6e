"""kube's own types that kcp serves as CRDs imported from a physical cluster get kube's defaults and kube's
validation: real kcp, a kcp-sim-cluster at the newest release attached as a SyncTarget by
`python -m kcp_cluster_controller` (push mode), and each invalid manifest sent both to kcp and to the
simulated cluster directly. The 422 bodies must be the same bytes: the kinds and groups are the same
(the imported CRD keeps kube's names), so nothing is allowed to differ.

A second logical cluster has a Kubernetes 1.25 cluster attached as well, so its types are negotiated
down to what both clusters serve: kube's defaults for fields 1.25 lacks are not stored there.

Services get a cluster IP in kcp as kube allocates one, from kcp's range; the copy synced to the sim gets
the sim's own.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from daemon_process import ClusterControllerProcess
from syncer_fixtures import eventually, sim_cluster

from kcp_process import REPO, KcpServer, cluster_kubeconfig, free_port, run_kubectl
from kcpsyncer import downstream_namespace

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SERVICES = "/api/v1/namespaces/default/services"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
CRON_JOBS = "/apis/batch/v1/namespaces/default/cronjobs"
STATEFUL_SETS = "/apis/apps/v1/namespaces/default/statefulsets"
IMPORTED = ["deployments.apps", "statefulsets.apps", "services", "jobs.batch", "cronjobs.batch"]
NEGOTIATED = "negotiated"  # the logical cluster whose types both the newest and 1.25 serve
SYNC_TARGET_CRD = REPO / "services/cluster-controller/kcp_cluster_controller/synctarget-crd.yaml"


@dataclass
class Env:
    kcp: KcpServer
    sim: KcpServer  # the newest release, attached to admin and to NEGOTIATED
    old: KcpServer  # 1.25, attached to NEGOTIATED


def request(server: KcpServer, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    """The answer's code and raw body bytes (JSON in, JSON out)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data, method=method, headers={
        "Authorization": f"Bearer {server.token}", "Accept": "application/json", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=server.ssl_context(), timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def served(server: KcpServer, path: str) -> bool:
    return request(server, "GET", path)[0] == 200


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("imported-kube-types")
    kcp, sim = KcpServer(root / "kcp", free_port()), sim_cluster(root / "sim")
    old = sim_cluster(root / "old", "--kubernetes-version", "1.25")
    controller = ClusterControllerProcess(kcp, root / "controller.log", [
        "--syncer-mode", "push", "--no-leader-elect", "--discovery-interval", "5"])
    started: list[KcpServer] = []
    try:
        for server in (kcp, sim, old):
            server.start()
            started.append(server)
        controller.start()
        eventually(lambda: served(kcp, "/apis/workload.kcp.io/v1alpha1/synctargets"), "SyncTargets served in admin")
        negotiated = cluster_kubeconfig(kcp, NEGOTIATED, NEGOTIATED)
        run_kubectl(kcp, "apply", "-f", str(SYNC_TARGET_CRD), kubeconfig=negotiated)
        eventually(lambda: served(kcp, f"/clusters/{NEGOTIATED}/apis/workload.kcp.io/v1alpha1/synctargets"),
                   f"SyncTargets served in {NEGOTIATED}")
        for name, server, kubeconfig in (("sim", sim, kcp.kubeconfig), ("newest", sim, negotiated),
                                         ("older", old, negotiated)):
            run_kubectl(kcp, "apply", "-f", "-", input_text=sync_target(name, server), kubeconfig=kubeconfig)
        for path in (DEPLOYMENTS, SERVICES, JOBS, CRON_JOBS, STATEFUL_SETS):
            eventually(lambda path=path: served(kcp, path), f"{path} imported into kcp")  # type: ignore[misc]
        yield Env(kcp, sim, old)
        assert controller.stop() == 0, controller.log_tail(60)
    finally:
        controller.stop()
        for server in started:
            server.stop()


def sync_target(name: str, server: KcpServer) -> str:
    return yaml.safe_dump({"apiVersion": "workload.kcp.io/v1alpha1", "kind": "SyncTarget", "metadata": {"name": name},
                           "spec": {"kubeconfig": server.kubeconfig.read_text(), "resources": IMPORTED}})


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}},
                     **spec}}


def edited(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """obj with the field at a dotted path (list indexes as numbers) set, or removed when value is ...."""
    out = copy.deepcopy(obj)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = out
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return out


CONTAINER = "spec.template.spec.containers.0"

INVALID_DEPLOYMENTS = {
    "negative replicas": edited(deployment(), "spec.replicas", -3),
    "selector not matching the template": edited(deployment(), "spec.template.metadata.labels", {"app": "other"}),
    "no selector": edited(deployment(), "spec.selector", ...),
    "empty selector": edited(deployment(), "spec.selector", {}),
    "container name not a DNS-1123 label": edited(deployment(), f"{CONTAINER}.name", "Bad_Name"),
    "container without a name": edited(deployment(), f"{CONTAINER}.name", ...),
    "container without an image": edited(deployment(), f"{CONTAINER}.image", ...),
    "container port out of range": edited(deployment(), f"{CONTAINER}.ports.0.containerPort", 70000),
    "container port without a number": edited(deployment(), f"{CONTAINER}.ports.0.containerPort", ...),
    "container port name not an IANA service name": edited(deployment(), f"{CONTAINER}.ports.0.name", "Http--1"),
    "a mount of a volume the pod does not have": edited(deployment(), f"{CONTAINER}.volumeMounts",
                                                        [{"name": "data", "mountPath": "/data"}]),
    "an unknown image pull policy": edited(deployment(), f"{CONTAINER}.imagePullPolicy", "Often"),
    "an unknown DNS policy": edited(deployment(), "spec.template.spec.dnsPolicy", "Sometimes"),
    "no containers": edited(deployment(), "spec.template.spec.containers", []),
    "two containers of one name": edited(deployment(), "spec.template.spec.containers",
                                         [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]),
    "a restart policy other than Always": edited(deployment(), "spec.template.spec.restartPolicy", "Never"),
    "unknown strategy type": edited(deployment(), "spec.strategy", {"type": "Sometimes"}),
    "maxUnavailable over 100%": edited(deployment(), "spec.strategy", {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}),
    "maxUnavailable not a percent": edited(deployment(), "spec.strategy", {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "ten"}}),
    "maxSurge and maxUnavailable both 0": edited(deployment(), "spec.strategy", {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
    "Recreate with rollingUpdate": edited(deployment(), "spec.strategy", {
        "type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
    "negative revisionHistoryLimit": edited(deployment(), "spec.revisionHistoryLimit", -1),
    "negative progressDeadlineSeconds": edited(deployment(), "spec.progressDeadlineSeconds", -5),
    "name not a DNS-1123 subdomain": edited(deployment(), "metadata.name", "Web_1"),
    "template label value invalid": edited(deployment(), "spec.template.metadata.labels",
                                           {"app": "web", "tier": "front end"}),
    "several problems at once": edited(edited(deployment(), "spec.replicas", -1), f"{CONTAINER}.name", "X"),
}


def service(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], **spec}}


INVALID_SERVICES = {
    "port out of range": service(ports=[{"port": 70000}]),
    "unknown type": service(type="Magic"),
    "two ports without names": service(ports=[{"port": 80}, {"port": 81}]),
    "nodePort on a ClusterIP service": service(ports=[{"port": 80, "nodePort": 30080}]),
    "unknown session affinity": service(sessionAffinity="Sometimes"),
}

POD_TEMPLATE = {"spec": {"containers": [{"name": "job", "image": "busybox"}], "restartPolicy": "Never"}}
INVALID_JOBS = {
    "a job restarting Always": edited({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                                       "spec": {"template": POD_TEMPLATE}}, "spec.template.spec.restartPolicy",
                                      "Always"),
    "negative backoffLimit": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                              "spec": {"backoffLimit": -1, "template": POD_TEMPLATE}},
}
INVALID_CRON_JOBS = {
    "a schedule of four fields": {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                                  "spec": {"schedule": "* * * *", "jobTemplate": {"spec": {"template": POD_TEMPLATE}}}},
}

CASES = [(DEPLOYMENTS, name, obj) for name, obj in INVALID_DEPLOYMENTS.items()] + \
        [(SERVICES, name, obj) for name, obj in INVALID_SERVICES.items()] + \
        [(JOBS, name, obj) for name, obj in INVALID_JOBS.items()] + \
        [(CRON_JOBS, name, obj) for name, obj in INVALID_CRON_JOBS.items()]


@pytest.mark.parametrize(("path", "obj"), [(path, obj) for path, _, obj in CASES],
                         ids=[name for _, name, _ in CASES])
def test_kcp_refuses_an_invalid_object_with_the_same_422_as_the_physical_cluster(env: Env, path: str,
                                                                              obj: dict[str, Any]) -> None:
    kcp_code, kcp_body = request(env.kcp, "POST", path, obj)
    sim_code, sim_body = request(env.sim, "POST", path, obj)
    assert (sim_code, json.loads(sim_body)["reason"]) == (422, "Invalid"), sim_body
    assert (kcp_code, kcp_body) == (sim_code, sim_body)


def test_negative_replicas_are_refused_with_kubes_message(env: Env) -> None:
    code, body = request(env.kcp, "POST", DEPLOYMENTS, deployment("negative", replicas=-3))
    status = json.loads(body)
    assert code == 422
    assert status["message"] == ('Deployment.apps "negative" is invalid: spec.replicas: Invalid value: -3: '
                                 "must be greater than or equal to 0")
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.replicas",
                                            "message": "Invalid value: -3: must be greater than or equal to 0"}]
    assert request(env.kcp, "GET", f"{DEPLOYMENTS}/negative")[0] == 404


def test_an_update_changing_the_selector_gets_the_same_422_as_the_physical_cluster(env: Env) -> None:
    original = deployment("fixed-selector")
    answers = []
    for server in (env.kcp, env.sim):
        code, body = request(server, "POST", DEPLOYMENTS, original)
        assert code == 201, body
        changed = json.loads(body)
        del changed["metadata"]["resourceVersion"]  # unconditional: the sim's controllers write status meanwhile
        changed["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "front"}}
        changed["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
        answers.append(request(server, "PUT", f"{DEPLOYMENTS}/fixed-selector", changed))
    kcp_answer, sim_answer = answers
    assert sim_answer[0] == 422 and b"field is immutable" in sim_answer[1], sim_answer
    assert kcp_answer == sim_answer


def test_kcp_stores_a_deployment_with_kubes_defaults_as_the_physical_cluster_does(env: Env) -> None:
    stored = []
    for server in (env.kcp, env.sim):
        code, body = request(server, "POST", DEPLOYMENTS, deployment("defaulted"))
        assert code == 201, body
        stored.append(json.loads(body)["spec"])
    kcp_spec, sim_spec = stored
    assert kcp_spec["strategy"] == {"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (kcp_spec["revisionHistoryLimit"], kcp_spec["progressDeadlineSeconds"]) == (10, 600)
    container = kcp_spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent" and container["ports"][0]["protocol"] == "TCP"
    assert kcp_spec == sim_spec


def test_kcp_defaults_a_service_as_the_physical_cluster_does(env: Env) -> None:
    stored = []
    for server in (env.kcp, env.sim):
        code, body = request(server, "POST", SERVICES, service(ports=[{"port": 80, "name": "http"}]) | {
            "metadata": {"name": "defaulted"}})
        assert code == 201, body
        stored.append(json.loads(body)["spec"])
    kcp_spec, sim_spec = stored
    assert (kcp_spec["type"], kcp_spec["sessionAffinity"]) == ("ClusterIP", "None")
    assert kcp_spec["ports"] == [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]
    assert sim_spec["ports"] == kcp_spec["ports"]


def test_kubectl_describe_shows_kubes_rolling_update_strategy(env: Env, tmp_path: Path) -> None:
    manifest = tmp_path / "described.yaml"
    manifest.write_text(yaml.safe_dump(deployment("described")))
    run_kubectl(env.kcp, "apply", "-f", str(manifest))
    out = run_kubectl(env.kcp, "describe", "deployment", "described").stdout
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip() for line in out.splitlines()
             if ":" in line and not line.startswith(" ")}
    assert lines["StrategyType"] == "RollingUpdate", out
    assert lines["RollingUpdateStrategy"] == "25% max unavailable, 25% max surge", out


def imported_from(kcp: KcpServer, cluster: str, crd: str) -> str:
    code, body = request(kcp, "GET", f"/clusters/{cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
    return str(json.loads(body)["metadata"]["annotations"].get("workload.kcp.io/imported-from", "")) if code == 200 else ""


def test_a_negotiated_type_gets_only_the_defaults_of_fields_every_cluster_serves(env: Env) -> None:
    for crd in ("jobs.batch", "statefulsets.apps"):
        eventually(lambda crd=crd: imported_from(env.kcp, NEGOTIATED, crd) == "newest,older",  # type: ignore[misc]
                   f"{crd} in {NEGOTIATED} negotiated between both clusters")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "negotiated"},
           "spec": {"template": POD_TEMPLATE}}
    stateful_set = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "negotiated"},
                    "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": {
                        "metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "db"}]}}}}
    stored = {}
    for cluster in ("admin", NEGOTIATED):
        for path, obj in ((JOBS, job), (STATEFUL_SETS, stateful_set)):
            code, body = request(env.kcp, "POST", f"/clusters/{cluster}{path}", obj)
            assert code == 201, body
            stored[cluster, obj["kind"]] = json.loads(body)["spec"]
    # kube 1.29's Job default: stored where only the newest cluster serves the type, not where 1.25 does too
    assert stored["admin", "Job"]["podReplacementPolicy"] == "TerminatingOrFailed"
    assert "podReplacementPolicy" not in stored[NEGOTIATED, "Job"]
    # the defaults of fields both releases serve are there
    assert (stored[NEGOTIATED, "Job"]["backoffLimit"], stored[NEGOTIATED, "Job"]["completionMode"]) == (6, "NonIndexed")
    assert stored[NEGOTIATED, "StatefulSet"]["updateStrategy"] == {"type": "RollingUpdate",
                                                                   "rollingUpdate": {"partition": 0}}
    assert stored[NEGOTIATED, "StatefulSet"]["podManagementPolicy"] == "OrderedReady"


KCP_RANGE, SIM_RANGE = ipaddress.ip_network("10.255.0.0/16"), ipaddress.ip_network("10.96.0.0/12")


def cluster_ip(server: KcpServer, name: str) -> str:
    spec = json.loads(request(server, "GET", f"{SERVICES}/{name}")[1])["spec"]
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    return str(spec["clusterIP"])


def test_services_in_kcp_get_distinct_cluster_ips_from_kcps_range(env: Env) -> None:
    run_kubectl(env.kcp, "create", "service", "clusterip", "made", "--tcp=80:8080")
    run_kubectl(env.kcp, "apply", "-f", "-", input_text=yaml.safe_dump(service() | {"metadata": {"name": "applied"}}))
    made, applied = cluster_ip(env.kcp, "made"), cluster_ip(env.kcp, "applied")
    assert ipaddress.ip_address(made) in KCP_RANGE and ipaddress.ip_address(applied) in KCP_RANGE
    assert made != applied
    listed = run_kubectl(env.kcp, "get", "service", "made").stdout
    assert made in listed  # kubectl get svc shows the CLUSTER-IP column filled


def test_a_requested_cluster_ip_is_checked_as_kube_does(env: Env) -> None:
    run_kubectl(env.kcp, "create", "service", "clusterip", "first", "--tcp=80")
    taken = cluster_ip(env.kcp, "first")
    code, body = request(env.kcp, "POST", SERVICES, service(clusterIP=taken) | {"metadata": {"name": "second"}})
    assert code == 422, body
    assert f"failed to allocate IP {taken}: provided IP is already allocated" in json.loads(body)["message"]
    code, body = request(env.kcp, "POST", SERVICES, service(clusterIP="10.96.0.50") | {"metadata": {"name": "far"}})
    assert code == 422, body
    assert "provided IP (10.96.0.50) is not in the valid range. The range of valid IPs is 10.255.0.0/16" in \
        json.loads(body)["message"]
    run_kubectl(env.kcp, "create", "service", "clusterip", "headless", "--clusterip=None")
    assert cluster_ip(env.kcp, "headless") == "None"


def test_the_physical_cluster_gives_the_synced_copy_its_own_cluster_ip(env: Env) -> None:
    placed = service() | {"metadata": {"name": "placed", "labels": {"workloads.kcp.io/cluster": "sim"}}}
    code, body = request(env.kcp, "POST", SERVICES, placed)
    assert code == 201, body
    in_kcp = cluster_ip(env.kcp, "placed")
    downstream = f"/api/v1/namespaces/{downstream_namespace('admin', 'default')}/services/placed"
    eventually(lambda: served(env.sim, downstream), "the Service synced to the sim", timeout=60)
    in_sim = json.loads(request(env.sim, "GET", downstream)[1])["spec"]["clusterIP"]
    assert ipaddress.ip_address(in_sim) in SIM_RANGE
    assert in_sim != in_kcp


def test_a_cluster_serving_services_has_kubes_kubernetes_service_which_comes_back_when_deleted(env: Env) -> None:
    """As kube-apiserver keeps `default/kubernetes` (the range's first address, 443 to its own port), kcp keeps one
    in each logical cluster that serves Services."""
    for prefix in ("", f"/clusters/{NEGOTIATED}"):
        code, body = request(env.kcp, "GET", f"{prefix}{SERVICES}/kubernetes")
        assert code == 200, body
        svc = json.loads(body)
        assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
        assert svc["spec"]["clusterIP"] == str(KCP_RANGE.network_address + 1)
        assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": env.kcp.port}]
    uid = json.loads(request(env.kcp, "GET", f"{SERVICES}/kubernetes")[1])["metadata"]["uid"]
    run_kubectl(env.kcp, "delete", "service", "kubernetes")
    eventually(lambda: request(env.kcp, "GET", f"{SERVICES}/kubernetes")[0] == 200, "the kubernetes Service made again")
    again = json.loads(request(env.kcp, "GET", f"{SERVICES}/kubernetes")[1])
    assert again["metadata"]["uid"] != uid
    assert again["spec"]["clusterIP"] == str(KCP_RANGE.network_address + 1)
