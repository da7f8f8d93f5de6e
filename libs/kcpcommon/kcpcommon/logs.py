"""Logging setup: structlog for us, the standard library routed through the same renderer.

In a container (stderr not a terminal) every line is one JSON object, for the
log collector; at a terminal, colourful key=value lines for people. Third-party
libraries log through `logging`; their records get the same format, so one
stream holds one format.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog


def configure_logging(level: str | int = "info", *, json: bool | None = None, stream: TextIO | None = None) -> None:
    """Configure structlog and the root logger; `json=None` picks JSON unless `stream` is a TTY."""
    stream = stream or sys.stderr
    numeric = level if isinstance(level, int) else logging.getLevelNamesMapping()[level.upper()]
    if json is None:
        json = not stream.isatty()
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    final: list[Any] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if json:
        final.append(structlog.processors.format_exc_info)
    final.append(renderer)

    structlog.configure(
        processors=[*shared, structlog.processors.StackInfoRenderer(),
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=False,  # tests reconfigure (capture_logs) after modules made their loggers
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(processors=final, foreign_pre_chain=shared))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
