"""etcd keys: the logical cluster under the resource, parsed into the one ObjectKey controllers use too."""

from __future__ import annotations

from kcp_apiserver.storage.keys import object_key, parse_key, resource_prefix, scope_prefix
from kcpcommon.keys import ObjectKey, encode

PREFIX = resource_prefix("", "configmaps")


def test_keys_put_the_logical_cluster_right_under_the_resource() -> None:
    assert PREFIX == "/registry/core/configmaps/"
    assert object_key(PREFIX, "root:org", "default", "web") == "/registry/core/configmaps/root:org/default/web"
    assert scope_prefix(PREFIX, "root:org", "default") == "/registry/core/configmaps/root:org/default/"
    assert scope_prefix(PREFIX, None, "default") == PREFIX  # every logical cluster


def test_etcd_keys_parse_into_the_controllers_object_key() -> None:
    key = parse_key(PREFIX, object_key(PREFIX, "root:org", "default", "web"), namespaced=True)
    assert type(key) is ObjectKey and key == ObjectKey("root:org", "default", "web")
    assert encode(key) == "root:org|default/web"
    assert parse_key(PREFIX, object_key(PREFIX, "admin", "", "node-1"), namespaced=False) == ObjectKey(
        "admin", "", "node-1")
