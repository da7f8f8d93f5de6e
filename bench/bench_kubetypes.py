"""Benchmark of kube's defaults and validation on kcp's imported types (not a test).

In process, per write of a Deployment (one container, five env vars, a port, requests), CPU time of
the strategy's prepare + validate, on an object already defaulted as it is stored:

- `crd`: the imported CRD served as a custom resource (schema validation only), as before kcp applied
  kube's rules;
- `imported`: kcp's strategy for an imported kube type (kube's defaults, the prune to the served
  schema, kube's validation and the schema's);
- `sim`: kcp-sim-cluster's built-in Deployment (kube's defaults and validation, no schema).

The schema is the one the cluster controller imports: kcp-sim-cluster's OpenAPI v3 for apps/v1 turned
into a CRD schema by kcp_cluster_controller.openapi. Best of `--rounds` rounds (the machine is shared).

Prints a summary and writes bench/results/kubetypes-<time>.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "services" / "cluster-controller"))

from kcp_cluster_controller.openapi import crd_schema  # noqa: E402

from kcp_apiserver.apiextensions.resources import resources_for  # noqa: E402
from kcp_apiserver.endpoints.openapi import v3_document  # noqa: E402
from kcp_apiserver.kubetypes.kinds import kube_type  # noqa: E402
from kcp_apiserver.registry.builtinschemas import newest_release  # noqa: E402
from kcp_sim_cluster.api import resource, resources  # noqa: E402
from kcpcommon.kubetypes import IMPORTED_LABEL  # noqa: E402

Obj = dict[str, Any]


def deployment() -> Obj:
    container = {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                 "env": [{"name": f"E{i}", "value": "x"} for i in range(5)], "resources": {"requests": {"cpu": "100m"}}}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}}
    rules = kube_type("apps", "v1", "Deployment")
    assert rules is not None and rules.default is not None
    rules.default(obj)
    return obj


def crd(schema: Obj, *, imported: bool) -> Obj:
    return {"metadata": {"name": "deployments.apps", "labels": {IMPORTED_LABEL: "true"} if imported else {}},
            "spec": {"group": "apps", "scope": "Namespaced", "names": {"plural": "deployments", "kind": "Deployment"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}}]}}


def per_update(strategy: Any, obj: Obj, count: int, rounds: int) -> float:
    """Best CPU microseconds per prepare_for_update + validate_update."""
    best = float("inf")
    for _ in range(rounds):
        objs = [copy.deepcopy(obj) for _ in range(count)]
        started = time.process_time()
        for new in objs:
            strategy.prepare_for_update(new, obj)
            assert not strategy.validate_update(new, obj)
        best = min(best, (time.process_time() - started) / count * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    release = newest_release()
    schema = crd_schema(v3_document(list(resources(release)), "apis/apps/v1"), "apps", "v1", "Deployment")
    obj = deployment()
    strategies: dict[str, Callable[[], Any]] = {
        "crd": lambda: resources_for(crd(schema, imported=False))[0].strategy,
        "imported": lambda: resources_for(crd(schema, imported=True))[0].strategy,
        "sim": lambda: resource(release, "apps", "deployments").strategy,
    }
    micros = {name: round(per_update(make(), obj, args.count, args.rounds), 1) for name, make in strategies.items()}
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "release": release,
               "cpu_us_per_update": micros, "imported_over_crd_us": round(micros["imported"] - micros["crd"], 1)}
    print(f"CPU per Deployment update (prepare + validate), best of {args.rounds} x {args.count}: "
          + ", ".join(f"{name} {value} us" for name, value in micros.items())
          + f"; kube's rules add {results['imported_over_crd_us']} us to an imported type's write")
    out = REPO / "bench" / "results" / f"kubetypes-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
