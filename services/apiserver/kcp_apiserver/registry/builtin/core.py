"""The core ("") group's built-in types: Namespaces, ConfigMaps, Secrets, ServiceAccounts, Events."""

from __future__ import annotations

import base64
import binascii
import re

from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.registry.builtin.events import (
    CORE_FIELD_GETTERS,
    CORE_FIELD_SELECTORS,
    EVENT_COLUMNS,
)
from kcp_apiserver.registry.resource import Column, Obj, Resource, Subresource
from kcp_apiserver.registry.strategy import FunctionStrategy
from kcp_apiserver.registry.tables import AGE, NAME

CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
MAX_DATA_BYTES = 1024 * 1024  # kube's MaxSecretSize: the total of a ConfigMap's or a Secret's values
TOO_LONG = f"Too long: may not be more than {MAX_DATA_BYTES} bytes"


def _base64_size(value: object) -> int:
    """The decoded length of a base64 string, without decoding it."""
    text = str(value)
    return len(text) * 3 // 4 - text[-2:].count("=")


def _too_long(field_path: str) -> Cause:
    return Cause("FieldValueTooLong", TOO_LONG, field_path)


def _data_keys(obj: Obj, fields: tuple[str, ...]) -> list[Cause]:
    causes = []
    for field_name in fields:
        for key in (obj.get(field_name) or {}):
            if len(key) > 253 or not CONFIG_KEY.match(key):
                causes.append(Cause("FieldValueInvalid",
                                    f"Invalid value: \"{key}\": a valid config key must consist of alphanumeric "
                                    "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                                    "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                                    f"{field_name}"))
    return causes


def _immutable(obj: Obj, old: Obj | None, fields: tuple[str, ...]) -> list[Cause]:
    if old is None or not old.get("immutable"):
        return []
    causes = []
    for field_name in fields:
        if obj.get(field_name) != old.get(field_name):
            causes.append(Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set",
                                field_name))
    if not obj.get("immutable"):
        causes.append(Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set",
                            "immutable"))
    return causes


def validate_configmap(obj: Obj, old: Obj | None) -> list[Cause]:
    fields = ("data", "binaryData")
    causes = _data_keys(obj, fields) + _immutable(obj, old, fields)
    for key in set(obj.get("data") or {}) & set(obj.get("binaryData") or {}):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{key}": duplicate of key present in binaryData',
                            "data"))
    size = sum(len(str(v).encode()) for v in (obj.get("data") or {}).values())
    size += sum(_base64_size(v) for v in (obj.get("binaryData") or {}).values())
    if size > MAX_DATA_BYTES:
        causes.append(_too_long("[]"))  # kube reports the whole object, whose empty path prints as []
    return causes


def prepare_secret(obj: Obj, old: Obj | None) -> None:
    """stringData is write-only: merged into data, as kube does."""
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = dict(obj.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    obj.setdefault("type", "Opaque")


def validate_secret(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = _data_keys(obj, ("data",)) + _immutable(obj, old, ("data",))
    for key, value in (obj.get("data") or {}).items():
        try:
            base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            causes.append(Cause("FieldValueInvalid", f'Invalid value: "{key}": illegal base64 data', f"data[{key}]"))
    if sum(_base64_size(v) for v in (obj.get("data") or {}).values()) > MAX_DATA_BYTES:
        causes.append(_too_long("data"))
    if old is not None and old.get("type") != obj.get("type"):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{obj.get("type")}": field is immutable', "type"))
    return causes


def prepare_namespace(obj: Obj, old: Obj | None) -> None:
    spec = obj.setdefault("spec", {})
    if old is None:
        spec["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}
    else:
        spec["finalizers"] = (old.get("spec") or {}).get("finalizers", [])
    obj.setdefault("metadata", {}).setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


class NamespaceStrategy(FunctionStrategy):
    """A namespace is held by its spec.finalizers too, and shows Terminating while it empties."""

    def __init__(self) -> None:
        super().__init__(prepare_namespace)

    def prepare_for_delete(self, obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def finalizers(self, obj: Obj) -> list[str]:
        return [*super().finalizers(obj), *((obj.get("spec") or {}).get("finalizers") or [])]


def _count(field_name: str) -> Column:
    return Column("Data", "integer", lambda o: len(o.get(field_name) or {}) + len(o.get("binaryData") or {}),
                  "Number of data entries.")


NAMESPACE = Resource(
    "", "v1", "Namespace", "namespaces", "namespace", False, short_names=("ns",), has_status=True,
    definition="io.k8s.api.core.v1.Namespace", name_is_dns_label=True, strategy=NamespaceStrategy(),
    columns=(NAME, Column("Status", "string", lambda o: (o.get("status") or {}).get("phase", ""),
                          "The status of the namespace"), AGE),
    field_selectors=("status.phase",),
)

EVENT = Resource(
    "", "v1", "Event", "events", "event", True, short_names=("ev",),
    definition="io.k8s.api.core.v1.Event", columns=EVENT_COLUMNS,
    field_selectors=CORE_FIELD_SELECTORS, field_getters=CORE_FIELD_GETTERS,
)

# kube's TokenRequest API: POST serviceaccounts/NAME/token issues a token for the service account
TOKEN_REQUEST = Subresource("token", "authentication.k8s.io", "v1", "TokenRequest", ("create",))

SERVICE_ACCOUNT = Resource(
    "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, short_names=("sa",),
    definition="io.k8s.api.core.v1.ServiceAccount", subresources=(TOKEN_REQUEST,),
    columns=(NAME, Column("Secrets", "string", lambda o: len(o.get("secrets") or []), "Number of secrets."), AGE))

RESOURCES: tuple[Resource, ...] = (
    NAMESPACE,
    Resource("", "v1", "ConfigMap", "configmaps", "configmap", True, short_names=("cm",),
             definition="io.k8s.api.core.v1.ConfigMap", strategy=FunctionStrategy(validate=validate_configmap),
             columns=(NAME, _count("data"), AGE)),
    Resource("", "v1", "Secret", "secrets", "secret", True, definition="io.k8s.api.core.v1.Secret",
             strategy=FunctionStrategy(prepare_secret, validate_secret), field_selectors=("type",),
             columns=(NAME, Column("Type", "string", lambda o: o.get("type", ""), "The type of secret"),
                      Column("Data", "integer", lambda o: len(o.get("data") or {}), "Number of data entries."),
                      AGE)),
    SERVICE_ACCOUNT,
    EVENT,
)
