"""helm 4, unmodified, against kcp: a chart's whole lifecycle, applied server-side (helm 4's default) and not.

A post-install/post-upgrade hook is part of it: helm creates it after the release's objects, replacing the
one before (before-hook-creation), and leaves it behind at uninstall, as it does on any cluster.

The chart (ConfigMaps, a Secret, a ServiceAccount, a Role and RoleBinding, a CRD in crds/ and a custom
resource of it) is written into the test's tmp dir; HOME and XDG dirs point there too, so helm writes
nothing outside it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcp_process import REPO, KcpServer, cluster_kubeconfig, run_kubectl

TEMPLATES = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
data:
  revision: {{ .Release.Revision | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data:
  size: {{ .Values.size | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-secret
type: Opaque
stringData:
  password: {{ .Values.password | quote }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}-sa
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Release.Name }}-role
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Release.Name }}-binding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ .Release.Name }}-role
subjects:
- kind: ServiceAccount
  name: {{ .Release.Name }}-sa
  namespace: {{ .Release.Namespace }}
---
apiVersion: helm.example.com/v1
kind: Gizmo
metadata:
  name: {{ .Release.Name }}-gizmo
spec:
  greeting: {{ .Values.greeting | quote }}
  size: {{ .Values.size }}
"""

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "gizmos.helm.example.com"},
       "spec": {"group": "helm.example.com", "scope": "Namespaced",
                "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "greeting": {"type": "string"}, "size": {"type": "integer"}}}}}}}]}}
RESOURCES = ("configmap/{r}-config", "configmap/{r}-extra", "secret/{r}-secret", "serviceaccount/{r}-sa",
             "role/{r}-role", "rolebinding/{r}-binding", "gizmo/{r}-gizmo")


def helm_binary() -> str:
    """helm 4: $HELM, or the copy `make tools` puts in the repository's .tools/bin."""
    for candidate in (os.environ.get("HELM"), str(REPO / ".tools/bin/helm")):
        if candidate and Path(candidate).exists():
            return candidate
    raise AssertionError("helm not found: run `make tools` (or set HELM)")


class Helm:
    """helm with its home, cache, config and data under the test's tmp dir, against one kubeconfig."""

    def __init__(self, tmp: Path, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "HOME": str(tmp / "home"), "XDG_CACHE_HOME": str(tmp / "cache"),
                    "XDG_CONFIG_HOME": str(tmp / "config"), "XDG_DATA_HOME": str(tmp / "data"),
                    "HELM_CACHE_HOME": str(tmp / "cache"), "HELM_CONFIG_HOME": str(tmp / "config"),
                    "HELM_DATA_HOME": str(tmp / "data")}

    def __call__(self, *args: str) -> str:
        result = subprocess.run([helm_binary(), "--kubeconfig", str(self.kubeconfig), *args], capture_output=True,
                                text=True, timeout=180, env=self.env)
        assert result.returncode == 0, f"helm {' '.join(args)} failed:\n{result.stderr}"
        return result.stdout


def write_chart(root: Path) -> Path:
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "crds").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: \"1.0\"\n")
    (chart / "values.yaml").write_text("greeting: hello\nsize: 1\npassword: s3cret\n")
    (chart / "templates" / "all.yaml").write_text(TEMPLATES)
    (chart / "crds" / "gizmo.yaml").write_text(yaml.safe_dump(CRD))
    return chart


def kubectl_json(kcp: KcpServer, kubeconfig: Path, ns: str, *args: str) -> Any:
    out = run_kubectl(kcp, "--kubeconfig", str(kubeconfig), "-n", ns, "get", *args, "-o", "json").stdout
    return json.loads(out)


@pytest.mark.parametrize(("where", "server_side"), [("admin", "true"), ("other", "true"), ("admin", "false")])
def test_helm_installs_upgrades_rolls_back_and_uninstalls(kcp: KcpServer, unique: str, tmp_path: Path, where: str,
                                                         server_side: str) -> None:
    kubeconfig = kcp.kubeconfig if where == "admin" else cluster_kubeconfig(kcp, f"helm-{unique}", unique)
    helm, chart = Helm(tmp_path, kubeconfig), write_chart(tmp_path)
    ns, release = f"helm-{unique}", f"r{unique}"
    run_kubectl(kcp, "--kubeconfig", str(kubeconfig), "create", "namespace", ns)
    sside = f"--server-side={server_side}"

    helm("install", release, str(chart), "-n", ns, sside, "--wait=watcher", "--timeout=120s")
    for resource in RESOURCES:
        run_kubectl(kcp, "--kubeconfig", str(kubeconfig), "-n", ns, "get", resource.format(r=release))
    config = kubectl_json(kcp, kubeconfig, ns, "configmap", f"{release}-config", "--show-managed-fields")
    assert config["data"] == {"greeting": "hello"}
    assert config["metadata"]["annotations"]["kcp.io/cluster"] == ("admin" if where == "admin" else f"helm-{unique}")
    [entry] = [e for e in config["metadata"]["managedFields"] if e["manager"] == "helm"]
    assert entry["operation"] == ("Apply" if server_side == "true" else "Update")

    assert kubectl_json(kcp, kubeconfig, ns, "configmap", f"{release}-hook")["data"] == {"revision": "1"}

    helm("upgrade", release, str(chart), "-n", ns, sside, "--set", "greeting=bye", "--set", "size=3",
         "--wait=watcher", "--timeout=120s")
    assert kubectl_json(kcp, kubeconfig, ns, "configmap", f"{release}-hook")["data"] == {"revision": "2"}
    assert kubectl_json(kcp, kubeconfig, ns, "configmap", f"{release}-config")["data"] == {"greeting": "bye"}
    assert kubectl_json(kcp, kubeconfig, ns, "gizmo", f"{release}-gizmo")["spec"] == {"greeting": "bye", "size": 3}

    helm("rollback", release, "1", "-n", ns, "--wait=watcher", "--timeout=120s")
    assert kubectl_json(kcp, kubeconfig, ns, "configmap", f"{release}-config")["data"] == {"greeting": "hello"}
    assert kubectl_json(kcp, kubeconfig, ns, "gizmo", f"{release}-gizmo")["spec"] == {"greeting": "hello", "size": 1}

    [listed] = json.loads(helm("list", "-n", ns, "-o", "json"))
    assert (listed["name"], listed["revision"], listed["status"]) == (release, "3", "deployed")
    status = json.loads(helm("status", release, "-n", ns, "-o", "json"))
    assert status["version"] == 3 and status["info"]["status"] == "deployed"

    helm("uninstall", release, "-n", ns, "--wait", "--timeout=120s")
    left = run_kubectl(kcp, "--kubeconfig", str(kubeconfig), "-n", ns, "get", "configmaps,secrets,roles,gizmos",
                       "-o", "name").stdout.split()
    assert [name for name in left if release in name] == [f"configmap/{release}-hook"]  # hooks outlive releases
    assert json.loads(helm("list", "-n", ns, "-o", "json")) == []
