"""Structured logs and Prometheus metrics for the API server."""

from __future__ import annotations

import logging
import sys

import orjson
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


def configure_logging(level: str = "info") -> None:
    """JSON lines when not on a terminal, readable console output on one."""
    tty = sys.stderr.isatty()
    renderer: structlog.types.Processor = (structlog.dev.ConsoleRenderer() if tty
                                           else structlog.processors.JSONRenderer(serializer=orjson.dumps))
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(message)s")
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True),
                    structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=(structlog.PrintLoggerFactory(sys.stderr) if tty
                        else structlog.BytesLoggerFactory(sys.stderr.buffer)),
        cache_logger_on_first_use=True,
    )


class Metrics:
    """The server's metrics, in a registry of its own (no module globals)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("apiserver_request_total", "Requests by verb, resource and HTTP code.",
                                ["verb", "resource", "code"], registry=self.registry)
        self.duration = Histogram("apiserver_request_duration_seconds", "Request latency by verb and resource.",
                                  ["verb", "resource"], registry=self.registry,
                                  buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
        self.watchers = Gauge("apiserver_registered_watchers", "Open watch requests.", registry=self.registry)
