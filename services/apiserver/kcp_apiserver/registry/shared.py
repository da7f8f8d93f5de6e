"""Objects held once and shown in every logical cluster (kube's default ClusterRoles), read-through.

A logical cluster sees a shared object under its name until it stores its own: a get or list that
finds nothing stored there serves the shared one; an update or patch of it writes that cluster's
own copy (etcd's compare on revision 0 holds for an absent key), which shadows the shared object
in that cluster only from then on; deleting the copy brings the shared object back. Creating one
under a shared name is AlreadyExists, and the shared object itself cannot be deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

Obj = dict[str, Any]
REVISION = 0  # a shared object's stored revision: none, so a write must find the key absent


class SharedObjects(Protocol):
    def get(self, cluster: str, name: str) -> Obj | None:
        """A fresh copy of the shared object `name` as `cluster` sees it, or None."""

    def names(self) -> Iterable[str]: ...
