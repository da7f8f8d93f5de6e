"""Checks of an x-kubernetes-embedded-resource value: apiVersion, kind and metadata as kube's
schemaobjectmeta validates them, and encoding/json's complaint when metadata is no ObjectMeta."""

from __future__ import annotations

import re
from typing import Any

from kcp_apiserver.apiextensions.valueerrors import Obj, invalid_value, required_value
from kcp_apiserver.apimachinery.status import Cause
from kcp_apiserver.apimachinery.validation import max_len_error, regex_error, validate_object_meta

_MISSING = object()

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character")
OBJECT_META_TYPES = {"name": str, "generateName": str, "namespace": str, "selfLink": str, "uid": str,
               "resourceVersion": str, "creationTimestamp": str, "deletionTimestamp": str, "generation": int,
               "deletionGracePeriodSeconds": int, "labels": dict, "annotations": dict, "finalizers": list,
               "ownerReferences": list, "managedFields": list}
_GO_TYPES = {str: "string", int: "int64", dict: "map[string]string", list: "[]string"}
_JSON_NAMES = {str: "string", int: "number", float: "number", bool: "bool", list: "array", dict: "object"}


def _object_meta_error(meta: Any) -> str:
    """encoding/json's complaint when metadata does not decode into an ObjectMeta, or ""."""
    if type(meta) is not dict:
        return f"json: cannot unmarshal {_JSON_NAMES.get(type(meta), 'value')} into Go value of type v1.ObjectMeta"
    for k, want in OBJECT_META_TYPES.items():
        v = meta.get(k)
        if v is None:
            continue
        ok = type(v) is want or (want is int and type(v) is float and v.is_integer())
        if ok and want is dict:
            bad = next((x for x in v.values() if x is not None and type(x) is not str), _MISSING)
            if bad is not _MISSING:
                return (f"json: cannot unmarshal {_JSON_NAMES[type(bad)]} into Go struct field ObjectMeta.{k} "
                        "of type string")
        if ok and k == "finalizers":
            bad = next((x for x in v if x is not None and type(x) is not str), _MISSING)
            if bad is not _MISSING:
                return (f"json: cannot unmarshal {_JSON_NAMES[type(bad)]} into Go struct field ObjectMeta.{k} "
                        "of type string")
        if not ok:
            go = "[]v1.OwnerReference" if k == "ownerReferences" else "[]v1.ManagedFieldsEntry" \
                if k == "managedFields" else _GO_TYPES[want]
            return f"json: cannot unmarshal {_JSON_NAMES[type(v)]} into Go struct field ObjectMeta.{k} of type {go}"
    return ""


def embedded_resource_errors(x: Obj, at: str) -> list[Cause]:
    """schemaobjectmeta's validateEmbeddedResource: apiVersion and kind required, metadata as ObjectMeta."""
    errs: list[Cause] = []
    for key in ("apiVersion", "kind"):
        if key not in x:
            errs.append(required_value(f"{at}.{key}"))
    if "apiVersion" in x:
        v = x["apiVersion"]
        if type(v) is not str:
            errs.append(invalid_value(f"{at}.apiVersion", v, "must be a string"))
        elif not v:
            errs.append(invalid_value(f"{at}.apiVersion", v, "must not be empty"))
        elif v != "/" and v.count("/") > 1:
            errs.append(invalid_value(f"{at}.apiVersion", v, f"unexpected GroupVersion string: {v}"))
    if "kind" in x:
        v = x["kind"]
        if type(v) is not str:
            errs.append(invalid_value(f"{at}.kind", v, "must be a string"))
        elif not v:
            errs.append(invalid_value(f"{at}.kind", v, "must not be empty"))
        else:
            problems = []
            if len(v.encode()) > 63:
                problems.append(max_len_error(63))
            if _DNS1035.fullmatch(v.lower()) is None:
                problems.append(regex_error(_DNS1035_MSG, _DNS1035.pattern, "my-name", "abc-123"))
            if problems:
                errs.append(invalid_value(f"{at}.kind", v, "may have mixed case, but should otherwise match: "
                                     + ",".join(problems)))
    if "metadata" in x:
        meta = x["metadata"]
        problem = _object_meta_error(meta)
        if problem:
            errs.append(invalid_value(f"{at}.metadata", meta, problem))
        elif type(meta) is dict:
            checked = dict(meta)
            checked["name"] = checked.get("name") or "fakename"
            for c in validate_object_meta(checked, namespaced=bool(checked.get("namespace")),
                                          name_is_path_segment=True):
                errs.append(Cause(c.reason, c.message, at + "." + c.field if c.field else at))
    return errs
