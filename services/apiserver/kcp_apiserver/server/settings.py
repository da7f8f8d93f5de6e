"""kcp-apiserver's settings: one pydantic-settings model, so every option is a `--flag`
and a `KCP_APISERVER_*` environment variable, and `--help` is written from it."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings

from kcp_apiserver.storage.etcd_client import TLSFiles
from kcpcommon.settings import settings_config


class APIServerSettings(BaseSettings):
    """A Kubernetes API server with many logical clusters (/clusters/<name>/...), stored in etcd."""

    model_config = settings_config("kcp-apiserver")

    root_dir: str = Field(".kcp", description="directory for admin.kubeconfig, TLS material and the "
                                                     "embedded etcd's data")
    secure_port: int = Field(6443, ge=1, le=65535, description="HTTPS port to serve on")
    bind_address: str = Field("127.0.0.1", description="address to listen on (0.0.0.0 for all interfaces)")
    etcd_servers: str = Field("", description="comma-separated etcd endpoints (host:port, http://host:port or "
                                              "https://host:port); empty: an embedded etcd runs under --root-dir "
                                              "over mutual TLS, restarted when it dies, stopped with the server")
    etcd_cafile: str = Field("", description="CA bundle (PEM) that signs the etcd servers' certificates; with it, "
                                             "or with https:// endpoints (then the system's CAs), etcd is reached "
                                             "over TLS (with several endpoints, every member's certificate must "
                                             "name the first endpoint's host)")
    etcd_certfile: str = Field("", description="client certificate (PEM) for etcd's mutual TLS")
    etcd_keyfile: str = Field("", description="private key (PEM) of --etcd-certfile")
    embedded_etcd_grace_period: float = Field(60.0, gt=0, description="seconds the embedded etcd may stay down, "
                                                                      "while it is restarted with backoff, before "
                                                                      "/livez fails")
    external_hostname: str = Field("", description="comma-separated extra host names or IPs for the serving "
                                                   "certificate")
    service_cluster_ip_range: str = Field("10.255.0.0/16", description="IPv4 CIDR the cluster IPs of Services "
                                          "come from, each logical cluster its own pool of it; physical "
                                          "clusters allocate their own for the copies synced to them")
    watch_cache_size: int = Field(10_000, ge=10, description="events kept per resource for watch resumption")
    compaction_interval: float = Field(300.0, ge=0, description="seconds between etcd compactions (0: never), "
                                                                "as kube-apiserver")
    watch_bookmark_interval: float = Field(60.0, gt=0, description="seconds between BOOKMARK events on watches "
                                                                   "that allow them")
    min_request_timeout: float = Field(1800.0, gt=0, description="a watch without timeoutSeconds ends after "
                                                                 "between this and twice this many seconds")
    max_requests_inflight: int = Field(400, ge=0, description="read-only requests served at once before more "
                                                              "are refused with 429 (0: no limit), as "
                                                              "kube-apiserver; watches are not counted")
    max_mutating_requests_inflight: int = Field(200, ge=0, description="mutating requests served at once before "
                                                                       "more are refused with 429 (0: no limit), as "
                                                                       "kube-apiserver")
    request_timeout: float = Field(60.0, gt=0, description="seconds a request that is not a watch may take before "
                                                           "it is answered 504 Timeout, as kube-apiserver")
    read_header_timeout: float = Field(32.0, gt=0, description="seconds a new connection has to finish its TLS "
                                                               "handshake, and then its first request's headers, "
                                                               "as kube-apiserver's server")
    max_pending_connections: int = Field(2048, ge=1, description="connections that have not yet sent a complete "
                                                                 "request head (TLS handshake included) held at "
                                                                 "once; past it the oldest of them is closed")
    max_pending_connections_per_address: int = Field(512, ge=1, description="the same bound for the connections "
                                                                            "from one remote address, so one "
                                                                            "client's flood sheds its own "
                                                                            "connections first")
    idle_connection_timeout: float = Field(90.0, gt=0, description="seconds a kept-alive connection may wait for "
                                                                   "its next request before it is closed, as "
                                                                   "kube-apiserver's server")
    token_auth_file: str = Field("", description="CSV file of bearer tokens (token,user,uid,\"group1,group2\"), "
                                                 "as kube-apiserver's --token-auth-file")
    client_ca_file: str = Field("", description="CA bundle (PEM): client certificates it signs authenticate as "
                                                "their CN, in the groups of their O entries, as kube-apiserver's "
                                                "--client-ca-file (the root dir's CA is always trusted)")
    service_account_issuer: str = Field("https://kubernetes.default.svc",
                                        description="the `iss` of service-account tokens, and the issuer of "
                                                    "/.well-known/openid-configuration")
    service_account_signing_key_file: str = Field("", description="RSA private key (PEM) that signs "
                                                                  "service-account tokens (default: "
                                                                  "service-account.key in --root-dir, made on "
                                                                  "first start)")
    api_audiences: str = Field("", description="comma-separated audiences a token must name to be accepted here "
                                               "(default: the service-account issuer), as kube-apiserver")
    audit_log_path: str = Field("", description="write an audit.k8s.io/v1 Event per request, at the Metadata "
                                                "level, as a JSON line to this file (`-`: standard output)")
    workers: int = Field(1, ge=1, description="serving processes sharing the port through SO_REUSEPORT")
    worker_index: int = Field(0, ge=0, description="internal: which worker process this is (0 runs the "
                                                   "controllers)")
    track_managed_fields: bool = Field(True, description="record metadata.managedFields on every write; for "
                                                         "benchmarks only (measuring what tracking costs): "
                                                         "server-side apply still works without it, but "
                                                         "ownership goes unrecorded")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="lowest level logged")

    @field_validator("service_cluster_ip_range")
    @classmethod
    def _an_ipv4_range(cls, value: str) -> str:
        try:
            network = ipaddress.IPv4Network(value)
        except ValueError as err:
            raise ValueError(f"--service-cluster-ip-range: not an IPv4 CIDR: {err}") from None
        if network.num_addresses < 4:
            raise ValueError("--service-cluster-ip-range: too small, at least a /30")
        return str(network)

    @model_validator(mode="after")
    def _client_certificate_and_key_together(self) -> APIServerSettings:
        if bool(self.etcd_certfile) != bool(self.etcd_keyfile):
            raise ValueError("--etcd-certfile and --etcd-keyfile must be given together")
        return self

    @property
    def etcd_tls(self) -> TLSFiles | None:
        """How to reach --etcd-servers over TLS; None: in plain text."""
        https = any(item.strip().startswith("https://") for item in self.etcd_servers.split(","))
        if not (https or self.etcd_cafile or self.etcd_certfile):
            return None
        return TLSFiles(self.etcd_cafile or None, self.etcd_certfile or None, self.etcd_keyfile or None)

    @property
    def etcd_endpoints(self) -> list[str]:
        return [item.strip().split("://", 1)[-1].rstrip("/") for item in self.etcd_servers.split(",")
                if item.strip()]

    @property
    def audiences(self) -> tuple[str, ...]:
        return tuple(item.strip() for item in self.api_audiences.split(",") if item.strip())

    @property
    def external_hostnames(self) -> list[str]:
        return [item.strip() for item in self.external_hostname.split(",") if item.strip()]
