"""From a kubeconfig to a kubernetes_asyncio `Configuration`, or one clear error.

A daemon's own kubeconfig is a file (or the in-cluster service account); a
physical cluster's arrives as text inside an API object
(`SyncTarget.spec.kubeconfig`). `configuration_from_text` only ever parses:
text from an object is never taken for a path, so an object cannot make a
controller read a local file by naming it.

kubernetes_asyncio rejects a broken kubeconfig with whatever its code trips on
(ConfigException, AssertionError, AttributeError, ...); all of it surfaces here
as `InvalidKubeconfigError`, which a controller reports as a condition.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration

from .errors import InvalidKubeconfigError

__all__ = ["configuration_from_text", "is_kubeconfig_text", "load_configuration"]


def is_kubeconfig_text(value: str) -> bool:
    """A `str` holding a newline (or a JSON object) is kubeconfig text; any other is a path."""
    return "\n" in value or value.lstrip().startswith("{")


async def load_configuration(kubeconfig: str | Path | None = None, *,
                             context: str | None = None) -> Configuration:
    """From a file path, kubeconfig text (see `is_kubeconfig_text`), or (None) the in-cluster service account."""
    if kubeconfig is None:
        return _in_cluster()
    if isinstance(kubeconfig, str) and is_kubeconfig_text(kubeconfig):
        return await configuration_from_text(kubeconfig, context=context)
    files = _existing_files(kubeconfig)
    configuration = Configuration()
    with _invalid(f"cannot load kubeconfig {files}"):
        await kube_config.load_kube_config(config_file=files, context=context,
                                           client_configuration=configuration, persist_config=False)
    return _checked(configuration)


async def configuration_from_text(text: str, *, context: str | None = None) -> Configuration:
    """From kubeconfig YAML (or JSON) text; never read as a path."""
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # the parser's message quotes the offending line, which may hold a token: give the place only
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise InvalidKubeconfigError(f"kubeconfig text is not valid YAML{where}") from None
    if not isinstance(parsed, dict):
        raise InvalidKubeconfigError("kubeconfig text is not a YAML mapping")
    configuration = Configuration()
    with _invalid("invalid kubeconfig"):
        await kube_config.load_kube_config_from_dict(parsed, context=context, client_configuration=configuration)
    return _checked(configuration)


def _existing_files(kubeconfig: str | Path) -> str:
    """The path(s), if one is a file: several, separated as in $KUBECONFIG, are merged (read once, at start)."""
    files = str(kubeconfig)
    if not any(Path(part).expanduser().is_file() for part in files.split(os.pathsep)):
        raise InvalidKubeconfigError(f"kubeconfig file not found: {files}")
    return files


def _in_cluster() -> Configuration:
    configuration = Configuration()
    with _invalid("no in-cluster configuration"):
        kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return _checked(configuration)


# kubernetes_asyncio asserts some entries are there, without a message
_SILENT: dict[type[Exception], str] = {AssertionError: "a required entry is empty (the context's cluster or user?)"}


@contextmanager
def _invalid(context: str) -> Iterator[None]:
    """Anything the loader raises means this kubeconfig yields no configuration (cancellation passes)."""
    try:
        yield
    except InvalidKubeconfigError:
        raise
    except Exception as exc:
        detail = str(exc) or _SILENT.get(type(exc), type(exc).__name__)
        raise InvalidKubeconfigError(f"{context}: {detail}") from exc


def _checked(configuration: Configuration) -> Configuration:
    """The server must be an http(s) URL: the loader takes any string."""
    server = urlsplit(configuration.host or "")
    if server.scheme not in ("http", "https") or not server.netloc:
        raise InvalidKubeconfigError(f"the kubeconfig's server {configuration.host!r} is not an http(s) URL")
    return configuration
