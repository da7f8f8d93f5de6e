"""WorkspaceTypes resolved as kcp resolves them (tenancy/workspacetypes.py): lookup towards root, the
built-in universal type, extension (initializers, limits, cycles) and default APIBindings."""

from __future__ import annotations

from typing import Any

import pytest

from kcp_apiserver.tenancy.types import APIBINDINGS_INITIALIZER
from kcp_apiserver.tenancy.workspacetypes import (
    ROOT_TYPE,
    UNIVERSAL_TYPE,
    TypeRef,
    UnresolvableType,
    ancestors,
    limits_refusal,
    resolve,
    spec_type,
)


def wtype(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "spec": spec}


def lookup(types: dict[tuple[str, str], dict[str, Any]]) -> Any:
    async def get(cluster: str, name: str) -> dict[str, Any] | None:
        return types.get((cluster, name))
    return get


def test_a_path_s_ancestors_end_in_root() -> None:
    assert ancestors("root:a:b") == ["root:a:b", "root:a", "root"]
    assert ancestors("root") == ["root"]
    assert ancestors("flat-1") == ["flat-1", "root"]


async def test_a_name_is_looked_up_from_the_parent_towards_root_and_universal_is_built_in() -> None:
    get = lookup({("root:org", "team"): wtype(initializer=True), ("root", "team"): wtype()})
    assert (await resolve(get, "root:org:dev", "team")).ref == TypeRef("root:org", "team")
    assert (await resolve(get, "root:other", "team")).ref == TypeRef("root", "team")
    assert (await resolve(get, "root:org", "team", "root")).ref == TypeRef("root", "team")
    universal = await resolve(get, "flat-1", "universal")
    assert universal.ref == UNIVERSAL_TYPE and universal.initializers() == []
    with pytest.raises(UnresolvableType, match='workspace type "missing" cannot be resolved'):
        await resolve(get, "root:org", "missing")
    with pytest.raises(UnresolvableType, match='"root:other:team" cannot be resolved'):
        await resolve(get, "root:org", "team", "root:other")


async def test_a_type_has_the_initializers_of_the_types_it_extends_and_one_for_its_default_bindings() -> None:
    get = lookup({
        ("root", "base"): wtype(initializer=True, defaultAPIBindings=[{"export": "widgets"}]),
        ("root:org", "team"): wtype(initializer=True, extend={"with": [{"name": "base", "path": "root"}]},
                                    defaultAPIBindings=[{"path": "root:prov", "export": "gadgets"}]),
    })
    team = await resolve(get, "root:org", "team")
    assert team.refs() == [TypeRef("root", "base"), TypeRef("root:org", "team")]
    assert team.initializers() == ["root:base", "root:org:team", APIBINDINGS_INITIALIZER]
    assert team.default_api_bindings() == [("root", "widgets"), ("root:prov", "gadgets")]


async def test_an_extension_cycle_or_a_missing_base_makes_a_type_unusable() -> None:
    cyclic = lookup({("root", "a"): wtype(extend={"with": [{"name": "b"}]}),
                     ("root", "b"): wtype(extend={"with": [{"name": "a"}]})})
    with pytest.raises(UnresolvableType, match="extends itself: root:a -> root:b -> root:a"):
        await resolve(cyclic, "root", "a")
    missing = lookup({("root", "a"): wtype(extend={"with": [{"name": "gone"}]})})
    with pytest.raises(UnresolvableType, match="extends root:gone, which cannot be resolved"):
        await resolve(missing, "root", "a")


async def test_parents_and_children_limit_each_other_through_every_alias() -> None:
    get = lookup({
        ("root", "org"): wtype(limitAllowedChildren={"types": [{"name": "team", "path": "root"}]},
                               defaultChildWorkspaceType={"name": "team"}),
        ("root", "team"): wtype(limitAllowedParents={"types": [{"name": "org", "path": "root"}]}),
        ("root", "sub-team"): wtype(extend={"with": [{"name": "team"}]}),
        ("root", "leaf"): wtype(limitAllowedChildren={"none": True}),
    })
    org, team = await resolve(get, "root", "org"), await resolve(get, "root", "team")
    root = await resolve(get, "root", ROOT_TYPE.name, ROOT_TYPE.path)
    assert limits_refusal(org, team) is None
    assert limits_refusal(org, await resolve(get, "root", "sub-team")) is None  # a sub-team is a team
    assert limits_refusal(root, team) == "workspace type root:team is not allowed in a workspace of type root:root"
    assert limits_refusal(org, await resolve(get, "root", "universal")) == (
        "workspace type root:org does not allow a child workspace of type root:universal")
    assert limits_refusal(await resolve(get, "root", "leaf"), await resolve(get, "root", "universal")) == (
        "workspace type root:leaf does not allow any child workspace")
    assert org.default_child() == TypeRef("root", "team")
    assert root.default_child() == UNIVERSAL_TYPE


def test_a_workspace_s_spec_type_is_read_with_or_without_a_path() -> None:
    assert spec_type({"spec": {"type": {"name": "team", "path": "root:org"}}}) == TypeRef("root:org", "team")
    assert spec_type({"spec": {"type": {"name": "team"}}}) == TypeRef("", "team")
    assert spec_type({"spec": {"type": {}}}) is None and spec_type({}) is None and spec_type(None) is None
