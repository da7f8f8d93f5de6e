"""kube's own kubectl tests (test/cmd of kube 1.20, fetched by scripts/kube_source.sh, adapted as
tests/kubecmd/README.md lists) against kcp-sim-cluster with kubectl 1.35: each function that passes today
(tests/kubecmd/functions.txt) must keep passing. One server and one run serve every function; a failure
names kube's assertion (file:line, expected and got). The slowest functions run only in `make kube-cmd`
(with kcp as the server too, and kubectl 1.32), to keep this under a minute.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcp_process import REPO, kubectl_1_35

sys.path.insert(0, str(REPO / "tests" / "kubecmd"))
import kubecmd

# these take 10 s and more each (kube's own waits and polls): `make kube-cmd` runs them
SLOW = {"run_kubectl_apply_deployments_tests", "run_clusterroles_tests", "run_secrets_test", "run_namespace_tests",
        "run_deployment_tests", "run_rs_tests", "run_kubectl_get_tests", "run_kubectl_apply_tests",
        "run_service_tests", "run_pod_tests"}
FUNCTIONS = [name for name in kubecmd.passing_functions("sim") if name not in SLOW]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, kubecmd.FunctionOutcome]]:
    root: Path = tmp_path_factory.mktemp("kubecmd")
    with kubecmd.sim_server(root) as kubeconfig:
        ran = kubecmd.run_functions(kubeconfig, kubectl_1_35(), FUNCTIONS, root / "results.tsv", target="sim",
                                    timeout=240)
    yield {outcome.name: outcome for outcome in ran}


@pytest.mark.parametrize("function", FUNCTIONS)
def test_kube_cmd_function_passes_against_the_sim(outcomes: dict[str, kubecmd.FunctionOutcome],
                                                  function: str) -> None:
    outcome = outcomes[function]
    assert outcome.ok, kubecmd.summary([outcome])
    # these assert with plain commands (grep, kubectl explain), not kube's recorded helpers
    assert outcome.passed > 0 or function in {"run_RESTMapper_evaluation_tests", "run_kubectl_explain_tests",
                                              "run_swagger_tests", "run_kubectl_create_error_tests"}
