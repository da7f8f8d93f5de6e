"""Work queue metrics behind a tiny interface (client-go's `workqueue` metrics provider).

The queue reports what happens to it through `QueueMetrics`; it knows nothing
of Prometheus, and a queue built without metrics pays nothing. The Prometheus
implementation exports client-go's series (`workqueue_depth`,
`workqueue_adds_total`, ...), labelled by queue name, so the dashboards and
alerts written for Go controllers work for ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# client-go's buckets: 10 ns to 1000 s, a factor of ten apart
QUEUE_BUCKETS = tuple(10.0 ** exponent for exponent in range(-8, 4))

M = TypeVar("M", Counter, Gauge, Histogram)


class QueueMetrics(Protocol):
    """What a work queue reports."""

    def added(self) -> None:
        """An item was queued (a duplicate of a queued item is not an add)."""

    def depth(self, depth: int) -> None:
        """Items now waiting for a worker."""

    def started(self, queued_for: float) -> None:
        """A worker took an item that had waited `queued_for` seconds."""

    def finished(self, worked_for: float) -> None:
        """A worker was done with an item after `worked_for` seconds."""

    def retried(self) -> None:
        """An item was scheduled to come back later (`add_after`, `add_rate_limited`)."""


class NoopQueueMetrics:
    """Reports nowhere: the default."""

    def added(self) -> None:
        pass

    def depth(self, depth: int) -> None:
        pass

    def started(self, queued_for: float) -> None:
        pass

    def finished(self, worked_for: float) -> None:
        pass

    def retried(self) -> None:
        pass


def get_or_create(kind: type[M], registry: CollectorRegistry, name: str, documentation: str,
                  labelnames: Sequence[str], **kwargs: object) -> M:
    """A metric family registered once per registry, shared by every queue or controller using it.

    A process has several queues (and controllers) reporting into one registry,
    and prometheus_client refuses to register a name twice.
    """
    try:
        return kind(name, documentation, labelnames, registry=registry, **kwargs)  # type: ignore[arg-type]
    except ValueError:
        # prometheus_client has no public lookup of what a registry holds
        existing = getattr(registry, "_names_to_collectors", {}).get(name)
        if isinstance(existing, kind) and tuple(getattr(existing, "_labelnames", ())) == tuple(labelnames):
            return existing
        raise


class PrometheusQueueMetrics:
    """client-go's `workqueue_*` series for the queue called `name`."""

    def __init__(self, registry: CollectorRegistry, name: str) -> None:
        labels = ("name",)
        self._depth = get_or_create(Gauge, registry, "workqueue_depth", "Current depth of the work queue",
                                    labels).labels(name)
        self._adds = get_or_create(Counter, registry, "workqueue_adds_total",
                                   "Total number of adds handled by the work queue", labels).labels(name)
        self._retries = get_or_create(Counter, registry, "workqueue_retries_total",
                                      "Total number of retries handled by the work queue", labels).labels(name)
        self._latency = get_or_create(Histogram, registry, "workqueue_queue_duration_seconds",
                                      "How long in seconds an item stays in the work queue before being taken",
                                      labels, buckets=QUEUE_BUCKETS).labels(name)
        self._work = get_or_create(Histogram, registry, "workqueue_work_duration_seconds",
                                   "How long in seconds processing an item from the work queue takes",
                                   labels, buckets=QUEUE_BUCKETS).labels(name)

    def added(self) -> None:
        self._adds.inc()

    def depth(self, depth: int) -> None:
        self._depth.set(depth)

    def started(self, queued_for: float) -> None:
        self._latency.observe(max(0.0, queued_for))

    def finished(self, worked_for: float) -> None:
        self._work.observe(max(0.0, worked_for))

    def retried(self) -> None:
        self._retries.inc()
