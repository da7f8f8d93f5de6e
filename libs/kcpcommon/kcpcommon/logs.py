"""Logging setup: structlog for us, the standard library routed through the same renderer.

In a container (stderr not a terminal) every line is one JSON object, for the
log collector; at a terminal, colourful key=value lines for people. Third-party
libraries log through `logging`; their records get the same format, so one
stream holds one format. In JSON mode our own lines skip the standard library
altogether and go to the stream as bytes (orjson): a server that logs every
request pays a few microseconds per line, not tens.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import orjson
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

    binary = getattr(stream, "buffer", None)
    if json and binary is not None:
        structlog.configure(
            processors=[*shared, structlog.processors.StackInfoRenderer(), structlog.processors.format_exc_info,
                        structlog.processors.JSONRenderer(serializer=_json_bytes)],
            logger_factory=_NamedBytesLoggerFactory(binary),
            wrapper_class=structlog.make_filtering_bound_logger(numeric),
            cache_logger_on_first_use=True,  # a daemon's configuration; in-process tests never call this
        )
    else:
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


def _json_bytes(event: Any, **_: Any) -> bytes:
    return orjson.dumps(event, default=str)


class _NamedBytesLogger(structlog.BytesLogger):
    """structlog's bytes logger, with the name `add_logger_name` reads."""

    def __init__(self, file: Any, name: str) -> None:
        super().__init__(file)
        self.name = name


class _NamedBytesLoggerFactory:
    def __init__(self, file: Any) -> None:
        self._file = file

    def __call__(self, *args: Any) -> _NamedBytesLogger:
        return _NamedBytesLogger(self._file, str(args[0]) if args else "")
