"""Decoding against the type's schema: kube's fieldValidation and type checks.

kube-apiserver decodes built-in types into Go structs, so unknown fields are
always dropped; `fieldValidation` only decides whether that is an error
(Strict), a warning (Warn, the default) or silent (Ignore). Values of the
wrong JSON type are 400 BadRequest, as a failed decode is in kube. Custom
resources are pruned to their structural schema and defaulted. Both go
through the type's one `TypeSchema`.
"""

from __future__ import annotations

from kcp_apiserver.apimachinery import status as st
from kcp_apiserver.endpoints.wire import duplicate_fields
from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.builtintypeschema import QUANTITY_REFUSED
from kcp_apiserver.registry.resource import Obj, Resource
from kcp_apiserver.registry.typeschema import SchemaNode

MODES = {"", "Strict", "Warn", "Ignore"}
SCALE = "io.k8s.api.autoscaling.v1.Scale"


class UndecodableObject(st.APIError):
    """An object whose values have the wrong JSON types for its kind; `problems` worded as Go's decoder words
    them (a PATCH rewords them as kube's patcher does)."""

    problems: list[str]


def undecodable(res: Resource, problems: list[str]) -> UndecodableObject:
    error = UndecodableObject(400, "BadRequest", f'{res.kind} in version "{res.version}" cannot be handled as a '
                                                 f'{res.kind}: ' + "; ".join(problems))
    error.problems = problems
    return error


def decode_as_kube(res: Resource, obj: Obj) -> list[str]:
    """kube's own type imported as a CRD decodes as kube decodes it: a Quantity written as a JSON number is its
    canonical text, a null list item its zero value. Returned: what kube's decoder alone refuses there (a
    Quantity it cannot parse, which the CRD schema's int-or-string lets through); the CRD schema judges the
    other types, as before."""
    definition = builtinschemas.definition_for(res.group, res.version, res.kind)
    if definition is None:
        return []
    errors = builtinschemas.type_schema(definition).decode_errors(obj)
    return [QUANTITY_REFUSED] if QUANTITY_REFUSED in errors else []


class FieldValidator:
    """Checks, prunes and defaults request objects against their type's schema."""

    def patch_meta(self, res: Resource) -> SchemaNode | None:
        """The schema strategic merge patch walks; None for custom resources, which kube answers with 415
        (kube's own types imported as CRDs are not custom resources to their users: they merge as in kube)."""
        return None if res.is_custom and not res.kube_type else res.type_schema

    def scale_patch_meta(self) -> SchemaNode | None:
        return builtinschemas.type_schema(SCALE)

    def check(self, res: Resource, obj: Obj, body: bytes | None, mode: str, *, default: bool = True) -> list[str]:
        """Prune unknown fields from obj and default it; return warnings, or raise 400 under Strict.

        An applied configuration is not defaulted (`default=False`): its applier owns only what it sent."""
        if mode not in MODES:
            raise st.bad_request(f'fieldValidation must be one of "Strict", "Warn", "Ignore"; got "{mode}"')
        problems: list[str] = []
        if body is not None and mode != "Ignore":
            problems += [f'duplicate field "{name}"' for name in duplicate_fields(body, obj)]
        if res.is_custom and res.kube_type:
            refused = decode_as_kube(res, obj)
            if refused:
                raise undecodable(res, refused)
        schema = res.type_schema
        if schema is not None:
            type_errors = schema.decode_errors(obj)
            if type_errors:
                raise undecodable(res, type_errors)
            unknown = schema.prune(obj)
            if default:
                schema.default(obj)
            if mode != "Ignore":
                problems += [f'unknown field "{path}"' for path in unknown]
        if not problems:
            return []
        if mode == "Strict":
            raise st.bad_request("strict decoding error: " + ", ".join(problems))
        return [] if mode == "Ignore" else problems
