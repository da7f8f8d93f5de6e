"""kube's defaults, applied in one walk: what a syncer copying objects down will see."""

from __future__ import annotations

import pytest

from kcp_apiserver.kubetypes import defaults


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.25", "IfNotPresent"),
    ("registry:5000/team/app", "Always"), ("registry:5000/team/app:v2", "IfNotPresent"),
    ("nginx@sha256:abcd", "IfNotPresent"),
])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert defaults.image_pull_policy(image) == policy


def test_a_deployment_gets_kubes_rolling_update_defaults_and_its_template_the_pod_defaults() -> None:
    obj = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1", "ports": [
        {"containerPort": 80}]}], "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}}}}
    defaults.deployment(obj)
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["terminationGracePeriodSeconds"], pod["schedulerName"],
            pod["securityContext"]) == ("Always", "ClusterFirst", 30, "default-scheduler", {})
    assert "enableServiceLinks" not in pod  # a template is not a pod: kube sets it on pods only
    container = pod["containers"][0]
    assert container == {"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                         "terminationMessagePolicy": "File", "resources": {}}
    assert pod["volumes"] == [{"name": "v", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "x",
                                                                                       "defaultMode": 420}}]


def test_a_recreate_deployment_gets_no_rolling_update() -> None:
    obj = {"spec": {"strategy": {"type": "Recreate"}}}
    defaults.deployment(obj)
    assert obj["spec"]["strategy"] == {"type": "Recreate"}


def test_given_values_are_kept() -> None:
    obj = {"spec": {"replicas": 0, "strategy": {"rollingUpdate": {"maxSurge": 1}}, "revisionHistoryLimit": 2}}
    defaults.deployment(obj)
    assert obj["spec"]["replicas"] == 0
    assert obj["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": "25%"}
    assert obj["spec"]["revisionHistoryLimit"] == 2


def test_a_pod_gets_requests_from_limits_and_what_admission_adds() -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1"}},
                                    "readinessProbe": {"httpGet": {"port": 80}}}]}}
    defaults.pod(pod)
    spec = pod["spec"]
    container = spec["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert container["readinessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                                           "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                                           "failureThreshold": 3}
    assert (spec["serviceAccountName"], spec["serviceAccount"], spec["priority"], spec["enableServiceLinks"],
            spec["preemptionPolicy"]) == ("default", "default", 0, True, "PreemptLowerPriority")
    assert spec["tolerations"] == [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]


def test_a_pod_that_tolerates_everything_gets_no_more_tolerations() -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": "x"}], "tolerations": [{"operator": "Exists"}]}}
    defaults.pod(pod)
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]


@pytest.mark.parametrize(("resources", "qos"), [
    ({}, "BestEffort"),
    ({"requests": {"cpu": "1"}}, "Burstable"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
])
def test_qos_class(resources: dict[str, dict[str, str]], qos: str) -> None:
    assert defaults.qos_class({"containers": [{"name": "c", "resources": resources}]}) == qos


def test_a_service_gets_kubes_defaults() -> None:
    svc = {"spec": {"ports": [{"port": 80}, {"port": 443, "targetPort": "https", "protocol": "UDP"}]}}
    defaults.service(svc)
    spec = svc["spec"]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80},
                             {"port": 443, "targetPort": "https", "protocol": "UDP"}]
    node_port = {"spec": {"type": "NodePort", "sessionAffinity": "ClientIP", "ports": []}}
    defaults.service(node_port)
    assert node_port["spec"]["externalTrafficPolicy"] == "Cluster"
    assert node_port["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_a_job_gets_completions_parallelism_and_backoff_but_a_cron_job_template_does_not() -> None:
    job = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    defaults.job(job, 37)
    assert {k: job["spec"][k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                        "podReplacementPolicy")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed"}
    older = {"spec": {}}
    defaults.job(older, 25)
    assert "podReplacementPolicy" not in older["spec"]  # a field 1.25 does not have
    parallel_only = {"spec": {"parallelism": 3}}
    defaults.job(parallel_only, 37)
    assert "completions" not in parallel_only["spec"]
    cron = {"spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": {}}}}}}
    defaults.cron_job(cron, 37)
    assert (cron["spec"]["concurrencyPolicy"], cron["spec"]["successfulJobsHistoryLimit"],
            cron["spec"]["failedJobsHistoryLimit"]) == ("Allow", 3, 1)
    assert "completions" not in cron["spec"]["jobTemplate"]["spec"]
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "Always"


def test_stateful_set_and_daemon_set_update_strategies() -> None:
    sts = {"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]}}
    defaults.stateful_set(sts, 37)
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    ds = {"spec": {}}
    defaults.daemon_set(ds)
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}


def test_a_persistent_volume_is_retained_a_file_system_and_pending_until_the_controller_sees_it() -> None:
    pv = {"spec": {"hostPath": {"path": "/a"}}}
    defaults.persistent_volume(pv)
    assert pv == {"spec": {"hostPath": {"path": "/a", "type": ""}, "persistentVolumeReclaimPolicy": "Retain",
                           "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}
    given = {"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"}}
    defaults.persistent_volume(given)
    assert given["spec"] == {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"}
