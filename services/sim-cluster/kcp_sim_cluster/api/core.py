"""core/v1 types a cluster runs workloads with: Pods (status, binding, eviction, log, exec, attach,
portforward), Services, Endpoints, Nodes, PersistentVolumes and their claims. Their defaults and validation are
kcp_apiserver.kubetypes'."""

from __future__ import annotations

import dataclasses

from kcp_apiserver.embedding import BINDING, Cause, Obj, Resource, kube_resource, now_rfc3339, qos_class, spec
from kcp_sim_cluster.api import columns, podexec, podlog, pods, portforward
from kcp_sim_cluster.api.network import Network
from kcp_sim_cluster.api.strategy import KubeStrategy, kube_strategy


def _pod_status(pod: Obj) -> None:
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(spec(pod))}


PRIORITY_FIELDS = ("priority", "preemptionPolicy")


class PodStrategy(KubeStrategy):
    """A pod's spec is fixed once created, but binding sets its nodeName (kube's binding REST writes it
    without the update validation). Its priority is the Priority admission plugin's to set, so the
    defaults' priority and preemptionPolicy are dropped on create (the plugin must see what the client
    gave) and kept from the stored pod on update (as the plugin does)."""

    def prepare_for_create(self, obj: Obj) -> None:
        given = {f for f in PRIORITY_FIELDS if spec(obj).get(f) is not None}
        super().prepare_for_create(obj)
        for field in PRIORITY_FIELDS:
            if field not in given:
                spec(obj).pop(field, None)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        for field in PRIORITY_FIELDS:
            if spec(obj).get(field) is None and spec(old).get(field) is not None:
                spec(obj)[field] = spec(old)[field]
        super().prepare_for_update(obj, old)

    def validate_subresource_update(self, subresource: str, obj: Obj, old: Obj) -> list[Cause]:
        if subresource == "binding":
            return self.validate(obj)
        return super().validate_subresource_update(subresource, obj, old)

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """kube's graceful pod deletion: a pod bound to a node and not finished stays, deleting, for the grace
        asked (else its terminationGracePeriodSeconds) while its kubelet stops it; an unbound or finished one goes
        at once, as does any with grace 0 (`--force`)."""
        grace = requested if requested is not None else spec(obj).get("terminationGracePeriodSeconds", 30)
        if not spec(obj).get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        return 1 if int(grace) < 0 else int(grace)


def _claim_status(pvc: Obj) -> None:
    pvc["status"] = {"phase": "Pending"}


def _volume_status(pv: Obj) -> None:
    """A new volume is Pending until the volume controller makes it Available (or binds it)."""
    pv["status"] = {"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()}


def resources(release: str) -> tuple[Resource, ...]:
    return (
        kube_resource("", "v1", "Pod", "pods", namespaced=True, release=release, short_names=("po",),
                      categories=("all",), has_status=True, columns=columns.POD,
                      strategy=kube_strategy("", "v1", "Pod", release, on_create=_pod_status, cls=PodStrategy),
                      field_selectors=("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                                       "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                                       "status.podIP", "status.nominatedNodeName"),
                      actions=(BINDING, pods.eviction(pdb_resource(release)), podlog.LOG, podexec.EXEC,
                               podexec.ATTACH, portforward.PORT_FORWARD)),
        kube_resource("", "v1", "Service", "services", namespaced=True, release=release, short_names=("svc",),
                      categories=("all",), has_status=True, columns=columns.SERVICE,
                      strategy=kube_strategy("", "v1", "Service", release,
                                             on_create=lambda svc: svc.__setitem__("status", {"loadBalancer": {}}))),
        kube_resource("", "v1", "Endpoints", "endpoints", namespaced=True, release=release, short_names=("ep",),
                      singular="endpoints", strategy=kube_strategy("", "v1", "Endpoints", release),
                      columns=columns.ENDPOINTS),
        kube_resource("", "v1", "Node", "nodes", namespaced=False, release=release, short_names=("no",),
                      has_status=True, status_on_create=True,  # as kube: a kubelet registers with its status
                      strategy=kube_strategy("", "v1", "Node", release), columns=columns.NODE,
                      field_selectors=("spec.unschedulable",)),
        kube_resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", namespaced=True,
                      release=release, short_names=("pvc",), has_status=True,
                      strategy=kube_strategy("", "v1", "PersistentVolumeClaim", release, on_create=_claim_status),
                      columns=columns.PERSISTENT_VOLUME_CLAIM),
        kube_resource("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False, release=release,
                      short_names=("pv",), has_status=True, columns=columns.PERSISTENT_VOLUME,
                      strategy=kube_strategy("", "v1", "PersistentVolume", release, on_create=_volume_status)),
        limit_range_resource(release),
    )


def with_log_interval(served: tuple[Resource, ...], seconds: float) -> tuple[Resource, ...]:
    """`served` with pods' log and attach printing a line every `seconds` (the sim's --log-interval) in pods
    without the `sim.kcp.io/log-interval` annotation."""
    if not seconds:
        return served
    streams = {"log": podlog.log_action(seconds), "attach": podexec.attach_action(seconds)}
    return tuple(dataclasses.replace(r, actions=tuple(streams.get(a.name, a) for a in r.actions))
                 if (r.group, r.plural) == ("", "pods") else r for r in served)


def with_network(served: tuple[Resource, ...], network: Network) -> tuple[Resource, ...]:
    """`served` with pods' exec reaching Services over `network` (api/network.py): a container's `wget`."""
    services = next(r for r in served if (r.group, r.plural) == ("", "services"))
    slices = next(r for r in served if (r.group, r.plural) == ("discovery.k8s.io", "endpointslices"))
    namespaces = next(r for r in served if (r.group, r.plural) == ("", "namespaces"))
    action = podexec.exec_action(podexec.Reach(network, services, slices, namespaces))
    return tuple(dataclasses.replace(r, actions=tuple(action if a.name == "exec" else a for a in r.actions))
                 if (r.group, r.plural) == ("", "pods") else r for r in served)


def limit_range_resource(release: str) -> Resource:
    from kcp_sim_cluster.api import limits

    return limits.limit_ranges(release)


def pdb_resource(release: str) -> Resource:
    from kcp_sim_cluster.api import policy

    return policy.pod_disruption_budgets(release)
