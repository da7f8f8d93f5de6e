"""A custom resource's list items are defaulted and encoded once per stored revision, not on every list."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson

from kcp_apiserver.registry.listing import PresentedItems
from kcp_apiserver.storage.cachestate import Cached


class Defaults:
    """A schema with one default (spec.size: 1), counting its walks."""

    has_defaults = True

    def __init__(self) -> None:
        self.walks = 0

    def default(self, obj: dict[str, Any]) -> None:
        self.walks += 1
        obj.setdefault("spec", {}).setdefault("size", 1)


def resource(schema: Defaults, digest: str = "d1") -> Any:
    return SimpleNamespace(api_version="example.com/v1", schema_digest=digest, from_storage=None, is_custom=True,
                           type_schema=schema)


def stored(name: str, revision: int) -> Cached:
    return Cached(orjson.dumps({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
                                "spec": {}}), revision)


def test_an_item_is_defaulted_once_per_revision_and_shown_with_its_resource_version() -> None:
    schema, items = Defaults(), PresentedItems()
    res, item = resource(schema), stored("a", 7)
    first = orjson.loads(items.json(res, item))
    assert first["spec"] == {"size": 1} and first["metadata"]["resourceVersion"] == "7"
    assert items.json(res, item) == items.json(res, stored("a", 7))  # the same bytes, however many lists
    assert schema.walks == 1
    items.json(res, stored("a", 8))  # a new revision is presented anew
    items.json(resource(schema, "d2"), item)  # so is another schema
    assert schema.walks == 3


def test_what_is_kept_stays_within_its_bound() -> None:
    schema = Defaults()
    items = PresentedItems(max_bytes=2000)
    for revision in range(100):
        items.json(resource(schema), stored(f"w-{revision}", revision))
    assert 0 < items.size <= 2000
    items.json(resource(schema), stored("w-99", 99))  # the newest is still kept
    assert schema.walks == 100
