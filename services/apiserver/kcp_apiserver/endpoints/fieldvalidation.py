"""Decoding against the type's schema: kube's fieldValidation and type checks.

kube-apiserver decodes built-in types into Go structs, so unknown fields are
always dropped; `fieldValidation` only decides whether that is an error
(Strict), a warning (Warn, the default) or silent (Ignore). Values of the
wrong JSON type are 400 BadRequest, as a failed decode is in kube.
"""

from __future__ import annotations

from typing import Any

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.apimachinery.jsonvalues import json_type
from kcp_apiserver.endpoints.wire import duplicate_fields
from kcp_apiserver.registry import schemas
from kcp_apiserver.registry.resource import Obj, Resource

MODES = {"", "Strict", "Warn", "Ignore"}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,),
}
_GO_VALUE_KINDS = {"boolean": "bool", "integer": "number"}  # encoding/json's words where OpenAPI's differ


class FieldValidator:
    """Checks and prunes request objects against the OpenAPI schema of their kind."""

    def schema_for(self, res: Resource) -> dict[str, Any] | None:
        if res.definition is None:
            return None
        return schemas.definitions().get(res.definition)

    def patch_meta(self, res: Resource) -> Any:
        if res.definition is None:
            return None
        return schemas.PatchMeta.for_definition(res.definition)

    def scale_patch_meta(self) -> Any:
        return schemas.PatchMeta.for_definition("io.k8s.api.autoscaling.v1.Scale")

    def check(self, res: Resource, obj: Obj, body: bytes | None, mode: str) -> list[str]:
        """Prune unknown fields from obj; return warnings, or raise 400 under Strict."""
        if mode not in MODES:
            raise st.bad_request(f'fieldValidation must be one of "Strict", "Warn", "Ignore"; got "{mode}"')
        schema = self.schema_for(res)
        problems: list[str] = []
        if body is not None and mode != "Ignore":
            problems += [f'duplicate field "{name}"' for name in duplicate_fields(body, obj)]
        if res.compiled is not None:  # custom resources: prune to the structural schema, then default
            unknown_custom = res.compiled.prune(obj)
            res.compiled.apply_defaults(obj)
            if mode != "Ignore":
                problems += [f'unknown field "{path}"' for path in unknown_custom]
        elif schema is not None:
            unknown: list[str] = []
            type_errors: list[str] = []
            _walk(obj, schema, "", unknown, type_errors, top=True)
            if type_errors:
                raise st.bad_request(f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: '
                                     + "; ".join(type_errors))
            if mode != "Ignore":
                problems += [f'unknown field "{path}"' for path in unknown]
        if not problems:
            return []
        if mode == "Strict":
            raise st.bad_request("strict decoding error: " + ", ".join(problems))
        return [] if mode == "Ignore" else problems


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    while ref:
        schema = schemas.definitions().get(ref.rsplit("/", 1)[-1], {})
        ref = schema.get("$ref")
    return schema


def _walk(value: Any, schema: dict[str, Any], path: str, unknown: list[str], errors: list[str],
          *, top: bool = False) -> None:
    schema = _resolve(schema)
    if value is None or not schema or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    expected = schema.get("type")
    if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errors.append(f"{path or '.'}: expected an integer or a string, got {_go_value_kind(value)}")
        return
    if isinstance(expected, str) and expected in _JSON_TYPES:
        ok = isinstance(value, _JSON_TYPES[expected]) and not (isinstance(value, bool) and expected != "boolean")
        if not ok:
            errors.append(f"json: cannot unmarshal {_go_value_kind(value)} into Go struct field "
                          f"{path or '.'} of type {_go_type(expected)}")
            return
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else key
            if props is not None and key in props:
                _walk(child, props[key], child_path, unknown, errors)
            elif isinstance(extra, dict):
                _walk(child, extra, child_path, unknown, errors)
            elif props is not None and not (top and key in ("apiVersion", "kind")):
                unknown.append(child_path)
        if props is not None and not isinstance(extra, dict):
            for key in [k for k in value if k not in props and not (top and k in ("apiVersion", "kind"))]:
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{index}]", unknown, errors)


def _go_value_kind(value: Any) -> str:
    """How Go's encoding/json names a value it cannot unmarshal: bool, number, string, array, object, null."""
    kind = json_type(value)
    return _GO_VALUE_KINDS.get(kind, kind)


def _go_type(schema_type: str) -> str:
    return {"integer": "int", "number": "float64", "boolean": "bool", "object": "map", "array": "slice"}.get(
        schema_type, schema_type)
