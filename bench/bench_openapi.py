"""Benchmark of the /openapi/v2 protobuf body (not a test): the time to encode the Swagger document as
gnostic's openapi.v2.Document, which kubectl fetches before validating or explaining.

Two documents: kcp's built-in resources, and kcp-sim-cluster's (kube's workload APIs with their real
schemas, the larger one). Each is encoded `--rounds` times in this process; the median and the best
round are reported with the body's size.

Prints a summary and writes bench/results/openapi-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from kcp_apiserver.apiextensions.crd import CRD
from kcp_apiserver.endpoints.openapi import swagger
from kcp_apiserver.endpoints.openapi_proto import encode_swagger
from kcp_apiserver.registry.builtin import BUILTINS
from kcp_sim_cluster.api import resources as sim_resources

REPO = Path(__file__).resolve().parents[1]


def measure(doc: dict[str, Any], rounds: int) -> dict[str, Any]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        body = encode_swagger(doc)
        times.append(time.perf_counter() - started)
    return {"bytes": len(body), "definitions": len(doc.get("definitions", {})), "paths": len(doc.get("paths", {})),
            "median_ms": round(statistics.median(times) * 1000, 2), "best_ms": round(min(times) * 1000, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--release", default="1.35", help="the sim's kube release")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    docs = {"kcp": swagger([*BUILTINS, CRD]), f"sim-{args.release}": swagger(list(sim_resources(args.release)))}
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rounds": args.rounds,
                               "encode": {name: measure(doc, args.rounds) for name, doc in docs.items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"openapi-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2))
    for name, row in results["encode"].items():
        print(f"/openapi/v2 protobuf, {name}: {row['definitions']} definitions, {row['paths']} paths, "
              f"{row['bytes'] / 1024:.0f} KiB: encode median {row['median_ms']} ms, best {row['best_ms']} ms")
    print(f"written to {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
