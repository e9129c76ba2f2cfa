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
# Debian packages the tests need, installed (after `apt-get update`) only when
# one is missing, e.g. APT_PACKAGES += openmpi-bin libopenmpi-dev chromium
APT_PACKAGES ?= openmpi-bin libopenmpi-dev
# torch for the tests: the CPU build, pinned. An unpinned or newer torch pulls
# the CUDA build and its NVIDIA packages.
TORCH_SPEC ?= torch==2.13.0
# Extra arguments: `make lab LAB_ARGS="--port 9999"`, `make test PYTEST_ARGS="-k server"`.
LAB_ARGS ?=
PYTEST_ARGS ?=
# The steps of `make test`, in order; the first failure stops the run. A new
# step (say the Galata UI tests in tests/ui) is a target here plus its name below.
TEST_STEPS ?= ruff mypy ts-lint ts-test pytest ui-test

# ---- paths -------------------------------------------------------------------
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
PIP := $(PY) -m pip
STAMPS := $(VENV)/.stamps
TORCH_STAMP := $(STAMPS)/$(subst =,-,$(subst $(eval) ,,$(TORCH_SPEC)))
LABEXT := python/jupyter_distributed/labextension
# Tools installed in the venv (jupyter-builder, jupyter, ...) come first on PATH,
# for npm scripts too.
export PATH := $(abspath $(BIN)):$(PATH)

# Inputs of each step.
TS_INPUTS := package.json tsconfig.json tsconfig.build.json $(shell find labextension/src labextension/style -type f)
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

.PHONY: help lab test system clean distclean wheel $(TEST_STEPS)

help:
	@echo "make lab    set up .venv and open JupyterLab on examples/ (LAB_ARGS=... for more)"
	@echo "make test   set up .venv, build the extension, run all checks (PYTEST_ARGS=...)"
	@echo "helpers:    system, wheel (to dist/), clean (build outputs), distclean (+ .venv, node_modules)"

# ---- the two user commands ---------------------------------------------------
lab: system $(STAMPS)/deps-lab $(STAMPS)/package
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS) examples/

test: system $(TORCH_STAMP) $(STAMPS)/deps-test $(STAMPS)/package $(TEST_STEPS)

# ---- set-up ------------------------------------------------------------------
# Debian packages (APT_PACKAGES, plus python3-venv where `venv` lacks ensurepip)
# and a Node.js recent enough for the extension builder.
system:
	@missing=""; \
	$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || missing="python3-venv"; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q '^install ok installed$$' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$${missing// }" ]; then \
	  echo "apt-get install:$$missing"; \
	  apt-get update; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi
	@command -v node >/dev/null && command -v npm >/dev/null \
	  || { echo "error: Node.js >= 20.19 with npm is needed to build the lab extension" >&2; exit 1; }
	@node -e "$$NODE_CHECK" \
	  || { echo "error: Node.js $$(node --version) is too old: the builder needs ^20.19 or >=22.12" >&2; exit 1; }

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

# Installed after torch, so nothing in it can pull another torch.
$(STAMPS)/deps-test: pyproject.toml | $(PY) $(TORCH_STAMP)
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

ts-lint:
	npm run --silent lint

ts-test:
	npm test

pytest:
	$(BIN)/pytest $(PYTEST_ARGS)

# Browser tests (Galata in tests/ui) go here; none yet.
ui-test:
	@true

# ---- helpers -----------------------------------------------------------------
# A wheel built from scratch: the hatch hook rebuilds the extension with npm.
wheel: $(STAMPS)/build-tools
	npm run clean
	$(PIP) wheel --no-deps -w dist .

clean:
	npm run clean
	rm -rf dist build $(STAMPS)/package

distclean: clean
	rm -rf $(VENV) node_modules
