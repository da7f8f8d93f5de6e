"""kube's own kubectl tests (test/cmd of kube 1.20, adapted as tests/kubecmd/README.md lists) against kcp with two
simulated clusters attached (kube 1.25 and the newest), the cluster controller's syncers and the deployment
splitter, with kubectl 1.35: each function that passes against kcp (tests/kubecmd/functions.txt, `kcp:`; but for
SLOW) must keep passing. The apps and batch ones (Deployments split over both clusters, ReplicaSets,
StatefulSets, DaemonSets, Jobs) are what a user's day 2 on kcp looks like to kubectl. One fleet and one run serve
every function; a failure names kube's assertion (file:line, expected and got). `make kube-cmd` runs them all with
kubectl 1.32 too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcp_process import REPO, kubectl_1_35

sys.path.insert(0, str(REPO / "tests" / "kubecmd"))
import kubecmd

# run only by `make kube-cmd`, as the sim's slow ones (test_kube_cmd.py): ~30 s of kcp's deletes held by finalizers
SLOW = {"run_kubectl_apply_tests"}
FUNCTIONS = [name for name in kubecmd.passing_functions("kcp") if name not in SLOW]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, kubecmd.FunctionOutcome]]:
    root: Path = tmp_path_factory.mktemp("kubecmd-kcp")
    with kubecmd.kcp_fleet(root) as kubeconfig:
        ran = kubecmd.run_functions(kubeconfig, kubectl_1_35(), FUNCTIONS, root / "results.tsv", target="kcp",
                                     timeout=600)
    yield {outcome.name: outcome for outcome in ran}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_kube_cmd_function_passes_against_kcp(outcomes: dict[str, kubecmd.FunctionOutcome], function: str) -> None:
    outcome = outcomes[function]
    assert outcome.ok, kubecmd.summary([outcome])
    # these assert with plain commands (grep, kubectl explain), not kube's recorded helpers
    assert outcome.passed > 0 or function in {"run_RESTMapper_evaluation_tests", "run_kubectl_explain_tests",
                                              "run_kubectl_create_error_tests"}
