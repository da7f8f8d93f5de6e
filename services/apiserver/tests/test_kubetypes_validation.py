"""kube's validation wording for the rules that matter to workloads."""

from __future__ import annotations

from typing import Any

from kcp_apiserver.kubetypes import apps, batch, core, defaults, policy
from kcp_apiserver.kubetypes import validation as v


def deployment(labels: dict[str, str], selector: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": "d"}, "spec": {"selector": selector, "template": {
        "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    defaults.deployment(obj)
    return obj


def messages(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def test_go_renderings_are_kubes() -> None:
    assert v.go_string_map({"b": "2", "a": "1"}) == 'map[string]string{"a":"1", "b":"2"}'
    assert v.go_string_map({}) == "map[string]string(nil)"
    assert v.go_label_selector({"matchLabels": {"app": "x"}}) == (
        'v1.LabelSelector{MatchLabels:map[string]string{"app":"x"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}")


def test_the_selector_must_match_the_template_labels() -> None:
    causes = apps.validate_deployment(deployment({"app": "two"}, {"matchLabels": {"app": "one"}}))
    assert messages(causes) == ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"two"}: '
                                "`selector` does not match template `labels`"]
    assert apps.validate_deployment(deployment({"app": "one", "tier": "x"}, {"matchLabels": {"app": "one"}})) == []


def test_an_empty_or_missing_selector_is_refused() -> None:
    assert messages(apps.validate_deployment(deployment({"app": "x"}, None))) == ["spec.selector: Required value"]
    assert messages(apps.validate_deployment(deployment({"app": "x"}, {}))) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]


def test_the_deployment_selector_is_immutable() -> None:
    old = deployment({"app": "x"}, {"matchLabels": {"app": "x"}})
    new = deployment({"app": "y"}, {"matchLabels": {"app": "y"}})
    assert messages(apps.selector_fixed(new, old)) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"y"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]


def test_a_deployment_template_must_restart_always_and_have_containers() -> None:
    obj = deployment({"app": "x"}, {"matchLabels": {"app": "x"}})
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    obj["spec"]["template"]["spec"]["containers"] = []
    assert messages(apps.validate_deployment(obj)) == [
        "spec.template.spec.containers: Required value",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']


def test_negative_replicas_are_refused() -> None:
    obj = deployment({"app": "x"}, {"matchLabels": {"app": "x"}})
    obj["spec"]["replicas"] = -1
    assert messages(apps.validate_deployment(obj)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"]


def test_a_job_template_is_immutable() -> None:
    job = {"metadata": {"name": "j", "uid": "u"}, "spec": {"selector": {"matchLabels": {"job": "j"}}, "template": {
        "metadata": {"labels": {"job": "j"}}, "spec": {"restartPolicy": "Never",
                                                      "containers": [{"name": "c", "image": "a"}]}}}}
    changed = {**job, "spec": {**job["spec"], "template": {"metadata": job["spec"]["template"]["metadata"], "spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}}}}
    causes = batch.validate_job_update(changed, job)
    assert [c.field for c in causes] == ["spec.template"]
    assert causes[0].message.endswith("field is immutable")


def test_a_job_without_a_selector_is_checked_as_the_server_that_generates_one_would() -> None:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "a"}]}}
    defaults.pod_template(template)
    assert batch.validate_job({"spec": {"template": template}}) == []
    assert messages(batch.validate_job({"spec": {"manualSelector": True, "template": template}})) == [
        "spec.selector: Required value"]
    template["spec"]["restartPolicy"] = "Always"
    assert messages(batch.validate_job({"spec": {"template": template}})) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"']


def test_a_pod_spec_may_only_change_images() -> None:
    old = {"containers": [{"name": "c", "image": "a"}], "restartPolicy": "Always"}
    assert core.validate_pod_update({"spec": {**old, "containers": [{"name": "c", "image": "b"}]}},
                                    {"spec": old}) == []
    causes = core.validate_pod_update({"spec": {**old, "nodeName": "n"}}, {"spec": old})
    assert [c.field for c in causes] == ["spec"]
    assert causes[0].message.startswith("Forbidden: pod updates may not change fields other than")


def test_a_service_needs_ports_named_when_several() -> None:
    svc = {"spec": {"type": "ClusterIP", "sessionAffinity": "None",
                    "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]}}
    assert messages(core.validate_service(svc)) == ["spec.ports[0].name: Required value",
                                                    "spec.ports[1].name: Required value"]
    assert messages(core.validate_service({"spec": {"type": "Magic", "sessionAffinity": "None", "ports": []}})) == [
        'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
        '"NodePort"', "spec.ports: Required value"]


def test_a_budget_takes_one_of_min_available_and_max_unavailable() -> None:
    assert policy.validate_budget({"spec": {"minAvailable": 1, "maxUnavailable": 1}})
    assert policy.validate_budget({"spec": {"minAvailable": "50%"}}) == []


def test_a_service_name_is_a_dns_1035_label() -> None:
    svc = {"metadata": {"name": "1st"}, "spec": {"type": "ClusterIP", "sessionAffinity": "None",
                                                 "ports": [{"port": 80, "protocol": "TCP"}]}}
    assert messages(core.validate_service(svc)) == [
        'metadata.name: Invalid value: "1st": a DNS-1035 label must consist of lower case alphanumeric characters '
        "or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]


def test_rolling_update_amounts_are_counts_or_percents() -> None:
    obj = deployment({"app": "x"}, {"matchLabels": {"app": "x"}})
    obj["spec"]["strategy"]["rollingUpdate"] = {"maxSurge": "50", "maxUnavailable": "120%"}
    assert messages(apps.validate_deployment(obj)) == [
        'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
        'spec.strategy.rollingUpdate.maxSurge: Invalid value: "50": a valid percent string must be a numeric '
        "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
    assert messages(policy.validate_budget({"spec": {"minAvailable": -1}})) == [
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]


def test_container_ports_are_checked_as_kube_checks_them() -> None:
    ports = [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81},
             {"name": "Web--Port-Number-9", "containerPort": 0, "hostPort": 70000}, {"name": "1234"}]
    assert messages(v.container_ports(ports, "spec.containers[0].ports")) == [
        'spec.containers[0].ports[1].name: Duplicate value: "http"',
        'spec.containers[0].ports[2].name: Invalid value: "Web--Port-Number-9": must be no more than 15 characters',
        'spec.containers[0].ports[2].name: Invalid value: "Web--Port-Number-9": must contain only alpha-numeric '
        "characters (a-z, 0-9), and hyphens (-)",
        'spec.containers[0].ports[2].name: Invalid value: "Web--Port-Number-9": must not contain consecutive hyphens',
        "spec.containers[0].ports[2].containerPort: Required value",
        "spec.containers[0].ports[2].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        'spec.containers[0].ports[3].name: Invalid value: "1234": must contain at least one letter (a-z)',
        "spec.containers[0].ports[3].containerPort: Required value"]


def test_volumes_and_their_mounts_are_checked_as_kube_checks_them() -> None:
    spec: dict[str, Any] = {"volumes": [{"name": "data"}, {"name": "data"}, {"name": "Cache"}], "containers": [
        {"name": "c", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/d"},
                                                     {"name": "cache", "mountPath": "/d"}, {"name": "Cache"}]}]}
    defaults.pod_spec(spec)
    assert messages(v.pod_spec(spec, "spec")) == [
        'spec.volumes[1].name: Duplicate value: "data"',
        'spec.volumes[2].name: Invalid value: "Cache": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
        "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.containers[0].volumeMounts[1].name: Not found: "cache"',
        'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique',
        'spec.containers[0].volumeMounts[2].name: Not found: "Cache"',
        "spec.containers[0].volumeMounts[2].mountPath: Required value"]


def test_pull_and_dns_policies_are_kubes_and_init_container_names_differ_from_the_containers() -> None:
    spec: dict[str, Any] = {"dnsPolicy": "Sometimes", "initContainers": [{"name": "c", "image": "i"}],
                            "containers": [{"name": "c", "image": "i", "imagePullPolicy": "Often"}]}
    defaults.pod_spec(spec)
    assert messages(v.pod_spec(spec, "spec")) == [
        'spec.containers[0].imagePullPolicy: Unsupported value: "Often": supported values: "Always", '
        '"IfNotPresent", "Never"',
        'spec.initContainers[0].name: Duplicate value: "c"',
        'spec.dnsPolicy: Unsupported value: "Sometimes": supported values: "ClusterFirstWithHostNet", '
        '"ClusterFirst", "Default", "None"']


def test_a_stateful_set_mounts_the_volumes_of_its_claim_templates() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "db"}, "spec": {
        "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
            {"name": "c", "image": "i", "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                                         {"name": "logs", "mountPath": "/logs"}]}]}}}}
    defaults.stateful_set(obj, 35)
    assert messages(apps.validate_stateful_set(obj)) == [
        'spec.template.spec.containers[0].volumeMounts[1].name: Not found: "logs"']


def test_a_persistent_volume_needs_modes_a_storage_capacity_and_one_volume_source() -> None:
    assert messages(core.validate_persistent_volume({"spec": {}})) == [
        "spec.accessModes: Required value", "spec.capacity: Required value",
        "spec: Required value: must specify a volume type"]
    bad = {"spec": {"accessModes": ["X"], "capacity": {"storage": "0", "cpu": "1"},
                    "persistentVolumeReclaimPolicy": "Keep", "volumeMode": "Disk",
                    "hostPath": {"path": "/a"}, "nfs": {"server": "s", "path": "/"}}}
    assert messages(core.validate_persistent_volume(bad)) == [
        'spec.accessModes: Unsupported value: "X": supported values: "ReadOnlyMany", "ReadWriteMany", '
        '"ReadWriteOnce", "ReadWriteOncePod"',
        'spec.capacity: Unsupported value: "cpu": supported values: "storage"',
        'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", '
        '"Retain"',
        'spec.volumeMode: Unsupported value: "Disk": supported values: "Block", "Filesystem"',
        "spec.nfs: Forbidden: may not specify more than 1 volume type"]
    good = {"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/a"}}}
    defaults.persistent_volume(good)
    assert core.validate_persistent_volume(good) == []
