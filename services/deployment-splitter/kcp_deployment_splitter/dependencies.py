"""What a pod template depends on by name.

Pods refer to ConfigMaps, Secrets, a ServiceAccount and PersistentVolumeClaims by name, so those must
exist, under the same names, on every cluster that runs a share; a Service whose selector matches the
template's labels fronts those pods there too (found by label, in reconcile_dependencies.py).
Objects every namespace has anyway (the `default` ServiceAccount, the `kube-root-ca.crt` ConfigMap)
are not references worth placing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

# kind -> (api version, plural): the dependency kinds, in the order they are placed
KINDS: dict[str, tuple[str, str]] = {
    "ConfigMap": ("v1", "configmaps"),
    "Secret": ("v1", "secrets"),
    "ServiceAccount": ("v1", "serviceaccounts"),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims"),
    "Service": ("v1", "services"),
}
EVERYWHERE = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}


def references(template: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of every ConfigMap, Secret, ServiceAccount and PVC the pod template names."""
    spec = template.get("spec") or {}
    found: set[tuple[str, str]] = set()
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:
        found.add(("ServiceAccount", account))
    for pull in spec.get("imagePullSecrets") or []:
        if pull.get("name"):
            found.add(("Secret", pull["name"]))
    for volume in spec.get("volumes") or []:
        found.update(_volume(volume))
    for container in _containers(spec):
        for source in container.get("envFrom") or []:
            if (source.get("configMapRef") or {}).get("name"):
                found.add(("ConfigMap", source["configMapRef"]["name"]))
            if (source.get("secretRef") or {}).get("name"):
                found.add(("Secret", source["secretRef"]["name"]))
        for env in container.get("env") or []:
            value_from = env.get("valueFrom") or {}
            if (value_from.get("configMapKeyRef") or {}).get("name"):
                found.add(("ConfigMap", value_from["configMapKeyRef"]["name"]))
            if (value_from.get("secretKeyRef") or {}).get("name"):
                found.add(("Secret", value_from["secretKeyRef"]["name"]))
    return found - EVERYWHERE


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for field in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(field) or []


def _volume(volume: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if (volume.get("configMap") or {}).get("name"):
        yield "ConfigMap", volume["configMap"]["name"]
    if (volume.get("secret") or {}).get("secretName"):
        yield "Secret", volume["secret"]["secretName"]
    if (volume.get("persistentVolumeClaim") or {}).get("claimName"):
        yield "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]
    for source in (volume.get("projected") or {}).get("sources") or []:
        if (source.get("configMap") or {}).get("name"):
            yield "ConfigMap", source["configMap"]["name"]
        if (source.get("secret") or {}).get("name"):
            yield "Secret", source["secret"]["name"]
