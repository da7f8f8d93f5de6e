"""kcp-sim-cluster's API with the real kubectl: kube's workload types served as built-ins, with kube's
defaults, validation (422s, nothing stored), columns, OpenAPI, clusterIP allocation, the pod
subresources, releases, several clusters in one process, and a restart that keeps everything."""

from __future__ import annotations

import ipaddress
import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcp_process import KcpServer, free_port, run_kubectl, sim_cluster_command, sim_cluster_env

NEWEST_ONLY_POD = """
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: nginx}]
"""

EVERY_TYPE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx, ports: [{containerPort: 80}]}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: "busybox:1.36"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: postgres}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: agent}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: [echo, hi]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: manual}
subsets: [{addresses: [{ip: 10.1.0.5}], ports: [{port: 80}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: manual-abc, labels: {kubernetes.io/service-name: manual}}
addressType: IPv4
endpoints: [{addresses: [10.1.0.5]}]
ports: [{port: 80}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: front}
spec:
  rules:
  - host: example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: node-1}
spec: {holderIdentity: node-1, leaseDurationSeconds: 40}
---
apiVersion: v1
kind: Node
metadata: {name: manual-node}
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {labels}}}
spec:
  containers: [{{name: app, image: "registry.example/app:1.0"}}]
"""


def sim(root: Path, *args: str) -> KcpServer:
    return KcpServer(root, free_port(), ["--nodes", "0", *args], command=sim_cluster_command(), env=sim_cluster_env())


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KcpServer]:
    server = sim(tmp_path_factory.mktemp("sim-api"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def kubectl(server: KcpServer, *args: str, **kwargs: Any) -> str:
    return run_kubectl(server, *args, **kwargs).stdout


def get(server: KcpServer, *what: str, **kwargs: Any) -> Any:
    return json.loads(kubectl(server, "get", *what, "-o", "json", **kwargs))


def fails(server: KcpServer, *args: str, input_text: str | None = None, **kwargs: Any) -> str:
    result = run_kubectl(server, *args, input_text=input_text, check=False, **kwargs)
    assert result.returncode != 0, result.stdout
    return result.stderr


def raw(server: KcpServer, path: str, body: Any = None, *, kubeconfig: Path | None = None) -> tuple[int, Any]:
    """A request with the admin token, for what kubectl has no verb for; (status, decoded body)."""
    config = yaml.safe_load((kubeconfig or server.kubeconfig).read_text())
    base = config["clusters"][0]["cluster"]["server"]
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method="POST" if body is not None else "GET",
                                     headers={"Authorization": f"Bearer {server.token}",
                                              "Content-Type": "application/json"})
    context = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            text = resp.read().decode()
            return resp.status, (json.loads(text) if resp.headers.get_content_type() == "application/json" else text)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read().decode())


def namespace(server: KcpServer, name: str) -> str:
    kubectl(server, "create", "namespace", name)
    return name


# -- every type, with kube's defaults -----------------------------------------------------------


def test_every_workload_type_is_created_from_yaml_with_kubes_defaults(cluster: KcpServer) -> None:
    ns = namespace(cluster, "every")
    out = kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=EVERY_TYPE)
    for created in ("deployment.apps/web", "replicaset.apps/rs", "statefulset.apps/db", "daemonset.apps/agent",
                    "job.batch/once", "cronjob.batch/tick", "service/web", "endpoints/manual",
                    "endpointslice.discovery.k8s.io/manual-abc", "persistentvolumeclaim/data", "configmap/conf",
                    "secret/creds", "serviceaccount/robot", "ingress.networking.k8s.io/front",
                    "poddisruptionbudget.policy/web", "lease.coordination.k8s.io/node-1", "node/manual-node"):
        assert f"{created} created" in out

    deploy = get(cluster, "-n", ns, "deployment", "web")["spec"]
    assert deploy["replicas"] == 1
    assert deploy["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                            "maxSurge": "25%"}}
    assert (deploy["revisionHistoryLimit"], deploy["progressDeadlineSeconds"]) == (10, 600)
    pod_spec = deploy["template"]["spec"]
    assert (pod_spec["restartPolicy"], pod_spec["dnsPolicy"], pod_spec["terminationGracePeriodSeconds"],
            pod_spec["schedulerName"]) == ("Always", "ClusterFirst", 30, "default-scheduler")
    container = pod_spec["containers"][0]
    assert container["imagePullPolicy"] == "Always"  # no tag
    assert (container["terminationMessagePath"], container["terminationMessagePolicy"]) == (
        "/dev/termination-log", "File")
    assert container["ports"][0]["protocol"] == "TCP"
    rs = get(cluster, "-n", ns, "replicaset", "rs")["spec"]
    assert rs["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # a tag
    sts = get(cluster, "-n", ns, "statefulset", "db")["spec"]
    assert (sts["podManagementPolicy"], sts["updateStrategy"]) == (
        "OrderedReady", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    ds = get(cluster, "-n", ns, "daemonset", "agent")["spec"]
    assert ds["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
    job = get(cluster, "-n", ns, "job", "once")
    assert (job["spec"]["completions"], job["spec"]["parallelism"], job["spec"]["backoffLimit"]) == (1, 1, 6)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "once"
    cron = get(cluster, "-n", ns, "cronjob", "tick")["spec"]
    assert (cron["concurrencyPolicy"], cron["successfulJobsHistoryLimit"], cron["failedJobsHistoryLimit"],
            cron["suspend"]) == ("Allow", 3, 1, False)
    svc = get(cluster, "-n", ns, "service", "web")["spec"]
    assert (svc["type"], svc["sessionAffinity"]) == ("ClusterIP", "None")
    assert svc["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert get(cluster, "-n", ns, "pvc", "data")["status"] == {"phase": "Pending"}
    assert get(cluster, "-n", ns, "secret", "creds")["type"] == "Opaque"


def test_a_pod_is_defaulted_as_kube_apiserver_and_its_admission_store_it(cluster: KcpServer) -> None:
    ns = namespace(cluster, "poddefaults")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: "nginx:latest", resources: {limits: {cpu: 500m, memory: 64Mi}}}]
""")
    pod = yaml.safe_load(kubectl(cluster, "-n", ns, "get", "pod", "p", "-o", "yaml"))
    spec = pod["spec"]
    assert spec["containers"][0]["imagePullPolicy"] == "Always"  # :latest
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "64Mi"}
    assert (spec["serviceAccountName"], spec["priority"], spec["enableServiceLinks"]) == ("default", 0, True)
    assert {t["key"] for t in spec["tolerations"]} == {"node.kubernetes.io/not-ready",
                                                       "node.kubernetes.io/unreachable"}
    assert (pod["status"]["phase"], pod["status"]["qosClass"]) == ("Pending", "Guaranteed")


def test_kubectl_create_deployment_sends_protobuf_and_is_served(cluster: KcpServer) -> None:
    ns = namespace(cluster, "typed")
    kubectl(cluster, "-n", ns, "create", "deployment", "typed", "--image", "nginx:1.25", "--replicas", "3",
            "--port", "8080")
    spec = get(cluster, "-n", ns, "deployment", "typed")["spec"]
    assert spec["replicas"] == 3
    assert spec["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    kubectl(cluster, "-n", ns, "create", "service", "clusterip", "typed", "--tcp", "80:8080")
    assert get(cluster, "-n", ns, "service", "typed")["spec"]["ports"][0]["targetPort"] == 8080
    kubectl(cluster, "-n", ns, "scale", "deployment", "typed", "--replicas", "5")
    assert get(cluster, "-n", ns, "deployment", "typed")["spec"]["replicas"] == 5


# -- validation ---------------------------------------------------------------------------------


def test_a_selector_that_misses_the_template_is_422_and_nothing_is_stored(cluster: KcpServer) -> None:
    ns = namespace(cluster, "invalid")
    err = fails(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  selector: {matchLabels: {app: one}}
  template:
    metadata: {labels: {app: two}}
    spec: {containers: [{name: c, image: nginx}]}
""")
    assert ('The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: '
            'map[string]string{"app":"two"}: `selector` does not match template `labels`') in err
    assert "NotFound" in fails(cluster, "-n", ns, "get", "deployment", "bad")


def test_immutable_fields_stay_immutable(cluster: KcpServer) -> None:
    ns = namespace(cluster, "immutable")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=EVERY_TYPE.split("---")[0])
    err = fails(cluster, "-n", ns, "patch", "deployment", "web", "-p",
                '{"spec":{"selector":{"matchLabels":{"app":"other"}},'
                '"template":{"metadata":{"labels":{"app":"other"}}}}}')
    assert ('spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"other"}, '
            'MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable') in err
    kubectl(cluster, "-n", ns, "create", "service", "clusterip", "fixed", "--tcp", "80")
    err = fails(cluster, "-n", ns, "patch", "service", "fixed", "-p", '{"spec":{"clusterIP":"10.96.0.99"}}')
    assert 'spec.clusterIP: Invalid value: "10.96.0.99": field is immutable' in err
    kubectl(cluster, "-n", ns, "create", "job", "j", "--image", "busybox")
    err = fails(cluster, "-n", ns, "patch", "job", "j", "--type", "json", "-p",
                '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"other"}]')
    assert "spec.template: Invalid value:" in err and "field is immutable" in err
    assert get(cluster, "-n", ns, "job", "j")["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"


def test_a_job_template_must_not_restart_always(cluster: KcpServer) -> None:
    ns = namespace(cluster, "jobpolicy")
    err = fails(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:
    spec: {containers: [{name: c, image: busybox}]}
""")
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"' \
        in err


# -- services get cluster IPs -------------------------------------------------------------------


def test_cluster_ips_come_from_the_service_cidr_unique_and_freed_on_delete(cluster: KcpServer) -> None:
    ns = namespace(cluster, "ips")
    ips = []
    for i in range(6):
        kubectl(cluster, "-n", ns, "create", "service", "clusterip", f"s{i}", "--tcp", "80")
        spec = get(cluster, "-n", ns, "service", f"s{i}")["spec"]
        assert spec["clusterIPs"] == [spec["clusterIP"]]
        assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
        ips.append(spec["clusterIP"])
    assert len(set(ips)) == len(ips)
    assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12") for ip in ips)
    err = fails(cluster, "-n", ns, "create", "service", "clusterip", "taken", "--tcp", "80", "--clusterip", ips[0])
    assert f"failed to allocate IP {ips[0]}: provided IP is already allocated" in err
    kubectl(cluster, "-n", ns, "delete", "service", "s0")
    kubectl(cluster, "-n", ns, "create", "service", "clusterip", "reuse", "--tcp", "80", "--clusterip", ips[0])
    assert get(cluster, "-n", ns, "service", "reuse")["spec"]["clusterIP"] == ips[0]
    kubectl(cluster, "-n", ns, "create", "service", "clusterip", "headless", "--clusterip", "None")
    assert get(cluster, "-n", ns, "service", "headless")["spec"]["clusterIP"] == "None"


def test_the_kubernetes_service_is_there_from_the_start(cluster: KcpServer) -> None:
    """As kube-apiserver's bootstrap controller makes it: the first address of the range, port 443."""
    spec = get(cluster, "-n", "default", "service", "kubernetes")["spec"]
    assert (spec["clusterIP"], spec["ports"][0]["port"], spec["ports"][0]["targetPort"]) == (
        "10.96.0.1", 443, cluster.port)
    subsets = get(cluster, "-n", "default", "endpoints", "kubernetes")["subsets"]
    assert subsets == [{"addresses": [{"ip": "127.0.0.1"}],
                        "ports": [{"name": "https", "port": cluster.port, "protocol": "TCP"}]}]


# -- printing and OpenAPI -----------------------------------------------------------------------


def test_wide_columns_are_kubes(cluster: KcpServer) -> None:
    ns = namespace(cluster, "wide")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=POD.format(name="p", labels="{app: p}"))
    header = kubectl(cluster, "-n", ns, "get", "pods", "-o", "wide").splitlines()[0].split()
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                      "READINESS", "GATES"]
    row = kubectl(cluster, "-n", ns, "get", "pods", "--no-headers").split()
    assert row[:4] == ["p", "0/1", "Pending", "0"]
    header = kubectl(cluster, "-n", ns, "get", "services", "-o", "wide", "-A").splitlines()[0].split()
    assert header[1:] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]


def test_kubectl_explain_reads_kubes_schema(cluster: KcpServer) -> None:
    out = kubectl(cluster, "explain", "deployment.spec.strategy")
    assert "DeploymentStrategy" in out and "rollingUpdate" in out
    assert "restartPolicy" in kubectl(cluster, "explain", "pods.spec")


def test_short_names_and_the_all_category(cluster: KcpServer) -> None:
    ns = namespace(cluster, "shortnames")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=EVERY_TYPE.split("---")[0])
    kubectl(cluster, "-n", ns, "create", "service", "clusterip", "svc", "--tcp", "80")
    assert "deployment.apps/web" in kubectl(cluster, "-n", ns, "get", "all", "-o", "name")
    assert "service/svc" in kubectl(cluster, "-n", ns, "get", "all", "-o", "name")
    names = kubectl(cluster, "-n", ns, "get", "deploy,svc,po", "-o", "name").split()
    assert {"deployment.apps/web", "service/svc"} <= set(names)  # and the Deployment's pods, if a controller runs
    assert all(n.split("/")[0] in ("deployment.apps", "service", "pod") for n in names)


# -- pod subresources ---------------------------------------------------------------------------


def test_binding_assigns_a_node_once(cluster: KcpServer) -> None:
    ns = namespace(cluster, "binding")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=POD.format(name="p", labels="{app: p}"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "node-a"}}
    code, _ = raw(cluster, f"/api/v1/namespaces/{ns}/pods/p/binding", binding)
    assert code == 201
    pod = get(cluster, "-n", ns, "pod", "p")
    assert pod["spec"]["nodeName"] == "node-a"
    assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
    code, status = raw(cluster, f"/api/v1/namespaces/{ns}/pods/p/binding",
                       {**binding, "target": {"kind": "Node", "name": "node-b"}})
    assert (code, status["reason"]) == (409, "Conflict")
    assert 'pod p is already assigned to node "node-a"' in status["message"]


def test_eviction_deletes_unless_a_budget_forbids(cluster: KcpServer) -> None:
    ns = namespace(cluster, "eviction")
    for name, app in (("guarded", "guarded"), ("free", "free")):
        kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=POD.format(name=name, labels=f"{{app: {app}}}"))
    kubectl(cluster, "-n", ns, "create", "pdb", "guard", "--selector", "app=guarded", "--min-available", "1")
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction"}
    code, status = raw(cluster, f"/api/v1/namespaces/{ns}/pods/guarded/eviction",
                       {**eviction, "metadata": {"name": "guarded", "namespace": ns}})
    assert (code, status["reason"]) == (429, "TooManyRequests")
    assert status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    get(cluster, "-n", ns, "pod", "guarded")  # still there
    code, _ = raw(cluster, f"/api/v1/namespaces/{ns}/pods/free/eviction",
                  {**eviction, "metadata": {"name": "free", "namespace": ns}})
    assert code == 201
    assert "NotFound" in fails(cluster, "-n", ns, "get", "pod", "free")


def test_logs_show_one_line_per_container_start(cluster: KcpServer) -> None:
    ns = namespace(cluster, "logs")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=POD.format(name="p", labels="{app: p}"))
    assert "is waiting to start: ContainerCreating" in fails(cluster, "-n", ns, "logs", "p")
    status = {"status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z", "containerStatuses": [{
        "name": "app", "image": "registry.example/app:1.0", "imageID": "", "ready": True, "restartCount": 2,
        "state": {"running": {"startedAt": "2026-01-01T00:02:00Z"}},
        "lastState": {"terminated": {"exitCode": 1, "startedAt": "2026-01-01T00:01:00Z",
                                     "finishedAt": "2026-01-01T00:01:30Z"}}}]}}
    kubectl(cluster, "-n", ns, "patch", "pod", "p", "--subresource", "status", "--type", "merge", "-p",
            json.dumps(status))
    assert kubectl(cluster, "-n", ns, "logs", "p").splitlines() == [
        f"app started (image registry.example/app:1.0, start {n})" for n in (1, 2, 3)]
    stamped = kubectl(cluster, "-n", ns, "logs", "p", "--timestamps").splitlines()
    assert [line.split()[0] for line in stamped] == ["2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z",
                                                     "2026-01-01T00:02:00Z"]
    assert len(kubectl(cluster, "-n", ns, "logs", "p", "--previous").splitlines()) == 2
    assert kubectl(cluster, "-n", ns, "logs", "p", "--tail", "1").strip().endswith("start 3)")


def test_discovery_lists_kubes_subresources(cluster: KcpServer) -> None:
    code, doc = raw(cluster, "/api/v1")
    assert code == 200
    names = {r["name"]: r for r in doc["resources"]}
    assert {"pods/status", "pods/binding", "pods/eviction", "pods/log", "services/status"} <= names.keys()
    assert (names["pods/eviction"]["group"], names["pods/eviction"]["kind"]) == ("policy", "Eviction")
    code, doc = raw(cluster, "/apis/apps/v1")
    names = {r["name"]: r for r in doc["resources"]}
    assert names["deployments/scale"]["kind"] == "Scale"
    assert "daemonsets/scale" not in names  # as kube
    assert "controllerrevisions" in names


# -- a restart keeps everything -----------------------------------------------------------------


def test_a_restart_on_the_same_directory_loses_nothing(tmp_path: Path) -> None:
    server = sim(tmp_path / "sim")
    server.start()
    try:
        ns = namespace(server, "kept")
        kubectl(server, "-n", ns, "create", "-f", "-", input_text=EVERY_TYPE.split("---")[0])
        kubectl(server, "-n", ns, "create", "service", "clusterip", "kept", "--tcp", "80")
        before = get(server, "-n", ns, "deployment,service")["items"]
        assert server.stop() == 0
        server.start()
        after = get(server, "-n", ns, "deployment,service")["items"]
        # the same objects (controllers may have written their status since)
        assert [(o["kind"], o["metadata"]["uid"], o["spec"]) for o in after] == [
            (o["kind"], o["metadata"]["uid"], o["spec"]) for o in before]
        ip = after[1]["spec"]["clusterIP"]
        err = fails(server, "-n", ns, "create", "service", "clusterip", "again", "--tcp", "80", "--clusterip", ip)
        assert "provided IP is already allocated" in err  # the allocation survived the restart
    finally:
        server.stop()


# -- releases and several clusters --------------------------------------------------------------


def test_an_older_release_and_several_clusters_in_one_process(tmp_path: Path, cluster: KcpServer) -> None:
    old = sim(tmp_path / "old", "--kubernetes-version", "1.25", "--clusters", "2", "--name", "edge")
    old.start()
    try:
        first, second = old.root / "edge-1.kubeconfig", old.root / "edge-2.kubeconfig"
        assert first.exists() and second.exists()
        code, version = raw(old, "/version")
        assert code == 200
        assert (version["major"], version["minor"]) == ("1", "25")
        assert version["gitVersion"].startswith("v1.25.")
        err = fails(old, "create", "-f", "-", input_text=NEWEST_ONLY_POD, kubeconfig=first)
        assert 'unknown field "spec.schedulingGates"' in err
        assert "kube-node-lease" in kubectl(old, "get", "namespaces", kubeconfig=second)  # there before any write
        assert get(old, "-n", "default", "service", "kubernetes", kubeconfig=second)["spec"]["clusterIP"] == \
            "10.96.0.1"
        kubectl(old, "create", "deployment", "only-in-first", "--image", "nginx", kubeconfig=first)
        assert "only-in-first" in kubectl(old, "get", "deployments", kubeconfig=first)
        assert "only-in-first" not in run_kubectl(old, "get", "deployments", kubeconfig=second).stdout
        config = yaml.safe_load(second.read_text())
        assert config["clusters"][0]["cluster"]["server"].endswith("/clusters/edge-2")
        assert config["current-context"] == "edge-2"
    finally:
        old.stop()
    ns = namespace(cluster, "newest")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=NEWEST_ONLY_POD)
    assert get(cluster, "-n", ns, "pod", "gated")["spec"]["schedulingGates"] == [{"name": "example.com/wait"}]


def test_a_cluster_serves_custom_resources_as_a_real_one_does(cluster: KcpServer) -> None:
    """Add-ons install CRDs on physical clusters; a syncer reports such types up."""
    kubectl(cluster, "create", "-f", "-", input_text="""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.addons.example.com}
spec:
  group: addons.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
""")
    kubectl(cluster, "wait", "--for", "condition=Established", "crd/widgets.addons.example.com", "--timeout", "60s")
    ns = namespace(cluster, "addons")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: addons.example.com/v1
kind: Widget
metadata: {name: w}
spec: {size: 3}
""")
    assert get(cluster, "-n", ns, "widget", "w")["spec"] == {"size": 3}
    err = fails(cluster, "create", "-f", "-", input_text="""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: deployments.apps}
spec:
  group: apps
  scope: Namespaced
  names: {plural: deployments, kind: Deployment}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
""")
    assert "deployments.apps" in err  # a built-in type's storage is not a CRD's to take


def test_kubectl_drain_evicts_through_the_eviction_subresource(cluster: KcpServer) -> None:
    """kubectl drain cordons the node and posts a policy/v1 Eviction (in protobuf) for each of its pods."""
    ns = namespace(cluster, "drain")
    kubectl(cluster, "create", "-f", "-", input_text="apiVersion: v1\nkind: Node\nmetadata: {name: drained}\n")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=POD.format(name="p", labels="{app: p}"))
    code, _ = raw(cluster, f"/api/v1/namespaces/{ns}/pods/p/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "drained"}})
    assert code == 201
    # no kubelet runs `drained` to end a graceful delete: grace 0, as a real node without one would need
    out = kubectl(cluster, "drain", "drained", "--force", "--ignore-daemonsets", "--grace-period=0", "--timeout", "60s")
    assert "pod/p evicted" in out
    assert "NotFound" in fails(cluster, "-n", ns, "get", "pod", "p")
    assert get(cluster, "node", "drained")["spec"]["unschedulable"] is True


def test_server_side_apply_of_a_port_without_protocol_keeps_one_tcp_port(cluster: KcpServer) -> None:
    """kube keys an applied port that leaves out `protocol` by its default TCP: the live defaulted port is that one."""
    ns = namespace(cluster, "ssa-ports")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    kubectl(cluster, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(service))
    service["spec"]["ports"][0]["targetPort"] = 9090
    kubectl(cluster, "apply", "--server-side", "-f", "-", input_text=yaml.safe_dump(service))
    live = get(cluster, "-n", ns, "service", "web", "--show-managed-fields")
    [port] = live["spec"]["ports"]
    assert (port["port"], port["protocol"], port["targetPort"]) == (80, "TCP", 9090)
    [entry] = [e for e in live["metadata"]["managedFields"] if e["manager"] == "kubectl"]
    assert list(entry["fieldsV1"]["f:spec"]["f:ports"]) == ['k:{"port":80,"protocol":"TCP"}']


# -- priority -----------------------------------------------------------------------------------

PRIORITY_POD = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  {extra}
  containers: [{{name: c, image: "registry.example/app:1.0"}}]
"""


def test_the_system_priority_classes_are_there_and_cannot_be_deleted(cluster: KcpServer) -> None:
    classes = {c["metadata"]["name"]: c["value"] for c in get(cluster, "priorityclasses")["items"]}
    assert {name: classes.get(name) for name in ("system-cluster-critical", "system-node-critical")} == {
        "system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
    assert "this is a system priority class and cannot be deleted" in fails(
        cluster, "delete", "priorityclass", "system-node-critical")
    assert 'maximum allowed value of a user defined priority is 1000000000' in fails(
        cluster, "create", "priorityclass", "too-high", "--value", "1000000001")
    assert "reserved for system use only" in fails(cluster, "create", "priorityclass", "system-mine", "--value", "1")


def test_a_pods_priority_comes_from_its_class_and_an_unknown_class_is_refused(cluster: KcpServer) -> None:
    ns = namespace(cluster, "priorities")
    kubectl(cluster, "create", "priorityclass", "high", "--value", "1000", "--preemption-policy", "Never")
    kubectl(cluster, "-n", ns, "create", "-f", "-",
            input_text=PRIORITY_POD.format(name="p", extra="priorityClassName: high"))
    spec = get(cluster, "-n", ns, "pod", "p")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    error = fails(cluster, "-n", ns, "create", "-f", "-",
                  input_text=PRIORITY_POD.format(name="q", extra="priorityClassName: nowhere"))
    assert 'pods "q" is forbidden: no PriorityClass with name nowhere was found' in error
    error = fails(cluster, "-n", ns, "create", "-f", "-", input_text=PRIORITY_POD.format(name="r", extra="priority: 7"))
    assert "the integer value of priority (7) must not be provided in pod spec" in error
    assert "Forbidden: may not be changed in an update." in fails(
        cluster, "patch", "priorityclass", "high", "--type", "merge", "-p", '{"value": 5}')


def test_the_global_default_class_applies_to_pods_without_one(cluster: KcpServer) -> None:
    ns = namespace(cluster, "defaultpriority")
    kubectl(cluster, "create", "priorityclass", "everyone", "--value", "50", "--global-default")
    try:
        assert "PriorityClass everyone is already marked as default" in fails(
            cluster, "create", "priorityclass", "second", "--value", "60", "--global-default")
        kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=PRIORITY_POD.format(name="p", extra=""))
        spec = get(cluster, "-n", ns, "pod", "p")["spec"]
        assert (spec["priorityClassName"], spec["priority"]) == ("everyone", 50)
    finally:
        kubectl(cluster, "delete", "priorityclass", "everyone")


# -- limit ranges -------------------------------------------------------------------------------


def test_a_limit_range_defaults_containers_and_refuses_one_over_its_max(cluster: KcpServer) -> None:
    ns = namespace(cluster, "limited")
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text="""
apiVersion: v1
kind: LimitRange
metadata: {name: bounds}
spec:
  limits:
  - type: Container
    max: {cpu: "1"}
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
""")
    stored = get(cluster, "-n", ns, "limitrange", "bounds")["spec"]["limits"][0]
    assert stored["defaultRequest"] == {"cpu": "100m", "memory": "128Mi"}  # kube defaults it from default
    kubectl(cluster, "-n", ns, "create", "-f", "-", input_text=PRIORITY_POD.format(name="p", extra=""))
    pod = get(cluster, "-n", ns, "pod", "p")
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"},
                                                         "limits": {"cpu": "500m", "memory": "128Mi"}}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c")
    assert pod["status"]["qosClass"] == "Burstable"
    error = fails(cluster, "-n", ns, "create", "-f", "-", input_text=PRIORITY_POD.format(name="big", extra="").replace(
        'image: "registry.example/app:1.0"', 'image: "registry.example/app:1.0", resources: {limits: {cpu: "2"}}'))
    assert 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in error


def test_kubes_bootstrap_cluster_roles_and_bindings_are_there(cluster: KcpServer) -> None:
    """issue 28 item 4: a simulated cluster shows kube's bootstrap RBAC, aggregated roles included."""
    roles = {r["metadata"]["name"]: r for r in get(cluster, "clusterroles")["items"]}
    assert len(roles) >= 60
    assert {"system:controller:statefulset-controller", "system:kube-controller-manager", "system:node-proxier",
            "system:public-info-viewer"} <= set(roles)
    view = roles["view"]["rules"]
    assert any("apps" in r["apiGroups"] and "deployments" in r["resources"] and "list" in r["verbs"] for r in view)
    paged = kubectl(cluster, "get", "clusterroles", "--chunk-size=10", "-o", "name").split()
    assert len(paged) == len(roles)
    bindings = {b["metadata"]["name"] for b in get(cluster, "clusterrolebindings")["items"]}
    assert {"cluster-admin", "system:basic-user", "system:controller:replicaset-controller"} <= bindings


def test_a_simulated_clusters_objects_carry_no_kcp_annotation_and_its_controllers_still_work(tmp_path: Path) -> None:
    """A physical cluster does not show kcp's `kcp.io/cluster`: the sim's controllers, garbage collector and
    allocators find each object's logical cluster from where it is stored, in each of `--clusters N`."""
    server = KcpServer(tmp_path, free_port(), ["--nodes", "1", "--ready-delay", "0", "--clusters", "2",
                                               "--name", "east"], command=sim_cluster_command(), env=sim_cluster_env())
    server.start()
    try:
        second = server.root / "east-2.kubeconfig"
        kubectl(server, "create", "configmap", "settings", "--from-literal", "k=v", kubeconfig=second)
        assert "kcp.io/cluster" not in kubectl(server, "get", "configmap", "settings", "-o", "yaml", kubeconfig=second)
        kubectl(server, "create", "deployment", "web", "--image", "nginx", "--replicas", "2", kubeconfig=second)
        kubectl(server, "expose", "deployment", "web", "--port", "80", kubeconfig=second)
        kubectl(server, "rollout", "status", "deployment/web", "--timeout", "60s", kubeconfig=second)
        shown = [get(server, kind, kubeconfig=second)["items"] for kind in
                 ("configmaps", "deployments", "replicasets", "pods", "services", "endpoints", "serviceaccounts")]
        shown += [get(server, kind, "-A", kubeconfig=second)["items"] for kind in ("namespaces", "nodes", "leases")]
        objects = [o for items in shown for o in items]
        assert len(objects) > 10
        assert [o["metadata"]["name"] for o in objects
                if "kcp.io/cluster" in (o["metadata"].get("annotations") or {})] == []
        assert all(p["status"].get("podIP") and p["spec"].get("nodeName") for p in shown[3])
        assert get(server, "service", "web", kubeconfig=second)["spec"]["clusterIP"].startswith("10.")
        assert "web" not in run_kubectl(server, "get", "deployments", kubeconfig=server.root / "east-1.kubeconfig"
                                        ).stdout
        kubectl(server, "delete", "deployment", "web", kubeconfig=second)  # the garbage collector takes the rest
        kubectl(server, "wait", "--for=delete", "pod", "-l", "app=web", "--timeout", "60s", kubeconfig=second)
    finally:
        server.stop()
