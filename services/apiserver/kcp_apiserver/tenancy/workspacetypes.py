"""WorkspaceTypes resolved as kcp resolves them: pure rules over an async lookup of a type by logical cluster
and name, shared by admission (which resolves a new Workspace's type and checks it may be used there) and the
workspace controller (which gives the child the initializers of its type).

- A reference with a path names the type in that logical cluster; without one the type is looked up in the
  parent, then in each ancestor of its path, then in `root`.
- A Workspace without a type gets its parent's type's `defaultChildWorkspaceType`; a parent that is no typed
  workspace (root, a flat logical cluster) is of type `root:root`, whose default child type is
  `root:universal`. `root:universal` is built in (no object needed), has no initializer and no limits.
- A type is also each type it extends (`extend.with`, transitively): their initializers are added, and
  `limitAllowedParents`/`limitAllowedChildren` judge all of them. A cycle or a missing type makes the type
  unusable.
- A type with `initializer: true` gives its workspaces the initializer `<path>:<name>`; one with
  `defaultAPIBindings` gives them `system:apibindings`, which the server itself lifts once it has bound
  them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kcp_apiserver.registry.resource import Obj
from kcp_apiserver.tenancy.types import APIBINDINGS_INITIALIZER

ROOT = "root"
UNIVERSAL = "universal"

Lookup = Callable[[str, str], Awaitable[Obj | None]]  # (logical cluster, name) -> the WorkspaceType, if any
ParentType = Callable[[str], Awaitable["TypeRef"]]  # logical cluster -> the type it was made with


class UnresolvableType(Exception):
    """A type that cannot be used: missing, circular, or one of the types it extends missing."""


@dataclass(frozen=True)
class TypeRef:
    path: str
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.name}"

    @classmethod
    def parse(cls, qualified: str) -> TypeRef:
        """`root:org:team` is type `team` of `root:org`."""
        path, _, name = qualified.rpartition(":")
        return cls(path, name)

    def as_spec(self) -> dict[str, str]:
        return {"name": self.name, "path": self.path}


def spec_type(ws: Obj | None) -> TypeRef | None:
    """A Workspace's `spec.type` (its path may be empty: resolved from the parent), None when it names none."""
    spec = (ws or {}).get("spec")
    ref = spec.get("type") if isinstance(spec, dict) else None
    if not isinstance(ref, dict) or not ref.get("name"):
        return None
    return TypeRef(str(ref.get("path") or ""), str(ref["name"]))


ROOT_TYPE = TypeRef(ROOT, ROOT)
UNIVERSAL_TYPE = TypeRef(ROOT, UNIVERSAL)
BUILTIN: dict[TypeRef, Obj] = {
    UNIVERSAL_TYPE: {"spec": {"defaultChildWorkspaceType": UNIVERSAL_TYPE.as_spec()}},
    ROOT_TYPE: {"spec": {"defaultChildWorkspaceType": UNIVERSAL_TYPE.as_spec()}},
}


@dataclass(frozen=True)
class ResolvedType:
    """A type and every type it is, extended ones first (`aliases` ends with the type itself)."""

    ref: TypeRef
    obj: Obj
    aliases: tuple[tuple[TypeRef, Obj], ...] = field(default=())

    def refs(self) -> list[TypeRef]:
        return [ref for ref, _ in self.aliases]

    def initializers(self) -> list[str]:
        names: list[str] = []
        for ref, obj in self.aliases:
            if _spec(obj).get("initializer"):
                names.append(str(ref))
        if self.default_api_bindings():
            names.append(APIBINDINGS_INITIALIZER)
        return list(dict.fromkeys(names))

    def default_api_bindings(self) -> list[tuple[str, str]]:
        """(provider path, export) of every alias; an empty path is the type's own logical cluster."""
        wanted: list[tuple[str, str]] = []
        for ref, obj in self.aliases:
            for item in _spec(obj).get("defaultAPIBindings") or []:
                if isinstance(item, dict) and item.get("export"):
                    wanted.append((str(item.get("path") or ref.path), str(item["export"])))
        return list(dict.fromkeys(wanted))

    def labels(self) -> dict[str, str]:
        labels = _spec(self.obj).get("additionalWorkspaceLabels") or {}
        return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}

    def default_child(self) -> TypeRef | None:
        child = _spec(self.obj).get("defaultChildWorkspaceType")
        if not isinstance(child, dict) or not child.get("name"):
            return None
        return TypeRef(str(child.get("path") or self.ref.path), str(child["name"]))


def _spec(obj: Obj) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def ancestors(cluster: str) -> list[str]:
    """`root:a:b` -> [`root:a:b`, `root:a`, `root`]; a flat name is followed by `root`."""
    found, path = [], cluster
    while path:
        found.append(path)
        path = path.rpartition(":")[0]
    return found if found[-1] == ROOT else [*found, ROOT]


async def find(get: Lookup, ref: TypeRef) -> Obj | None:
    found = await get(ref.path, ref.name)
    return found if found is not None else BUILTIN.get(ref)


async def resolve(get: Lookup, here: str, name: str, path: str = "") -> ResolvedType:
    """The type `name` (at `path`, or looked up from `here` towards root) with every type it extends."""
    for cluster in ([path] if path else ancestors(here)):
        ref = TypeRef(cluster, name)
        obj = await find(get, ref)
        if obj is not None:
            return ResolvedType(ref, obj, tuple(await _aliases(get, ref, obj, ())))
    shown = f"{path}:{name}" if path else name
    raise UnresolvableType(f'workspace type "{shown}" cannot be resolved')


async def _aliases(get: Lookup, ref: TypeRef, obj: Obj, chain: tuple[TypeRef, ...]) -> list[tuple[TypeRef, Obj]]:
    if ref in chain:
        raise UnresolvableType(f"workspace type {chain[0]} extends itself: "
                               + " -> ".join(str(r) for r in (*chain, ref)))
    found: list[tuple[TypeRef, Obj]] = []
    for base in (_spec(obj).get("extend") or {}).get("with") or []:
        if not isinstance(base, dict) or not base.get("name"):
            continue
        base_ref = TypeRef(str(base.get("path") or ref.path), str(base["name"]))
        base_obj = await find(get, base_ref)
        if base_obj is None:
            raise UnresolvableType(f"workspace type {ref} extends {base_ref}, which cannot be resolved")
        found += [a for a in await _aliases(get, base_ref, base_obj, (*chain, ref)) if a not in found]
    return [*found, (ref, obj)]


def _selects(selector: Any, refs: Iterable[TypeRef]) -> bool:
    types = [TypeRef(str(t.get("path") or ""), str(t.get("name") or "")) for t in selector.get("types") or []
             if isinstance(t, dict)]
    return not types or any(ref in types for ref in refs)


def limits_refusal(parent: ResolvedType, child: ResolvedType) -> str | None:
    """Why `child` may not be made under `parent`, by both sides' limits (None: it may)."""
    for ref, obj in child.aliases:
        selector = _spec(obj).get("limitAllowedParents")
        if isinstance(selector, dict):
            if selector.get("none"):
                return f"workspace type {ref} does not allow any parent"
            if not _selects(selector, parent.refs()):
                return f"workspace type {child.ref} is not allowed in a workspace of type {parent.ref}"
    for ref, obj in parent.aliases:
        selector = _spec(obj).get("limitAllowedChildren")
        if isinstance(selector, dict):
            if selector.get("none"):
                return f"workspace type {ref} does not allow any child workspace"
            if not _selects(selector, child.refs()):
                return f"workspace type {parent.ref} does not allow a child workspace of type {child.ref}"
    return None
