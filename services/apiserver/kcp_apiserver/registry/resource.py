"""Resource descriptors: the one table that drives the generic registry.

Built-in types and (later) custom resources are all served by the same code;
what differs between them is described here, never in a handler per type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.registry import builtinschemas
from kcp_apiserver.registry.actions import Action
from kcp_apiserver.registry.typeschema import TypeSchema
from kcp_apiserver.storage.keys import resource_prefix

Obj = dict[str, Any]
FieldGetter = Callable[[Obj], Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Column:
    """A Table column: kube's printer column plus how to compute the cell."""

    name: str
    type: str
    cell: Callable[[Obj], Any]
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class Subresource:
    """A subresource beyond status and scale, answered with another kind (serviceaccounts/token: a
    TokenRequest); listed in discovery, served by the handler the server's configuration supplies."""

    name: str
    group: str
    version: str
    kind: str
    verbs: tuple[str, ...]


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    status_on_create: bool = False  # a create keeps the status it carries (kube's Nodes), others start without
    definition: str | None = None  # OpenAPI definition name of the kind
    release: str = builtinschemas.DEFAULT_RELEASE  # the Kubernetes release whose schema `definition` names
    storage_group: str | None = None  # where it is stored when not under its own group
    tracks_generation: bool = False
    name_is_dns_label: bool = False
    name_is_path_segment: bool = False
    strategy: Any = None  # registry.strategy.Strategy (None: the generic store's defaults)
    columns: tuple[Column, ...] = ()
    field_selectors: tuple[str, ...] = ()  # selectable fields read at their own path
    # selectable fields whose value is computed, as kube's ToSelectableFields does (an Event's `source`)
    field_getters: tuple[tuple[str, FieldGetter], ...] = field(default=(), compare=False, hash=False)
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = ()
    # custom resources only
    schema: Obj | None = field(default=None, compare=False, hash=False)  # openAPIV3Schema
    # a kube built-in that physical clusters serve, imported as a CRD (kcpcommon.kubetypes): it takes strategic
    # merge patch and protobuf bodies as kube serves it, where other custom resources answer 415
    kube_type: bool = False
    schema_digest: str = ""  # tells two CRDs' schemas apart where the schema itself is not compared
    # the one schema interface (prune, default, validate, list and map types); filled from `definition`
    # for built-in types, by the CRD code for custom resources; one per distinct schema, shared
    type_schema: TypeSchema | None = field(default=None, compare=False, hash=False)
    storage_version: str = ""  # objects are stored in this version (conversion None rewrites apiVersion)
    deprecation_warning: str | None = None
    scale: Any = None  # customresources.ScaleSpec
    list_kind_name: str = ""
    # a type stored in another type's shape (events.k8s.io Events are stored as core Events)
    to_storage: Callable[[Obj], Obj] | None = field(default=None, compare=False, hash=False)
    from_storage: Callable[[Obj], Obj] | None = field(default=None, compare=False, hash=False)
    # subresources with handlers of their own (a pod's binding, eviction, log), beside status and scale
    actions: tuple[Action, ...] = field(default=(), compare=False, hash=False)
    # a type bound from an APIExport: its objects are stored apart per export identity (kcp's
    # `<resource>:<identityHash>`), so two providers' widgets.example.io never share keys
    identity: str = ""

    def __post_init__(self) -> None:
        if self.type_schema is None and self.definition is not None:
            object.__setattr__(self, "type_schema", builtinschemas.type_schema(self.definition, self.release))

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_api_version(self) -> str:
        if self.storage_version:
            return f"{self.group}/{self.storage_version}"
        return self.api_version

    @property
    def is_custom(self) -> bool:
        return self.schema is not None

    @property
    def converts(self) -> bool:
        """Stored objects differ from what this resource serves (another version or another type)."""
        return self.is_custom or self.from_storage is not None

    @property
    def list_kind(self) -> str:
        return self.list_kind_name or f"{self.kind}List"

    @property
    def prefix(self) -> str:
        plural = f"{self.plural}:{self.identity}" if self.identity else self.plural
        return resource_prefix(self.storage_group if self.storage_group is not None else self.group, plural)

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def action(self, subresource: str) -> Action | None:
        return next((a for a in self.actions if a.name == subresource), None)

    @property
    def selectable_fields(self) -> dict[str, FieldGetter | None]:
        """The field selector labels this type accepts, each with how its value is read (None: its path)."""
        labels: dict[str, FieldGetter | None] = {"metadata.name": None}
        if self.namespaced:
            labels["metadata.namespace"] = None
        labels.update(dict.fromkeys(self.field_selectors))
        labels.update(self.field_getters)
        return labels
