"""The pod-template hash that names a Deployment's ReplicaSets (`<deployment>-<hash>`, label
`pod-template-hash`), shared by the simulator's deployment controller and the splitter's revisions.

kube hashes the pod template (FNV-32a over a canonical dump, plus the collisionCount) and spells the
number in its safe alphabet, which has no vowels (so no words) and no look-alike characters. Any
stable hash with that alphabet behaves the same for clients: same template, same name.
"""

from __future__ import annotations

from typing import Any

import orjson

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
HASH_LABEL = "pod-template-hash"
FNV_OFFSET = 0x811C9DC5
FNV_PRIME = 0x01000193


def fnv32a(data: bytes) -> int:
    value = FNV_OFFSET
    for byte in data:
        value ^= byte
        value = (value * FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """kube's rand.SafeEncodeString: every character mapped into the safe alphabet."""
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in text)


def _prune(value: Any) -> Any:
    """Drop null, empty objects, empty lists and empty strings, as decoding into kube's Go types does
    (`resources: {}` and `creationTimestamp: null` are the same template as neither)."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v is not None and v != {} and v != [] and v != ""}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _canonical(template: dict[str, Any]) -> bytes:
    """The template as sorted JSON, without its own hash label and without empty values."""
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.pop(HASH_LABEL, None)
    meta = {**(template.get("metadata") or {}), "labels": labels}
    return orjson.dumps(_prune({**template, "metadata": meta}), option=orjson.OPT_SORT_KEYS)


def pod_template_hash(template: dict[str, Any], collision_count: int | None = None) -> str:
    """The stable hash of a pod template, without its own hash label."""
    data = _canonical(template)
    if collision_count:
        data += str(collision_count).encode()
    return safe_encode(str(fnv32a(data)))


def templates_equal_ignoring_hash(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """kube's EqualIgnoreHash: is this ReplicaSet's template the Deployment's?"""
    return _canonical(a) == _canonical(b)
