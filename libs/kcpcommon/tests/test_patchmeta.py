from kcpcommon import patchmeta

SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "strategy": {"type": "object", "x-kubernetes-patch-strategy": "retainKeys"},
    "containers": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
                   "items": {"type": "object", "properties": {"ports": {
                       "type": "array", "x-kubernetes-patch-strategy": "merge",
                       "x-kubernetes-patch-merge-key": "containerPort", "items": {"type": "object"}}}}},
    "selectors": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-patch-strategy": "merge"}},
}}}}


def test_split_takes_the_patch_extensions_out_by_path_and_annotated_puts_them_back() -> None:
    stripped, meta = patchmeta.split(SCHEMA)
    assert "x-kubernetes-patch" not in patchmeta.encode(stripped)
    assert meta == {
        "spec.strategy": {"x-kubernetes-patch-strategy": "retainKeys"},
        "spec.containers": {"x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
        "spec.containers[*].ports": {"x-kubernetes-patch-strategy": "merge",
                                     "x-kubernetes-patch-merge-key": "containerPort"},
        "spec.selectors{*}": {"x-kubernetes-patch-strategy": "merge"},
    }
    assert patchmeta.annotated(stripped, patchmeta.decode(patchmeta.encode(meta))) == SCHEMA


def test_an_unreadable_annotation_carries_nothing() -> None:
    assert patchmeta.decode(None) == {} and patchmeta.decode("{nope") == {} and patchmeta.decode("[1]") == {}
    assert patchmeta.decode('{"spec.x": {"x-kubernetes-patch-strategy": "merge", "other": "y"}}') == {
        "spec.x": {"x-kubernetes-patch-strategy": "merge"}}
