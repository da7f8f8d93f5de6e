"""`make kube`: a real Kubernetes 1.20 control plane started by hand, the one the real_kube tests use
(tests/e2e/kube_fixtures.py), until Ctrl-C or SIGTERM. Register it with kcp as a SyncTarget by its kubeconfig.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from kube_fixtures import KubeControlPlane  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root-dir", type=Path, default=REPO / ".kube-1.20",
                        help="state (etcd data, credentials, logs); emptied first")
    args = parser.parse_args()
    shutil.rmtree(args.root_dir, ignore_errors=True)
    cluster = KubeControlPlane(args.root_dir.resolve())
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.set())
    try:
        cluster.start()
        print(f"kube 1.20 is running at {cluster.url}\n"
              f"  kubectl --kubeconfig {cluster.kubeconfig} get --raw /version\n"
              f"  logs: {cluster.root}/*.log; Ctrl-C stops it", flush=True)
        stopping.wait()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
