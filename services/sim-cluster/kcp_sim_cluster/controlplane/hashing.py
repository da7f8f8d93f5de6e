"""Names the controllers give: the pod-template hash of a Deployment's ReplicaSets (kcpcommon's, shared
with the splitter's revisions), and the random suffix of a ReplicaSet's pods."""

from __future__ import annotations

import secrets

from kcpcommon.podtemplatehash import (
    HASH_LABEL,
    SAFE_ALPHABET,
    fnv32a,
    pod_template_hash,
    safe_encode,
    templates_equal_ignoring_hash,
)

__all__ = ["HASH_LABEL", "SAFE_ALPHABET", "fnv32a", "pod_template_hash", "random_suffix", "safe_encode",
           "templates_equal_ignoring_hash"]


def random_suffix(length: int = 5) -> str:
    """A pod name's random tail, as kube's generateName appends."""
    return "".join(secrets.choice(SAFE_ALPHABET) for _ in range(length))
