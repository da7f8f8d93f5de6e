"""Protobuf field tables of kube's workload types (core/v1 pods and services, apps/v1, batch/v1,
policy/v1, networking.k8s.io/v1, scheduling.k8s.io/v1, autoscaling/v2 and v1), for servers that serve them
as built-in types.

kubectl's typed commands (`kubectl create deployment|job|cronjob|service|pdb|ingress|priorityclass`,
`kubectl drain`'s evictions, `kubectl autoscale`) send these bodies in protobuf. Field numbers are kube's
wire format (its generated.proto);
the table lists the fields those clients send and the common ones beside them. A field number not
listed is skipped on decode, as gogo-protobuf skips unknown fields.
"""

from __future__ import annotations

from kcp_apiserver.apimachinery.kubeproto import INLINE, KEEP, MAP, PTR, REP

_OBJECT = {1: ("metadata", "ObjectMeta", 0)}


def _kind(spec: str, status: str | None = None) -> dict[int, tuple[str, str, int]]:
    fields = {**_OBJECT, 2: ("spec", spec, 0)}
    if status is not None:
        fields[3] = ("status", status, 0)
    return fields


SCHEMAS: dict[str, dict[int, tuple[str, str, int]]] = {
    # --- core/v1: pod templates ---
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta", 0), 2: ("spec", "PodSpec", 0)},
    "PodSpec": {
        1: ("volumes", "Volume", REP), 20: ("initContainers", "Container", REP),
        2: ("containers", "Container", REP | KEEP), 3: ("restartPolicy", "string", 0),
        4: ("terminationGracePeriodSeconds", "int64", PTR), 5: ("activeDeadlineSeconds", "int64", PTR),
        6: ("dnsPolicy", "string", 0), 7: ("nodeSelector", "string", MAP),
        8: ("serviceAccountName", "string", 0), 9: ("serviceAccount", "string", 0),
        21: ("automountServiceAccountToken", "bool", PTR), 10: ("nodeName", "string", 0),
        11: ("hostNetwork", "bool", 0), 12: ("hostPID", "bool", 0), 13: ("hostIPC", "bool", 0),
        27: ("shareProcessNamespace", "bool", PTR), 14: ("securityContext", "PodSecurityContext", PTR),
        15: ("imagePullSecrets", "LocalObjectReference", REP), 16: ("hostname", "string", 0),
        17: ("subdomain", "string", 0), 19: ("schedulerName", "string", 0),
        22: ("tolerations", "Toleration", REP), 24: ("priorityClassName", "string", 0),
        25: ("priority", "int32", PTR), 28: ("readinessGates", "PodReadinessGate", REP),
        29: ("runtimeClassName", "string", PTR), 30: ("enableServiceLinks", "bool", PTR),
        31: ("preemptionPolicy", "string", PTR), 35: ("setHostnameAsFQDN", "bool", PTR),
    },
    "PodSecurityContext": {
        2: ("runAsUser", "int64", PTR), 6: ("runAsGroup", "int64", PTR), 3: ("runAsNonRoot", "bool", PTR),
        4: ("supplementalGroups", "int64", REP), 5: ("fsGroup", "int64", PTR),
    },
    "PodReadinessGate": {1: ("conditionType", "string", KEEP)},
    "Toleration": {
        1: ("key", "string", 0), 2: ("operator", "string", 0), 3: ("value", "string", 0),
        4: ("effect", "string", 0), 5: ("tolerationSeconds", "int64", PTR),
    },
    "Container": {
        1: ("name", "string", KEEP), 2: ("image", "string", 0), 3: ("command", "string", REP),
        4: ("args", "string", REP), 5: ("workingDir", "string", 0), 6: ("ports", "ContainerPort", REP),
        19: ("envFrom", "EnvFromSource", REP), 7: ("env", "EnvVar", REP),
        8: ("resources", "ResourceRequirements", 0), 9: ("volumeMounts", "VolumeMount", REP),
        13: ("terminationMessagePath", "string", 0), 20: ("terminationMessagePolicy", "string", 0),
        14: ("imagePullPolicy", "string", 0), 16: ("stdin", "bool", 0), 17: ("stdinOnce", "bool", 0),
        18: ("tty", "bool", 0),
    },
    "ContainerPort": {
        1: ("name", "string", 0), 2: ("hostPort", "int32", 0), 3: ("containerPort", "int32", KEEP),
        4: ("protocol", "string", 0), 5: ("hostIP", "string", 0),
    },
    "EnvVar": {1: ("name", "string", KEEP), 2: ("value", "string", 0), 3: ("valueFrom", "EnvVarSource", PTR)},
    "EnvVarSource": {
        1: ("fieldRef", "ObjectFieldSelector", PTR), 3: ("configMapKeyRef", "KeySelector", PTR),
        4: ("secretKeyRef", "KeySelector", PTR),
    },
    "ObjectFieldSelector": {1: ("apiVersion", "string", 0), 2: ("fieldPath", "string", KEEP)},
    "KeySelector": {1: ("localObjectReference", "LocalObjectReference", INLINE), 2: ("key", "string", KEEP),
                    3: ("optional", "bool", PTR)},
    "EnvFromSource": {1: ("prefix", "string", 0), 2: ("configMapRef", "EnvSource", PTR),
                      3: ("secretRef", "EnvSource", PTR)},
    "EnvSource": {1: ("localObjectReference", "LocalObjectReference", INLINE), 2: ("optional", "bool", PTR)},
    "ResourceRequirements": {1: ("limits", "Quantity", MAP), 2: ("requests", "Quantity", MAP)},
    "VolumeMount": {
        1: ("name", "string", KEEP), 2: ("readOnly", "bool", 0), 3: ("mountPath", "string", KEEP),
        4: ("subPath", "string", 0),
    },
    "Volume": {1: ("name", "string", KEEP), 2: ("volumeSource", "VolumeSource", INLINE)},
    "VolumeSource": {
        2: ("emptyDir", "EmptyDirVolumeSource", PTR), 6: ("secret", "SecretVolumeSource", PTR),
        10: ("persistentVolumeClaim", "PVCVolumeSource", PTR), 19: ("configMap", "ConfigMapVolumeSource", PTR),
    },
    "EmptyDirVolumeSource": {1: ("medium", "string", 0), 2: ("sizeLimit", "Quantity", PTR)},
    "SecretVolumeSource": {1: ("secretName", "string", 0), 3: ("defaultMode", "int32", PTR),
                           4: ("optional", "bool", PTR)},
    "ConfigMapVolumeSource": {1: ("localObjectReference", "LocalObjectReference", INLINE),
                              3: ("defaultMode", "int32", PTR), 4: ("optional", "bool", PTR)},
    "PVCVolumeSource": {1: ("claimName", "string", KEEP), 2: ("readOnly", "bool", 0)},
    # --- core/v1: pods, bindings, services ---
    "Pod": _kind("PodSpec", "PodStatus"),
    "PodStatus": {1: ("phase", "string", 0), 3: ("message", "string", 0), 4: ("reason", "string", 0)},
    "Binding": {**_OBJECT, 2: ("target", "ObjectReference", 0)},
    "Service": _kind("ServiceSpec", "ServiceStatus"),
    "ServiceSpec": {
        1: ("ports", "ServicePort", REP), 2: ("selector", "string", MAP), 3: ("clusterIP", "string", 0),
        18: ("clusterIPs", "string", REP), 4: ("type", "string", 0), 5: ("externalIPs", "string", REP),
        7: ("sessionAffinity", "string", 0), 8: ("loadBalancerIP", "string", 0),
        10: ("externalName", "string", 0), 11: ("externalTrafficPolicy", "string", 0),
        13: ("publishNotReadyAddresses", "bool", 0), 19: ("ipFamilies", "string", REP),
        17: ("ipFamilyPolicy", "string", PTR), 20: ("allocateLoadBalancerNodePorts", "bool", PTR),
        21: ("loadBalancerClass", "string", PTR), 22: ("internalTrafficPolicy", "string", PTR),
    },
    "ServicePort": {
        1: ("name", "string", 0), 2: ("protocol", "string", 0), 6: ("appProtocol", "string", PTR),
        3: ("port", "int32", KEEP), 4: ("targetPort", "IntOrString", 0), 5: ("nodePort", "int32", 0),
    },
    "ServiceStatus": {1: ("loadBalancer", "LoadBalancerStatus", 0)},
    "LoadBalancerStatus": {},
    # --- apps/v1 ---
    "Deployment": _kind("DeploymentSpec", "DeploymentStatus"),
    "DeploymentSpec": {
        1: ("replicas", "int32", PTR), 2: ("selector", "LabelSelector", PTR), 3: ("template", "PodTemplateSpec", 0),
        4: ("strategy", "DeploymentStrategy", 0), 5: ("minReadySeconds", "int32", 0),
        6: ("revisionHistoryLimit", "int32", PTR), 7: ("paused", "bool", 0),
        9: ("progressDeadlineSeconds", "int32", PTR),
    },
    "DeploymentStrategy": {1: ("type", "string", 0), 2: ("rollingUpdate", "RollingUpdateDeployment", PTR)},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "IntOrString", PTR), 2: ("maxSurge", "IntOrString", PTR)},
    "DeploymentStatus": {},
    "ReplicaSet": _kind("ReplicaSetSpec", "ReplicaSetStatus"),
    "ReplicaSetSpec": {1: ("replicas", "int32", PTR), 4: ("minReadySeconds", "int32", 0),
                       2: ("selector", "LabelSelector", PTR), 3: ("template", "PodTemplateSpec", 0)},
    "ReplicaSetStatus": {1: ("replicas", "int32", KEEP)},
    "DaemonSet": _kind("DaemonSetSpec", "DaemonSetStatus"),
    "DaemonSetSpec": {1: ("selector", "LabelSelector", PTR), 2: ("template", "PodTemplateSpec", 0),
                      4: ("minReadySeconds", "int32", 0), 6: ("revisionHistoryLimit", "int32", PTR)},
    "DaemonSetStatus": {},
    "StatefulSet": _kind("StatefulSetSpec", "StatefulSetStatus"),
    "StatefulSetSpec": {1: ("replicas", "int32", PTR), 2: ("selector", "LabelSelector", PTR),
                        3: ("template", "PodTemplateSpec", 0), 5: ("serviceName", "string", 0),
                        6: ("podManagementPolicy", "string", 0), 8: ("revisionHistoryLimit", "int32", PTR),
                        9: ("minReadySeconds", "int32", 0)},
    "StatefulSetStatus": {},
    # --- batch/v1 ---
    "Job": _kind("JobSpec", "JobStatus"),
    "JobSpec": {
        1: ("parallelism", "int32", PTR), 2: ("completions", "int32", PTR),
        3: ("activeDeadlineSeconds", "int64", PTR), 7: ("backoffLimit", "int32", PTR),
        4: ("selector", "LabelSelector", PTR), 5: ("manualSelector", "bool", PTR),
        6: ("template", "PodTemplateSpec", 0), 8: ("ttlSecondsAfterFinished", "int32", PTR),
        9: ("completionMode", "string", PTR), 10: ("suspend", "bool", PTR),
    },
    "JobStatus": {},
    "CronJob": _kind("CronJobSpec", "CronJobStatus"),
    "CronJobSpec": {
        1: ("schedule", "string", KEEP), 8: ("timeZone", "string", PTR), 2: ("startingDeadlineSeconds", "int64", PTR),
        3: ("concurrencyPolicy", "string", 0), 4: ("suspend", "bool", PTR), 5: ("jobTemplate", "JobTemplateSpec", 0),
        6: ("successfulJobsHistoryLimit", "int32", PTR), 7: ("failedJobsHistoryLimit", "int32", PTR),
    },
    "JobTemplateSpec": {1: ("metadata", "ObjectMeta", 0), 2: ("spec", "JobSpec", 0)},
    "CronJobStatus": {},
    # --- policy/v1 ---
    "PodDisruptionBudget": _kind("PodDisruptionBudgetSpec", "PodDisruptionBudgetStatus"),
    "PodDisruptionBudgetSpec": {1: ("minAvailable", "IntOrString", PTR), 2: ("selector", "LabelSelector", PTR),
                                3: ("maxUnavailable", "IntOrString", PTR),
                                4: ("unhealthyPodEvictionPolicy", "string", PTR)},
    "PodDisruptionBudgetStatus": {},
    "Eviction": {**_OBJECT, 2: ("deleteOptions", "DeleteOptions", PTR)},
    # --- scheduling.k8s.io/v1 ---
    "PriorityClass": {**_OBJECT, 2: ("value", "int32", KEEP), 3: ("globalDefault", "bool", 0),
                      4: ("description", "string", 0), 5: ("preemptionPolicy", "string", PTR)},
    # --- networking.k8s.io/v1 ---
    "Ingress": _kind("IngressSpec", "IngressStatus"),
    "IngressSpec": {4: ("ingressClassName", "string", PTR), 1: ("defaultBackend", "IngressBackend", PTR),
                    2: ("tls", "IngressTLS", REP), 3: ("rules", "IngressRule", REP)},
    "IngressTLS": {1: ("hosts", "string", REP), 2: ("secretName", "string", 0)},
    "IngressRule": {1: ("host", "string", 0), 2: ("ingressRuleValue", "IngressRuleValue", INLINE)},
    "IngressRuleValue": {1: ("http", "HTTPIngressRuleValue", PTR)},
    "HTTPIngressRuleValue": {1: ("paths", "HTTPIngressPath", REP | KEEP)},
    "HTTPIngressPath": {1: ("path", "string", 0), 3: ("pathType", "string", PTR), 2: ("backend", "IngressBackend", 0)},
    "IngressBackend": {4: ("service", "IngressServiceBackend", PTR)},
    "IngressServiceBackend": {1: ("name", "string", KEEP), 2: ("port", "ServiceBackendPort", 0)},
    "ServiceBackendPort": {1: ("name", "string", 0), 2: ("number", "int32", 0)},
    "IngressStatus": {},
    "ResourceQuota": _kind("ResourceQuotaSpec", "ResourceQuotaStatus"),
    "ResourceQuotaSpec": {1: ("hard", "Quantity", MAP), 2: ("scopes", "string", REP),
                          3: ("scopeSelector", "ScopeSelector", PTR)},
    "ScopeSelector": {1: ("matchExpressions", "ScopedResourceSelectorRequirement", REP)},
    "ScopedResourceSelectorRequirement": {1: ("scopeName", "string", 0), 2: ("operator", "string", 0),
                                          3: ("values", "string", REP)},
    "ResourceQuotaStatus": {1: ("hard", "Quantity", MAP), 2: ("used", "Quantity", MAP)},
    # --- autoscaling/v2 and v1 (`kubectl autoscale`) ---
    "HorizontalPodAutoscaler": _kind("HPASpec", "HPAStatus"),
    "HPASpec": {1: ("scaleTargetRef", "CrossVersionObjectReference", 0), 2: ("minReplicas", "int32", PTR),
                3: ("maxReplicas", "int32", KEEP), 4: ("metrics", "MetricSpec", REP),
                5: ("behavior", "HPABehavior", PTR)},
    "CrossVersionObjectReference": {1: ("kind", "string", KEEP), 2: ("name", "string", KEEP),
                                    3: ("apiVersion", "string", 0)},
    "MetricSpec": {1: ("type", "string", KEEP), 2: ("object", "ObjectMetricSource", PTR),
                   3: ("pods", "PodsMetricSource", PTR), 4: ("resource", "ResourceMetricSource", PTR),
                   7: ("containerResource", "ContainerResourceMetricSource", PTR),
                   5: ("external", "ExternalMetricSource", PTR)},
    "MetricTarget": {1: ("type", "string", KEEP), 2: ("value", "Quantity", PTR), 3: ("averageValue", "Quantity", PTR),
                     4: ("averageUtilization", "int32", PTR)},
    "MetricIdentifier": {1: ("name", "string", KEEP), 2: ("selector", "LabelSelector", PTR)},
    "ResourceMetricSource": {1: ("name", "string", KEEP), 2: ("target", "MetricTarget", 0)},
    "ContainerResourceMetricSource": {1: ("name", "string", KEEP), 2: ("target", "MetricTarget", 0),
                                      3: ("container", "string", KEEP)},
    "PodsMetricSource": {1: ("metric", "MetricIdentifier", 0), 2: ("target", "MetricTarget", 0)},
    "ObjectMetricSource": {1: ("describedObject", "CrossVersionObjectReference", 0), 2: ("target", "MetricTarget", 0),
                           3: ("metric", "MetricIdentifier", 0)},
    "ExternalMetricSource": {1: ("metric", "MetricIdentifier", 0), 2: ("target", "MetricTarget", 0)},
    "HPABehavior": {1: ("scaleUp", "HPAScalingRules", PTR), 2: ("scaleDown", "HPAScalingRules", PTR)},
    "HPAScalingRules": {3: ("stabilizationWindowSeconds", "int32", PTR), 1: ("selectPolicy", "string", PTR),
                        2: ("policies", "HPAScalingPolicy", REP), 4: ("tolerance", "Quantity", PTR)},
    "HPAScalingPolicy": {1: ("type", "string", KEEP), 2: ("value", "int32", KEEP), 3: ("periodSeconds", "int32", KEEP)},
    "HPAStatus": {},
    "autoscaling.v1.HorizontalPodAutoscaler": _kind("autoscaling.v1.HPASpec", "HPAStatus"),
    "autoscaling.v1.HPASpec": {1: ("scaleTargetRef", "CrossVersionObjectReference", 0),
                               2: ("minReplicas", "int32", PTR), 3: ("maxReplicas", "int32", KEEP),
                               4: ("targetCPUUtilizationPercentage", "int32", PTR)},
}

KINDS: dict[tuple[str, str], str] = {
    ("v1", "Pod"): "Pod",
    ("v1", "Binding"): "Binding",
    ("v1", "Service"): "Service",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("apps/v1", "Deployment"): "Deployment",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("apps/v1", "DaemonSet"): "DaemonSet",
    ("apps/v1", "StatefulSet"): "StatefulSet",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("policy/v1", "Eviction"): "Eviction",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "HorizontalPodAutoscaler",
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): "HorizontalPodAutoscaler",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "autoscaling.v1.HorizontalPodAutoscaler",
}
