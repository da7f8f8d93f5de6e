"""What a simulated container sees, as the kubelet would set it up: its environment (envFrom, then env,
with `$(VAR)` references, ConfigMap, Secret and downward-API values resolved) and the files of its
ConfigMap and Secret volumes at their mount paths. The exec interpreter (shell.py) answers from it."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping

from kcp_apiserver.embedding import BUILTINS, ActionCall, Obj, Resource
from kcp_apiserver.embedding import status as st
from kcp_sim_cluster.api.shell import Box

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KUBERNETES_SERVICE = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
                      "KUBERNETES_SERVICE_PORT_HTTPS": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443"}
REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")
FIELD = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def _data(obj: Obj | None) -> dict[str, str]:
    """A ConfigMap's or Secret's values as text (a Secret's data is base64)."""
    if obj is None:
        return {}
    values = dict(obj.get("data") or {}) if obj.get("kind") != "Secret" else {
        key: base64.b64decode(value).decode(errors="replace") for key, value in (obj.get("data") or {}).items()}
    values.update(obj.get("stringData") or {})
    if obj.get("kind") == "ConfigMap":
        values.update({k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("binaryData") or {}).items()})
    return values


def _field(pod: Obj, path: str) -> str:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    match = FIELD.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    values = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "spec.serviceAccountName": spec.get("serviceAccountName"), "status.podIP": status.get("podIP"),
              "status.hostIP": status.get("hostIP")}
    return str(values.get(path) or "")


def _expand(value: str, env: Mapping[str, str]) -> str:
    """kube's `$(VAR)`: a defined variable's value, `$$` a literal `$`, anything else as written."""
    return REFERENCE.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), value)


def container_env(pod: Obj, container: Obj, configmaps: Mapping[str, Obj], secrets: Mapping[str, Obj]) -> dict[str, str]:
    env = {"PATH": DEFAULT_PATH, "HOSTNAME": hostname(pod)}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix") or ""
        if source.get("configMapRef"):
            values = _data(configmaps.get(source["configMapRef"].get("name", "")))
        else:
            values = _data(secrets.get((source.get("secretRef") or {}).get("name", "")))
        env.update({prefix + key: value for key, value in values.items()})
    for var in container.get("env") or []:
        name, source = var.get("name", ""), var.get("valueFrom") or {}
        if "value" in var or not source:
            env[name] = _expand(var.get("value") or "", env)
        elif source.get("configMapKeyRef"):
            ref = source["configMapKeyRef"]
            value = _data(configmaps.get(ref.get("name", ""))).get(ref.get("key", ""))
            if value is not None:
                env[name] = value
        elif source.get("secretKeyRef"):
            ref = source["secretKeyRef"]
            value = _data(secrets.get(ref.get("name", ""))).get(ref.get("key", ""))
            if value is not None:
                env[name] = value
        elif source.get("fieldRef"):
            env[name] = _field(pod, source["fieldRef"].get("fieldPath", ""))
    return {**env, **KUBERNETES_SERVICE, "HOME": "/root"}


def hostname(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"])


def container_files(pod: Obj, container: Obj, configmaps: Mapping[str, Obj],
                    secrets: Mapping[str, Obj]) -> dict[str, bytes]:
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    files = {"/etc/hostname": (hostname(pod) + "\n").encode()}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name")) or {}
        if volume.get("configMap"):
            source, values = volume["configMap"], _data(configmaps.get(volume["configMap"].get("name", "")))
        elif volume.get("secret"):
            source, values = volume["secret"], _data(secrets.get(volume["secret"].get("secretName", "")))
        else:
            continue
        items = source.get("items")
        paths = {i.get("key", ""): i.get("path", "") for i in items} if items else {key: key for key in values}
        in_volume = {path: values[key].encode() for key, path in paths.items() if key in values}
        root = mount.get("mountPath", "").rstrip("/")
        if mount.get("subPath"):
            if mount["subPath"] in in_volume:
                files[root] = in_volume[mount["subPath"]]
            continue
        files.update({f"{root}/{path}": data for path, data in in_volume.items()})
    return files


def _resource(plural: str) -> Resource:
    return next(r for r in BUILTINS if r.plural == plural and not r.group)


async def container_box(call: ActionCall, pod: Obj, container: Obj) -> Box:
    """Reads the ConfigMaps and Secrets the container refers to and builds what it sees."""
    names: dict[str, set[str]] = {"configmaps": set(), "secrets": set()}
    for source in container.get("envFrom") or []:
        names["configmaps" if source.get("configMapRef") else "secrets"].add(
            (source.get("configMapRef") or source.get("secretRef") or {}).get("name", ""))
    for var in container.get("env") or []:
        source = var.get("valueFrom") or {}
        if source.get("configMapKeyRef"):
            names["configmaps"].add(source["configMapKeyRef"].get("name", ""))
        if source.get("secretKeyRef"):
            names["secrets"].add(source["secretKeyRef"].get("name", ""))
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if volume.get("configMap"):
            names["configmaps"].add(volume["configMap"].get("name", ""))
        if volume.get("secret"):
            names["secrets"].add(volume["secret"].get("secretName", ""))
    found: dict[str, dict[str, Obj]] = {"configmaps": {}, "secrets": {}}
    for plural, wanted in names.items():
        resource = _resource(plural)
        for name in filter(None, wanted):
            try:
                found[plural][name] = await call.registry.get(resource, call.cluster, call.namespace, name)
            except st.APIError:
                continue  # kube would not start the container; the sim's kubelet does, without the value
    configmaps, secrets = found["configmaps"], found["secrets"]
    return Box(hostname(pod), container_env(pod, container, configmaps, secrets),
               container_files(pod, container, configmaps, secrets))
