"""Which defaulter and validators belong to which of kube's types, keyed by (group, version, kind).

A release changes a few defaults (`minor`); kcp, which serves whatever schema the physical clusters
publish, asks for the newest release's and keeps only what its served schema has.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.kubetypes import apps, autoscaling, batch, core, defaults, networking, policy, scheduling
from kcp_apiserver.kubetypes.hpaversions import to_v1, to_v2
from kcp_apiserver.registry.builtinschemas import newest_release
from kcp_apiserver.registry.resource import Obj

Defaulter = Callable[[Obj], None]
Validator = Callable[[Obj], list[Cause]]
UpdateValidator = Callable[[Obj, Obj], list[Cause]]
GVK = tuple[str, str, str]
Converter = Callable[[Obj], Obj]


@dataclass(frozen=True)
class KubeType:
    """kube's rules for one type: defaults on every write, validation on create and update
    (`validate_update` adds what only an update checks, such as an immutable selector)."""

    default: Defaulter | None = None
    validate: Validator | None = None
    validate_update: UpdateValidator | None = None


def newest_minor() -> int:
    return int(newest_release().split(".")[1])


@functools.cache
def kube_types(minor: int) -> Mapping[GVK, KubeType]:
    return {
        ("apps", "v1", "Deployment"): KubeType(defaults.deployment, apps.validate_deployment, apps.selector_fixed),
        ("apps", "v1", "ReplicaSet"): KubeType(defaults.replica_set, apps.validate_replica_set, apps.selector_fixed),
        ("apps", "v1", "StatefulSet"): KubeType(lambda o: defaults.stateful_set(o, minor),
                                                apps.validate_stateful_set, apps.validate_stateful_set_update),
        ("apps", "v1", "DaemonSet"): KubeType(defaults.daemon_set, apps.validate_daemon_set, apps.selector_fixed),
        ("apps", "v1", "ControllerRevision"): KubeType(validate_update=apps.validate_revision_update),
        ("batch", "v1", "Job"): KubeType(lambda o: defaults.job(o, minor), batch.validate_job,
                                         batch.validate_job_update),
        ("batch", "v1", "CronJob"): KubeType(lambda o: defaults.cron_job(o, minor), batch.validate_cron_job),
        ("", "v1", "Pod"): KubeType(defaults.pod, core.validate_pod, core.validate_pod_update),
        ("", "v1", "ReplicationController"): KubeType(defaults.replication_controller,
                                                      core.validate_replication_controller),
        ("", "v1", "PodTemplate"): KubeType(lambda o: defaults.pod_template(o.get("template"))),
        ("", "v1", "Service"): KubeType(defaults.service, core.validate_service),
        ("", "v1", "Endpoints"): KubeType(defaults.endpoints),
        ("", "v1", "Node"): KubeType(defaults.node),
        ("", "v1", "LimitRange"): KubeType(defaults.limit_range),
        ("", "v1", "PersistentVolumeClaim"): KubeType(defaults.persistent_volume_claim, core.validate_claim,
                                                      core.validate_claim_update),
        ("", "v1", "PersistentVolume"): KubeType(defaults.persistent_volume, core.validate_persistent_volume),
        ("networking.k8s.io", "v1", "Ingress"): KubeType(validate=networking.validate_ingress),
        ("discovery.k8s.io", "v1", "EndpointSlice"): KubeType(defaults.endpoint_slice, networking.validate_slice,
                                                              networking.validate_slice_update),
        ("policy", "v1", "PodDisruptionBudget"): KubeType(validate=policy.validate_budget),
        ("autoscaling", "v2", "HorizontalPodAutoscaler"): KubeType(autoscaling.horizontal_pod_autoscaler,
                                                                   autoscaling.validate_horizontal_pod_autoscaler),
        ("scheduling.k8s.io", "v1", "PriorityClass"): KubeType(scheduling.default_priority_class,
                                                               scheduling.validate_priority_class,
                                                               scheduling.validate_priority_class_update),
    }


def kube_type(group: str, version: str, kind: str, minor: int | None = None) -> KubeType | None:
    """kube's rules for a type, as of release 1.`minor` (the newest when None); None for a type without any."""
    return kube_types(newest_minor() if minor is None else minor).get((group, version, kind))


@dataclass(frozen=True)
class OtherVersion:
    """Another version kube serves a type at, beside the one kcp imports: the same objects (one storage),
    converted as kube converts them. `to_imported` takes an object of this version to the imported
    version's shape (which is what is stored); `from_imported` the other way."""

    version: str
    to_imported: Converter
    from_imported: Converter


# kube's type as imported (the version physical clusters prefer) -> the other versions kube serves it at
OTHER_VERSIONS: Mapping[GVK, tuple[OtherVersion, ...]] = {
    ("autoscaling", "v2", "HorizontalPodAutoscaler"): (OtherVersion("v1", to_v2, to_v1),),
}


def other_versions(group: str, version: str, kind: str) -> tuple[OtherVersion, ...]:
    """The versions kube also serves an imported type at; () for a type served at one version only."""
    return OTHER_VERSIONS.get((group, version, kind), ())
