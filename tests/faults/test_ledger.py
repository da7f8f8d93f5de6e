"""The fault suite's judge: it must catch a lost, duplicated, reordered or wrong change, and accept a relist."""

from __future__ import annotations

from ledger import LIST, Ack, Key, Ledger, Observation, check_watcher
from recorder import Recorder

KEY: Key = ("fault-a", "default", "w0-0")


def cm(rv: int, seq: int, cluster: str | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": "w0-0", "namespace": "default", "resourceVersion": str(rv)}
    if cluster:
        meta["annotations"] = {"kcp.io/cluster": cluster}
    return {"metadata": meta, "data": {"seq": str(seq)}}


ACKS = {KEY: [Ack(10, 0), Ack(12, 1), Ack(15, 2)]}


def watched(*observations: tuple[int, int, str]) -> dict[Key, list[Observation]]:
    return {KEY: [Observation(*o) for o in observations]}


def test_every_acked_change_seen_once_in_order_passes() -> None:
    seen = watched((10, 0, LIST), (12, 1, "MODIFIED"), (15, 2, "MODIFIED"))
    assert check_watcher("w", seen, ACKS) == []


def test_an_unacknowledged_change_in_between_is_allowed() -> None:
    # a write whose answer was lost, retried with the same content: both versions exist
    seen = watched((10, 0, "ADDED"), (11, 1, "MODIFIED"), (12, 1, "MODIFIED"), (15, 2, "MODIFIED"))
    assert check_watcher("w", seen, ACKS) == []


def test_a_relist_may_jump_over_acked_changes() -> None:
    seen = watched((10, 0, "ADDED"), (15, 2, LIST))
    assert check_watcher("w", seen, ACKS) == []


def test_a_missed_event_is_caught() -> None:
    seen = watched((10, 0, "ADDED"), (15, 2, "MODIFIED"))
    assert check_watcher("w", seen, ACKS) == ["w: ('fault-a', 'default', 'w0-0') missed the acked change "
                                              "to seq 1 at 12"]


def test_two_writes_acknowledged_at_one_revision_are_caught() -> None:
    ledger = Ledger()
    ledger.ack(KEY, 10, 0, {"seq": "0"})
    ledger.ack(("fault-b", "default", "w1-0"), 11, 0, {"seq": "0"})
    assert ledger.reused_revisions() == []
    ledger.ack(("fault-b", "default", "w1-0"), 10, 1, {"seq": "1"})  # etcd came back without the first write at 10
    assert ledger.reused_revisions() == [
        "revision 10 acknowledged for 2 writes, [(('fault-a', 'default', 'w0-0'), 0), (('fault-b', 'default', "
        "'w1-0'), 1)]: etcd lost a committed one"]


def test_a_duplicate_is_caught() -> None:
    seen = watched((10, 0, "ADDED"), (12, 1, "MODIFIED"), (12, 1, "MODIFIED"), (15, 2, "MODIFIED"))
    assert check_watcher("w", seen, ACKS) == ["w: ('fault-a', 'default', 'w0-0') at 12 twice (MODIFIED, MODIFIED)"]


def test_reordering_is_caught() -> None:
    seen = watched((10, 0, "ADDED"), (15, 2, "MODIFIED"), (12, 1, "MODIFIED"))
    problems = check_watcher("w", seen, ACKS)
    assert any("went back from 15 to 12" in p for p in problems)
    assert any("content went back from seq 2 to 1" in p for p in problems)
    assert any("ends at 12, the last acked write is 15" in p for p in problems)


def test_wrong_content_and_unknown_or_missing_objects_are_caught() -> None:
    other: Key = ("fault-b", "default", "w1-0")
    seen = {**watched((10, 0, "ADDED"), (12, 2, "MODIFIED"), (15, 2, "MODIFIED")),
            other: [Observation(3, 0, "ADDED")]}
    problems = check_watcher("w", seen, {**ACKS, ("fault-c", "default", "w2-0"): [Ack(4, 0)]})
    assert problems == [
        "w: saw ('fault-b', 'default', 'w1-0'), which no writer had acknowledged",
        "w: ('fault-a', 'default', 'w0-0') at 12 had seq 2, acked 1",
        "w: never saw ('fault-c', 'default', 'w2-0')",
    ]


def test_recorder_keeps_relists_that_restate_a_version_out_of_the_history() -> None:
    rec = Recorder("wildcard", "*")
    rec.replace([cm(10, 0, "fault-a")], "10")
    rec.apply("MODIFIED", cm(12, 1, "fault-a"))
    rec.replace([cm(12, 1, "fault-a")], "14")  # nothing new for this object
    rec.replace([cm(15, 2, "fault-a")], "16")
    assert rec.seen == watched((10, 0, LIST), (12, 1, "MODIFIED"), (15, 2, LIST))
    assert rec.lists == 3 and rec.current() == {KEY: 15} and rec.problems == []


def test_recorder_reports_deletions_and_objects_vanishing_from_a_relist() -> None:
    rec = Recorder("fault-a", "fault-a")
    rec.replace([cm(10, 0)], "10")
    rec.replace([], "11")
    rec.apply("DELETED", cm(12, 0))
    assert rec.problems == ["fault-a: ('fault-a', 'default', 'w0-0') vanished from the list at 11",
                            "fault-a: ('fault-a', 'default', 'w0-0') deleted at 12"]
