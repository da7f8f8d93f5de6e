"""Daemon settings: every field is both a `--flag` and an environment variable.

Containers are configured by environment (the Helm chart sets `env:`), people
at a terminal by flags; one pydantic model serves both, and `--help` is
generated from the same field descriptions, so the three never disagree.
Flags win over environment variables, which win over defaults.
"""

from __future__ import annotations

import argparse
import json
import typing
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from pydantic import Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from .sharding import shard_lease_name

if TYPE_CHECKING:  # leaderelection pulls in kubernetes_asyncio (~50 MiB): only daemons that elect pay for it
    from .leaderelection import LeaderElectionConfig

S = TypeVar("S", bound=BaseSettings)

_COMPLEX = (list, dict, set, tuple)


def settings_config(component: str) -> SettingsConfigDict:
    """`model_config` for a component's settings: env vars prefixed `KCP_DEPLOYMENT_SPLITTER_` and so on."""
    return SettingsConfigDict(env_prefix=component.upper().replace("-", "_") + "_", extra="forbid")


class DaemonSettings(BaseSettings):
    """What every kcp daemon needs; a component subclasses it with its own `model_config` and fields."""

    model_config = settings_config("kcp")

    kubeconfig: str | None = Field(None, description="kubeconfig file to reach kcp; unset: the in-cluster "
                                                     "service account")
    context: str | None = Field(None, description="kubeconfig context; unset: its current context")
    cluster: str = Field("admin", description="logical cluster holding the daemon's own objects, such as its "
                                              "leader election lease")
    leader_elect: bool = Field(True, description="elect one active replica through a Lease; off: always active")
    lease_namespace: str = Field("default", description="namespace of the leader election Lease")
    leader_elect_resource_name: str = Field("", description="name of the leader election Lease; empty: the "
                                                            "component name; with --shards above 1: plus "
                                                            "-shard-N, N the --shard-index")
    leader_elect_lease_duration: float = Field(15.0, gt=0, description="seconds a standby waits after the "
                                                                       "lease last changed before taking it")
    leader_elect_renew_deadline: float = Field(10.0, gt=0, description="seconds the leader keeps trying to "
                                                                       "renew before giving up leadership")
    leader_elect_retry_period: float = Field(2.0, gt=0, description="seconds between lease acquire and renew "
                                                                    "attempts")
    health_address: str = Field("0.0.0.0", description="address of the /healthz, /readyz and /metrics server")
    health_port: int = Field(0, ge=0, le=65535, description="port of the /healthz, /readyz and /metrics "
                                                            "server; 0: a free port, logged at start")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="lowest level logged")
    qps: float = Field(50.0, ge=0, description="API requests per second, sustained (0: unlimited)")
    burst: int = Field(100, ge=0, description="API requests allowed in a burst above qps")

    def leader_election(self, component: str) -> LeaderElectionConfig:
        """The leader election config these settings describe (lease named after the component by default)."""
        from .leaderelection import LeaderElectionConfig

        return LeaderElectionConfig(lease_name=self.leader_elect_resource_name or component,
                                    namespace=self.lease_namespace,
                                    lease_duration=self.leader_elect_lease_duration,
                                    renew_deadline=self.leader_elect_renew_deadline,
                                    retry_period=self.leader_elect_retry_period)


class ShardedDaemonSettings(DaemonSettings):
    """A controller (its workers) whose replicas split the logical clusters into shards, each shard electing
    its own leader.

    `--shards N --shard-index I` runs shard I; its replicas campaign for the
    Lease `<name>-shard-<I>` (name: `--leader-elect-resource-name` or the
    component), so N shards lead at once, one replica each.
    """

    shards: int = Field(1, ge=1, description="shards that split the logical clusters between them, each "
                                             "electing its leader on a Lease of its own")
    shard_index: int = Field(0, ge=0, description="which of --shards this replica serves (0 .. shards-1)")
    workers: int = Field(4, ge=1, description="objects the controller reconciles at once (SyncTargets, root "
                                              "Deployments)")

    @model_validator(mode="after")
    def _index_within_shards(self) -> Self:
        if self.shard_index >= self.shards:
            raise ValueError(f"shard_index {self.shard_index} must be less than shards {self.shards}")
        return self

    def leader_election(self, component: str) -> LeaderElectionConfig:
        """As `DaemonSettings.leader_election`, on this shard's own Lease."""
        config = super().leader_election(component)
        return replace(config, lease_name=shard_lease_name(config.lease_name, self.shard_index, self.shards))


def env_var(cls: type[BaseSettings], field: str) -> str:
    """The environment variable that sets `field`."""
    return f"{cls.model_config.get('env_prefix', '')}{field}".upper()


def parse_settings(cls: type[S], argv: Sequence[str] | None = None, *, prog: str | None = None) -> S:
    """Settings from `argv` (default: `sys.argv[1:]`), the environment and defaults; exits 2 on bad input."""
    parser = argparse.ArgumentParser(prog=prog, description=(cls.__doc__ or "").strip().splitlines()[0])
    for name, info in cls.model_fields.items():
        flag = "--" + name.replace("_", "-")
        help_text = _help(cls, name, info)
        if info.annotation is bool:
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=help_text)
        else:
            parser.add_argument(flag, dest=name, metavar=name.upper(), default=argparse.SUPPRESS, help=help_text)
    given = vars(parser.parse_args(argv))
    try:
        values: dict[str, Any] = {name: _decode(cls.model_fields[name], value) for name, value in given.items()}
        return cls(**values)
    except (ValidationError, ValueError) as exc:
        parser.error(str(exc))


def _help(cls: type[BaseSettings], name: str, info: FieldInfo) -> str:
    default = "" if info.is_required() else f"; default {info.default!r}"
    return f"{info.description or name} (env {env_var(cls, name)}{default})".replace("%", "%%")


def _decode(info: FieldInfo, value: object) -> object:
    """Lists and mappings come as JSON on the command line, as pydantic-settings reads them from env vars."""
    origin = typing.get_origin(info.annotation) or info.annotation
    if isinstance(value, str) and isinstance(origin, type) and issubclass(origin, _COMPLEX):
        return json.loads(value)
    return value
