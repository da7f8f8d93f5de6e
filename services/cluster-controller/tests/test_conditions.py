"""Ready from the syncer's heartbeat and the imported types, with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from kcp_cluster_controller import conditions as cond
from kcp_cluster_controller import controller
from kcp_cluster_controller.controller import SyncTargetReconciler, _Downstream

from kcpcommon.errors import APINotFoundError
from kcpcommon.keys import ObjectKey

T0 = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
SYNCER_OK = cond.condition(cond.SYNCER_READY, cond.TRUE, "SyncerRunning")


def ready_at(last: datetime | None, now: datetime, threshold: float = 30.0) -> tuple[dict[str, str], float | None]:
    beat, fresh_for = cond.heartbeat(last, now, threshold)
    return cond.ready([SYNCER_OK, beat]), fresh_for


def test_ready_while_the_heartbeat_is_younger_than_the_threshold() -> None:
    ready, fresh_for = ready_at(T0, T0 + timedelta(seconds=10))
    assert ready["status"] == cond.TRUE
    assert fresh_for == 20.0  # the controller looks again when it would turn stale


def test_not_ready_after_the_threshold_without_a_heartbeat() -> None:
    ready, fresh_for = ready_at(T0, T0 + timedelta(seconds=31))
    assert (ready["status"], ready["reason"]) == (cond.FALSE, cond.HEARTBEAT_STALE)
    assert "31s" in ready["message"] and fresh_for is None


def test_the_threshold_is_a_setting() -> None:
    assert ready_at(T0, T0 + timedelta(seconds=6), threshold=5.0)[0]["status"] == cond.FALSE
    assert ready_at(T0, T0 + timedelta(seconds=4), threshold=5.0)[0]["status"] == cond.TRUE


def test_no_heartbeat_yet_is_not_ready() -> None:
    ready, _ = ready_at(None, T0)
    assert (ready["status"], ready["reason"]) == (cond.FALSE, cond.NO_HEARTBEAT)


def test_a_failing_syncer_explains_not_ready() -> None:
    beat, _ = cond.heartbeat(T0, T0 + timedelta(seconds=60), 30.0)
    failing = cond.condition(cond.SYNCER_READY, cond.FALSE, "SyncerFailing", "boom")
    ready = cond.ready([failing, beat])
    assert (ready["reason"], ready["message"]) == ("SyncerFailing", "boom")


def test_transition_time_moves_only_when_the_status_changes() -> None:
    first = cond.merge(None, [cond.condition(cond.READY, cond.TRUE, "SyncerHeartbeating")], T0)
    later = cond.merge(first, [cond.condition(cond.READY, cond.TRUE, "SyncerHeartbeating")], T0 + timedelta(minutes=1))
    assert later[0]["lastTransitionTime"] == "2026-11-25T12:00:00Z"
    flipped = cond.merge(later, [cond.condition(cond.READY, cond.FALSE, "HeartbeatStale")], T0 + timedelta(minutes=2))
    assert flipped[0]["lastTransitionTime"] == "2026-11-25T12:02:00Z"


def test_an_unreachable_cluster_takes_the_syncer_conditions_down_with_ready() -> None:
    """No condition keeps reading True from before: Ready, SyncerReady and HeartbeatHealthy go False together."""
    healthy = cond.merge(None, [cond.condition(cond.READY, cond.TRUE, "SyncerHeartbeating"),
                                cond.condition(cond.SYNCER_READY, cond.TRUE, cond.SYNCER_HEALTHY),
                                cond.condition(cond.HEARTBEAT_HEALTHY, cond.TRUE, cond.HEARTBEAT_OK)], T0)
    lost = cond.merge(healthy, cond.not_ready(cond.UNREACHABLE, "cannot reach the cluster: refused"),
                      T0 + timedelta(minutes=1))
    assert {c["type"]: (c["status"], c["reason"]) for c in lost} == {
        cond.READY: ("False", cond.UNREACHABLE), cond.SYNCER_READY: ("False", cond.UNREACHABLE),
        cond.HEARTBEAT_HEALTHY: ("False", cond.UNREACHABLE)}
    assert all(c["lastTransitionTime"] == "2026-11-25T12:01:00Z" for c in lost)


def test_a_target_whose_every_type_failed_to_import_is_not_ready() -> None:
    """Heartbeating is not enough: with no type imported the SyncTarget can sync nothing."""
    beat, _ = cond.heartbeat(T0, T0 + timedelta(seconds=1), 30.0)
    imports = cond.import_failures({"deployments.apps": "the server could not find the requested resource",
                                    "services": "forbidden"}, ["deployments.apps", "services"])
    assert (imports["status"], imports["reason"]) == (cond.FALSE, cond.IMPORTS_FAILED)
    ready = cond.ready([SYNCER_OK, beat, imports])
    assert (ready["status"], ready["reason"]) == (cond.FALSE, cond.IMPORTS_FAILED)
    assert "deployments.apps: the server could not find" in ready["message"] and "services: forbidden" in ready["message"]


def test_a_target_with_some_types_imported_stays_ready_and_names_the_failures() -> None:
    beat, _ = cond.heartbeat(T0, T0 + timedelta(seconds=1), 30.0)
    imports = cond.import_failures({"services": "forbidden"}, ["deployments.apps", "services"])
    assert (imports["status"], imports["reason"], imports["message"]) == (cond.FALSE, cond.IMPORT_FAILED,
                                                                          "services: forbidden")
    assert cond.ready([SYNCER_OK, beat, imports])["status"] == cond.TRUE


class _NoKcp:
    def dynamic(self, cluster: str | None = None) -> None:
        return None


async def test_the_reconciler_reports_every_failed_import(monkeypatch: pytest.MonkeyPatch) -> None:
    async def read_type(client: object, resource: str, *_: object) -> object:
        raise APINotFoundError(f"the server could not find {resource}", status=404, reason="NotFound")

    monkeypatch.setattr(controller, "read_type", read_type)
    reconciler = SyncTargetReconciler(_NoKcp(), None, None, heartbeat_interval=2,  # type: ignore[arg-type]
                                      heartbeat_threshold=8, discovery_interval=3600)
    key = ObjectKey("org", "", "broken")
    imported = await reconciler._import(key, _Downstream("fp", _NoKcp()),  # type: ignore[arg-type]
                                        ("deployments.apps", "widgets.example.com"))
    assert (imported["status"], imported["reason"]) == (cond.FALSE, cond.IMPORTS_FAILED)
    assert "deployments.apps: (404 NotFound) the server could not find deployments.apps" in imported["message"]
    assert "widgets.example.com: (404 NotFound) the server could not find" in imported["message"]
