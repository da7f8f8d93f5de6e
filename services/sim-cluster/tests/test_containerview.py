"""What a simulated container sees: env as the kubelet resolves it, ConfigMap and Secret volumes as files."""

from __future__ import annotations

import base64

from kcp_sim_cluster.api.containerview import container_env, container_files

CONFIGMAPS = {"cfg": {"kind": "ConfigMap", "data": {"KEY": "from-cm", "mode": "fast"}}}
SECRETS = {"sec": {"kind": "Secret", "data": {"password": base64.b64encode(b"s3cret").decode()}}}
POD = {"metadata": {"name": "web-0", "namespace": "ns", "labels": {"app": "web"}},
       "spec": {"nodeName": "node-1", "volumes": [
           {"name": "config", "configMap": {"name": "cfg"}},
           {"name": "picked", "configMap": {"name": "cfg", "items": [{"key": "KEY", "path": "sub/key.txt"}]}},
           {"name": "creds", "secret": {"secretName": "sec"}}]},
       "status": {"podIP": "10.0.0.5"}}


def test_env_resolves_sources_in_kubes_order() -> None:
    container = {"envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CM_"}],
                 "env": [{"name": "CM_mode", "value": "slow"},
                         {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                         {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                         {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}}},
                         {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "KEY"}}},
                         {"name": "MISSING", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "x",
                                                                                "optional": True}}},
                         {"name": "URL", "value": "http://$(POD):80/$(UNDEFINED)/$$(POD)"}]}
    env = container_env(POD, container, CONFIGMAPS, SECRETS)
    assert env["CM_KEY"] == "from-cm"
    assert env["CM_mode"] == "slow"  # env overrides envFrom
    assert (env["POD"], env["APP"], env["PASSWORD"], env["KEY"]) == ("web-0", "web", "s3cret", "from-cm")
    assert "MISSING" not in env
    assert env["URL"] == "http://web-0:80/$(UNDEFINED)/$(POD)"
    assert env["HOSTNAME"] == "web-0"
    assert next(iter(env)) == "PATH"
    assert list(env)[-1] == "HOME"


def test_volumes_mount_their_keys_as_files() -> None:
    container = {"volumeMounts": [{"name": "config", "mountPath": "/etc/config"},
                                  {"name": "picked", "mountPath": "/picked/"},
                                  {"name": "creds", "mountPath": "/creds/password", "subPath": "password"}]}
    files = container_files(POD, container, CONFIGMAPS, SECRETS)
    assert files["/etc/config/KEY"] == b"from-cm"
    assert files["/etc/config/mode"] == b"fast"
    assert files["/picked/sub/key.txt"] == b"from-cm"
    assert "/picked/mode" not in files
    assert files["/creds/password"] == b"s3cret"
    assert files["/etc/hostname"] == b"web-0\n"
