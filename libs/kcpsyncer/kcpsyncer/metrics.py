"""The syncer's Prometheus series, labelled by logical cluster and sync target (many syncers, one registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kcpcommon.metrics import get_or_create

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
LABELS = ("logical_cluster", "sync_target")

DOWN, UP, DELETE = "down", "up", "delete"  # directions: spec down, status up, downstream deletes


class SyncerMetrics:
    """Objects synced by direction and type, latency by direction, errors by reason, heartbeats, placed
    workspaces served."""

    def __init__(self, registry: CollectorRegistry | None, *, logical_cluster: str, sync_target: str) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self._labels = (logical_cluster, sync_target)
        self._synced = get_or_create(Counter, registry, "kcp_syncer_synced_objects_total",
                                     "Writes made by the syncer, by direction (down, up, delete) and resource type",
                                     (*LABELS, "direction", "resource"))
        self._latency = get_or_create(Histogram, registry, "kcp_syncer_sync_latency_seconds",
                                      "Seconds from a change seen on one side to its write on the other",
                                      (*LABELS, "direction"), buckets=LATENCY_BUCKETS)
        self._errors = get_or_create(Counter, registry, "kcp_syncer_errors_total",
                                     "Failed syncer requests, by reason (the API's reason or the failure kind)",
                                     (*LABELS, "reason"))
        self._heartbeat = get_or_create(Gauge, registry, "kcp_syncer_last_heartbeat_timestamp_seconds",
                                        "Unix time of the last heartbeat written to the SyncTarget", LABELS)
        self._types = get_or_create(Gauge, registry, "kcp_syncer_synced_resource_types",
                                    "Resource types served on both sides and synced", LABELS)
        self._placed = get_or_create(Gauge, registry, "kcp_syncer_placed_workspaces",
                                     "Workspaces placed on this SyncTarget (or draining off it) that this syncer "
                                     "serves, besides the SyncTarget's own", LABELS)

    def synced(self, direction: str, resource: str) -> None:
        self._synced.labels(*self._labels, direction, resource).inc()

    def latency(self, direction: str, seconds: float) -> None:
        self._latency.labels(*self._labels, direction).observe(max(0.0, seconds))

    def error(self, reason: str) -> None:
        self._errors.labels(*self._labels, reason or "Unknown").inc()

    def heartbeat(self, unix_time: float) -> None:
        self._heartbeat.labels(*self._labels).set(unix_time)

    def types(self, count: int) -> None:
        self._types.labels(*self._labels).set(count)

    def placed_workspaces(self, count: int) -> None:
        self._placed.labels(*self._labels).set(count)
