# jupyter-distributed: developer commands.
#
#   make lab    set up .venv (package + JupyterLab) and open JupyterLab on examples/
#   make test   set up .venv (package + test tools), build the extension, run every check
#
# Both work from a fresh clone. Each set-up step is a file target (a stamp under
# .venv/.stamps, node_modules/.stamp, the built extension) that is redone only
# when its inputs change, so a second run goes straight to the checks.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
.NOTPARALLEL:
MAKEFLAGS += --no-builtin-rules

# ---- hook points -------------------------------------------------------------
# Debian packages the tests need (never `make lab`), installed (after `apt-get update`) only
# when one is missing, e.g. APT_PACKAGES += openmpi-bin libopenmpi-dev chromium
APT_PACKAGES ?= openmpi-bin libopenmpi-dev
# Slurm for the slurm backend's tests (they start their own daemons, on loopback, in a
# network namespace they create; iproute2 for the namespace).
APT_PACKAGES += slurmctld slurmd slurm-client munge iproute2
# Debian's Chromium for the browser tests (Playwright never downloads one).
APT_PACKAGES += chromium
# The sqlite3 tool: a test reads the history with it beside a server's store (test_store_shared).
APT_PACKAGES += sqlite3
# torch for the tests: the CPU build, pinned. An unpinned or newer torch pulls
# the CUDA build and its NVIDIA packages.
TORCH_SPEC ?= torch==2.13.0
# TensorFlow for its tests (--framework tensorflow, examples/09): the CPU build, pinned.
# `make test TENSORFLOW_SPEC=` skips it on a machine without a wheel for it (its tests then
# skip, saying that TensorFlow is not installed).
TENSORFLOW_SPEC ?= tensorflow-cpu==2.21.0
# Extra arguments: `make lab LAB_ARGS="--port 9999"`, `make test PYTEST_ARGS="-k server"`.
LAB_ARGS ?=
PYTEST_ARGS ?=
# The steps of `make test`, in order; the first failure stops the run. A new
# step is a target here plus its name below.
TEST_STEPS ?= ruff mypy imports ts-lint ts-test pytest ui-test

# ---- paths -------------------------------------------------------------------
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
PIP := $(PY) -m pip
STAMPS := $(VENV)/.stamps
TORCH_STAMP := $(STAMPS)/$(subst =,-,$(subst $(eval) ,,$(TORCH_SPEC)))
TENSORFLOW_STAMP := $(if $(strip $(TENSORFLOW_SPEC)),$(STAMPS)/$(subst =,-,$(subst $(eval) ,,$(TENSORFLOW_SPEC))))
LABEXT := python/jupyter_distributed/labextension
# Tools installed in the venv (jupyter-builder, jupyter, ...) come first on PATH,
# for npm scripts too.
export PATH := $(abspath $(BIN)):$(PATH)

# Inputs of each step.
TS_INPUTS := package.json tsconfig.json tsconfig.build.json $(shell find labextension/src labextension/style labextension/schema -type f)
PY_INPUTS := pyproject.toml install.json README.md $(wildcard jupyter-config/*/*.json) \
	$(shell find python \( -path '$(LABEXT)' -o -name '__pycache__' \) -prune -o -print)

# Requirements read from pyproject.toml: `build` for build-system.requires, or
# the runtime dependencies plus the named extras.
define REQUIREMENTS
import sys, tomllib
with open("pyproject.toml", "rb") as f:
    p = tomllib.load(f)
if sys.argv[1:] == ["build"]:
    reqs = p["build-system"]["requires"]
else:
    reqs = p["project"]["dependencies"]
    for extra in sys.argv[1:]:
        reqs += p["project"]["optional-dependencies"][extra]
print("\n".join(reqs))
endef
export REQUIREMENTS

# The Node.js versions the builder (Rspack) accepts: ^20.19.0 || >=22.12.0.
NODE_CHECK := const [a, b] = process.versions.node.split(".").map(Number); \
	process.exit(a > 22 || (a === 22 && b >= 12) || (a === 20 && b >= 19) ? 0 : 1);
export NODE_CHECK

.PHONY: help lab test system-lab system-test clean distclean wheel bench-panel wire-fixtures $(TEST_STEPS)

help:
	@echo "make lab    set up .venv and open JupyterLab on examples/ (LAB_ARGS=... for more)"
	@echo "make test   set up .venv, build the extension, run all checks (PYTEST_ARGS=...)"
	@echo "helpers:    system-lab, system-test, wheel (to dist/), clean (build outputs), distclean (+ .venv, node_modules)"
	@echo "            wire-fixtures (rewrite tests/wire/ from the Python code)"

# ---- the two user commands ---------------------------------------------------
lab: system-lab $(STAMPS)/deps-lab $(STAMPS)/package
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS) examples/

test: setup-test $(STAMPS)/package $(TEST_STEPS)

# ---- set-up ------------------------------------------------------------------
# `make test`'s packages come in two chains at once, as they share nothing: the Python ones (pip,
# one install after another, into .venv) and the Node.js ones (npm ci of the extension and of
# ui-tests, ~600 MB). Their output interleaves; a failure in either fails the set-up once both
# have ended. The build and the checks run after both, in order.
PY_SETUP := $(TORCH_STAMP) $(TENSORFLOW_STAMP) $(STAMPS)/deps-test $(STAMPS)/build-tools
NODE_SETUP := node_modules/.stamp ui-tests/node_modules/.stamp
.PHONY: setup-test setup-python setup-node
setup-test: system-test
	@$(MAKE) --no-print-directory setup-node & node=$$!; \
	$(MAKE) --no-print-directory setup-python || { wait $$node; exit 1; }; \
	wait $$node

setup-python: $(PY_SETUP)
	@:

setup-node: $(NODE_SETUP)
	@:

# Set-up checks. `make lab` needs Python (with venv) and Node.js only: a user without root who
# lacks the engines' or the browser's packages can still open a lab. `make test` also needs the
# Debian packages in APT_PACKAGES, installed (after `apt-get update`) only when one is missing.
# DPKG_QUERY and APT_GET are the commands used to look and to install (a test swaps them).
DPKG_QUERY ?= dpkg-query
APT_GET ?= apt-get
system-lab:
	@if ! $(PYTHON) -c 'import ensurepip, venv' 2>/dev/null; then \
	  echo "apt-get install: python3-venv"; \
	  $(APT_GET) update; \
	  DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y --no-install-recommends python3-venv; \
	fi
	@command -v node >/dev/null && command -v npm >/dev/null \
	  || { echo "error: Node.js >= 20.19 with npm is needed to build the lab extension" >&2; exit 1; }
	@node -e "$$NODE_CHECK" \
	  || { echo "error: Node.js $$(node --version) is too old: the builder needs ^20.19 or >=22.12" >&2; exit 1; }

system-test: system-lab
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  $(DPKG_QUERY) -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q '^install ok installed$$' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$${missing// }" ]; then \
	  echo "apt-get install:$$missing"; \
	  $(APT_GET) update; \
	  DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y --no-install-recommends $$missing; \
	fi

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMPS)/build-tools: pyproject.toml | $(PY)
	@mkdir -p $(STAMPS)
	$(PY) -c "$$REQUIREMENTS" build > $@.txt
	$(PIP) install -r $@.txt
	@touch $@

$(STAMPS)/deps-lab: pyproject.toml | $(PY)
	@mkdir -p $(STAMPS)
	$(PY) -c "$$REQUIREMENTS" lab > $@.txt
	$(PIP) install -r $@.txt
	@touch $@

# Installed after torch and TensorFlow, so nothing in it can pull another torch.
$(STAMPS)/deps-test: pyproject.toml | $(PY) $(TORCH_STAMP) $(TENSORFLOW_STAMP)
	@mkdir -p $(STAMPS)
	$(PY) -c "$$REQUIREMENTS" test > $@.txt
	$(PIP) install -r $@.txt
	@touch $@

# Plain pip on purpose: the machine's pip configuration finds the CPU wheel.
# The stamp is named after TORCH_SPEC, so changing the pin reinstalls.
$(TORCH_STAMP): | $(PY)
	@mkdir -p $(STAMPS)
	$(PIP) install "$(TORCH_SPEC)"
	@touch $@

# Named after TENSORFLOW_SPEC like torch's; none when TENSORFLOW_SPEC is empty.
ifneq ($(TENSORFLOW_STAMP),)
$(TENSORFLOW_STAMP): | $(PY) $(TORCH_STAMP)
	@mkdir -p $(STAMPS)
	$(PIP) install "$(TENSORFLOW_SPEC)"
	@touch $@
endif

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# `build:prod` starts from `npm run clean`, so the result is never a stale mix.
$(LABEXT)/package.json: node_modules/.stamp $(TS_INPUTS) | $(STAMPS)/build-tools
	npm run build:prod

# A real (not editable) install, as users get it: the wheel's files, including
# the lab extension and the server config, are copied into the venv. The hatch
# hook finds the extension just built above and does not rebuild it.
$(STAMPS)/package: $(LABEXT)/package.json $(PY_INPUTS) | $(STAMPS)/build-tools
	$(PIP) install --no-deps --no-build-isolation --force-reinstall .
	@touch $@

# ---- the steps of `make test` ------------------------------------------------
ruff:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

mypy:
	$(BIN)/mypy

# The wings' contracts (pyproject.toml's [tool.importlinter]), read from the source tree.
imports:
	PYTHONPATH=python $(BIN)/lint-imports

ts-lint:
	npm run --silent lint

ts-test:
	npm test

# `make test` runs everything, the full contract suite on Ray included (--slow); a bare
# `pytest` skips the tests marked slow, for a quicker loop while developing.
pytest:
	$(BIN)/pytest --slow $(PYTEST_ARGS)

# Browser tests: Galata/Playwright in ui-tests/ (its own node_modules, ~600 MB) driving
# Debian's Chromium against a Jupyter server from .venv; screenshots land in
# ui-tests/test-results/. UI_TEST_ARGS=... passes arguments to `playwright test`.
UI_TEST_ARGS ?=
ui-tests/node_modules/.stamp: ui-tests/package.json ui-tests/package-lock.json
	cd ui-tests && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
	@touch $@

ui-test: ui-tests/node_modules/.stamp $(STAMPS)/package
	cd ui-tests && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npx playwright test $(UI_TEST_ARGS)

# Not part of `make test`: the panel under a synthetic 256-rank run, each tab in turn (long
# tasks, frame delay, latency). BENCH_LINES_PER_SECOND, BENCH_RANKS, BENCH_SECONDS_PER_TAB,
# BENCH_TABS and BENCH_CPU_THROTTLE change it (see benchmarks/bench_panel.spec.ts).
bench-panel: ui-tests/node_modules/.stamp $(STAMPS)/package
	cd ui-tests && NODE_PATH=$(abspath ui-tests/node_modules) PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
	  npx playwright test --config playwright.bench.config.ts

# ---- helpers -----------------------------------------------------------------
# Rewrite the shared wire fixtures (tests/wire/*.json and tests/ts/wire.fixtures.ts) from the
# Python code after a deliberate change of the JSON; `npm run lint` then type-checks them.
wire-fixtures: $(STAMPS)/deps-test
	UPDATE_WIRE_FIXTURES=1 $(BIN)/pytest tests/python/test_wire.py -q

# A wheel built from scratch: the hatch hook rebuilds the extension with npm.
wheel: $(STAMPS)/build-tools
	npm run clean
	$(PIP) wheel --no-deps -w dist .

clean:
	npm run clean
	rm -rf dist build $(STAMPS)/package

distclean: clean
	rm -rf $(VENV) node_modules
