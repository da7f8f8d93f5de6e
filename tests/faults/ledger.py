"""What the writers were told (acknowledged writes) and what the watchers saw, and the rules that join them.

A write counts only once the server answered 2xx: then its resourceVersion and content are in the ledger.
A watcher's history of one object is the resourceVersions it learned, each from a watch event or from a
(re)list. The rules, as the reliability issue states them:
- nothing acknowledged is missing: every acked object is in the API with its last acked content and version;
- per watcher and object, resourceVersions strictly increase (no duplicate, no reordering) and end at the
  object's last acked version;
- every acked change was seen exactly once, with its content, unless a relist after 410 jumped over it
  (then the relist's state stands for it: the first observation past it came from a list).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

Key = tuple[str, str, str]  # logical cluster, namespace, name

LIST = "list"  # an observation that came from a (re)list, not from a watch event


@dataclass(frozen=True)
class Ack:
    """One write the server acknowledged (2xx): the version it answered and the sequence number written."""

    resource_version: int
    seq: int


@dataclass(frozen=True)
class Observation:
    """One version of one object as a watcher learned it; `source` is the event type or LIST."""

    resource_version: int
    seq: int
    source: str


@dataclass
class Ledger:
    """Every acknowledged write, per object, in the order the server acknowledged them."""

    acks: dict[Key, list[Ack]] = field(default_factory=dict)
    contents: dict[Key, dict[str, str]] = field(default_factory=dict)  # each object's last acked data
    failures: int = 0  # attempts that got a 5xx, 429 or no answer, and were retried

    def ack(self, key: Key, resource_version: int, seq: int, data: dict[str, str]) -> None:
        self.acks.setdefault(key, []).append(Ack(resource_version, seq))
        self.contents[key] = dict(data)

    @property
    def acked(self) -> int:
        return sum(len(a) for a in self.acks.values())

    def reused_revisions(self) -> list[str]:
        """Writes acknowledged at one resourceVersion: each etcd transaction has a revision of its own, so a second
        means etcd came back from a crash without the first (etcd 3.5.0-3.5.2: etcd-io/etcd#13766)."""
        by_revision: dict[int, list[tuple[Key, int]]] = {}
        for key, acks in self.acks.items():
            for ack in acks:
                by_revision.setdefault(ack.resource_version, []).append((key, ack.seq))
        return [f"revision {rv} acknowledged for {len(writes)} writes, {sorted(writes)}: etcd lost a committed one"
                for rv, writes in sorted(by_revision.items()) if len(writes) > 1]

    def final_versions(self, cluster: str | None = None) -> dict[Key, int]:
        """The last acked resourceVersion of every object (of one logical cluster, or all)."""
        return {k: a[-1].resource_version for k, a in self.acks.items() if cluster is None or k[0] == cluster}


def seq_of(obj: dict[str, Any]) -> int:
    return int((obj.get("data") or {}).get("seq", "-1"))


def check_watcher(name: str, seen: dict[Key, list[Observation]], acks: dict[Key, list[Ack]]) -> list[str]:
    """Every way in which one watcher's histories break the rules; empty when they keep them."""
    problems: list[str] = []
    for key in sorted(set(seen) - set(acks)):
        problems.append(f"{name}: saw {key}, which no writer had acknowledged")
    for key, acked in sorted(acks.items()):
        history = seen.get(key, [])
        if not history:
            problems.append(f"{name}: never saw {key}")
            continue
        for before, after in pairwise(history):
            if after.resource_version == before.resource_version:
                problems.append(f"{name}: {key} at {after.resource_version} twice ({before.source}, {after.source})")
            elif after.resource_version < before.resource_version:
                problems.append(f"{name}: {key} went back from {before.resource_version} to "
                                f"{after.resource_version} ({after.source})")
            if after.seq < before.seq:
                problems.append(f"{name}: {key} content went back from seq {before.seq} to {after.seq}")
        last = acked[-1].resource_version
        if history[-1].resource_version != last:
            problems.append(f"{name}: {key} ends at {history[-1].resource_version}, the last acked write is {last}")
        by_version = {o.resource_version: o for o in history}
        for ack in acked:
            observed = by_version.get(ack.resource_version)
            if observed is not None:
                if observed.seq != ack.seq:
                    problems.append(f"{name}: {key} at {ack.resource_version} had seq {observed.seq}, "
                                    f"acked {ack.seq}")
                continue
            past = next((o for o in history if o.resource_version > ack.resource_version), None)
            if past is None or past.source != LIST:
                problems.append(f"{name}: {key} missed the acked change to seq {ack.seq} at {ack.resource_version}")
    return problems
