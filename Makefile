# mdlnb — the two commands are `make reproduce` and `make test`.
# Set-up is idempotent: a second run with nothing changed takes seconds.

PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
LAB_STAMP := $(VENV)/.lab-installed
FMNIST  := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
CHROMEDRIVER := $(firstword $(wildcard /usr/bin/chromedriver /usr/lib/chromium/chromedriver))
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PROFILE ?= default
PYTEST_ARGS ?= -n 2
JOBS        ?= 2

# The notebooks (notebooks/NAME.py, those starting with _ excluded), their executed
# copies and HTML renderings, and what each depends on: its source, its own entry of
# notebooks/profiles.yaml (a stamp rewritten only when that entry changes) and the library.
NOTEBOOKS := $(filter-out _%,$(basename $(notdir $(wildcard notebooks/*.py))))
NB_DIR    := build/notebooks/$(PROFILE)
PARAMS    := $(NB_DIR)/.params
EXECUTED  := $(NOTEBOOKS:%=$(NB_DIR)/%.ipynb)
HTML      := $(NOTEBOOKS:%=$(NB_DIR)/%.html)
LIBRARY   := $(shell find mdlnb -name '*.py' -not -path '*/__pycache__/*')
PAPER_DIR  = $(if $(filter smoke,$(PROFILE)),build/paper-smoke,paper)
START     := $(shell date +%s)

# Refresh the profile stamps while the Makefile is read (so `make -n` sees them too);
# the runner rewrites a stamp only when its notebook's entry changed.
ifneq ($(wildcard $(BIN)/python),)
PARAMS_ERR := $(shell $(BIN)/python -m mdlnb.tools.runner --write-params 2>&1 >/dev/null | tail -1)
$(if $(PARAMS_ERR),$(warning notebooks/profiles.yaml: $(PARAMS_ERR)))
endif

.PHONY: setup data-packages browser-packages encoders pretrain reproduce notebooks test smoke bench lab clean \
        lint format
.DELETE_ON_ERROR:

setup: $(STAMP) data-packages

# Debian data packages the embedded tasks read (Fashion-MNIST).
data-packages:
	@test -f $(FMNIST) || { \
	  echo ">> installing Debian package dataset-fashion-mnist"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dataset-fashion-mnist; }

# Debian's headless browser for tests/test_lab.py, which opens JupyterLab as a person
# does (selenium, from the test extra, drives it); `make test` installs it.
browser-packages:
	@test -n "$(CHROMEDRIVER)" || { \
	  echo ">> installing Debian packages chromium chromium-driver"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver; }

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[test]"
	@touch $(STAMP)

# One notebook: executed by papermill in batch mode (mdlnb.tools.runner), written only on
# success; reruns when its source, its profile entry or any library file changed.
# --paper: its figures and tables go into the committed paper/ (smoke: build/paper-smoke).
$(NB_DIR)/%.ipynb: notebooks/%.py $(PARAMS)/%.json $(LIBRARY) | $(STAMP) data-packages
	$(BIN)/python -m mdlnb.tools.runner --profile $(PROFILE) $(if $(filter smoke,$(PROFILE)),,--paper) $*

$(NB_DIR)/%.html: $(NB_DIR)/%.ipynb
	$(BIN)/python -m mdlnb.tools.runner --html $<

# A fresh checkout has no stamps yet (the venv did not exist when this file was read).
$(PARAMS)/%.json: | $(STAMP)
	$(BIN)/python -m mdlnb.tools.runner --write-params

# objectives, scaling and readout_preference read one grid of mdlnb.studies.encoder_grid
# (tests/test_notebooks.py checks their overrides agree). Its pair files are written
# without a lock, so under `make -j` the other two wait for objectives, which computes
# it; they then read every pair from the cache (order-only: no extra reruns).
$(NB_DIR)/scaling.ipynb $(NB_DIR)/readout_preference.ipynb: | $(NB_DIR)/objectives.ipynb

notebooks: $(EXECUTED) $(HTML)

# Targets made by chained pattern rules are not intermediate files: keep them.
.SECONDARY: $(EXECUTED) $(NOTEBOOKS:%=$(PARAMS)/%.json)

# The self-pretrained encoders are committed artifacts (artifacts/encoders/: weights,
# provenance with SHA-256, probe curves), and so are the checkpoint zoo built from their
# runs (artifacts/zoo/) and the fine-tuning ground truth of the transferability study
# (artifacts/finetune/). `make encoders` checks all three (every reproduce does);
# `make encoders RETRAIN=1` trains all of them again from scratch into
# build/*-retrain (hours on a CPU) and checks that the bytes are the same;
# `make pretrain` trains those not committed yet (resumable: rerun after an interruption).
ENCODER_ARTIFACTS := $(wildcard artifacts/encoders/*)

encoders: setup
ifeq ($(RETRAIN),1)
	$(BIN)/python -m mdlnb.studies.pretraining train --retrain --into build/encoders-retrain
	$(BIN)/python -m mdlnb.studies.pretraining verify --against build/encoders-retrain
	$(BIN)/python -m mdlnb.studies.zoo build --rebuild --into build/zoo-retrain
	$(BIN)/python -m mdlnb.studies.zoo verify --against build/zoo-retrain
	$(BIN)/python -m mdlnb.studies.transferability finetune --rebuild --into build/finetune-retrain
	$(BIN)/python -m mdlnb.studies.transferability verify --against build/finetune-retrain
else
	$(BIN)/python -m mdlnb.studies.pretraining verify
	$(BIN)/python -m mdlnb.studies.zoo verify
	$(BIN)/python -m mdlnb.studies.transferability verify
endif

pretrain: setup
	$(BIN)/python -m mdlnb.studies.pretraining train

$(NB_DIR)/pretraining.ipynb: $(ENCODER_ARTIFACTS)
$(NB_DIR)/transferability_baselines.ipynb: $(ENCODER_ARTIFACTS) $(wildcard artifacts/zoo/*) \
	$(wildcard artifacts/finetune/*)

# Regenerate every table and figure in paper/ (PROFILE=default|smoke|full): check every
# entry of notebooks/profiles.yaml first (a bad one stops before any notebook), rerun the
# notebooks that changed, JOBS (2) at a time (most notebooks keep one core busy), merge
# paper/claims.md and paper/README.md from what the notebooks wrote, print the
# per-notebook wall time and the committed paper/*.csv numbers that moved beyond the
# tolerance of mdlnb/research/_paperdiff.py.
reproduce: setup encoders
	$(BIN)/python -m mdlnb.tools.runner --check
	@$(MAKE) --no-print-directory -j$(JOBS) notebooks
	$(BIN)/python -m mdlnb.research.claims $(PAPER_DIR)
	$(BIN)/python -m mdlnb.research.manifest $(PAPER_DIR)
	@$(BIN)/python -m mdlnb.tools.runner --summary --profile $(PROFILE) --since $(START) \
	  $(if $(filter smoke,$(PROFILE)),,--paper --compare-to-git HEAD)

# Every notebook's smoke profile (seconds each) into build/notebooks/smoke and
# build/paper-smoke; the notebook tests check what these runs wrote.
smoke: setup
	@$(MAKE) --no-print-directory reproduce PROFILE=smoke

# The lab extra and the browser too: tests/test_lab.py opens the notebooks in JupyterLab.
# Lint first: seconds, and a style slip fails before the notebooks run.
test: lint smoke browser-packages $(LAB_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff's linter and formatter (configured in pyproject.toml: [tool.ruff]) over the tree, and
# mypy ([tool.mypy]: the public API and the two stages). `make format` applies what ruff can
# fix by itself (import order, pyupgrade spellings) and the formatter.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: setup
	$(BIN)/python -m benchmarks $(BENCH)

$(LAB_STAMP): pyproject.toml | $(STAMP)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[lab]"
	@touch $@

# JupyterLab on notebooks/: jupyter/labconfig makes jupytext's notebook view the default
# viewer of .py files (a double click opens a notebook, not the text editor; your own
# ~/.jupyter settings still win); jupyter/jupyter_server_config.json saves a notebook
# opened from a .py to the student's copy build/lab/notebooks/NAME.ipynb, outputs
# included, never to the tracked .py (mdlnb/tools/runner/_lab.py). Root (containers, CI
# machines) needs --allow-root.
LAB_ENV := JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))

lab: setup $(LAB_STAMP)
	$(LAB_ENV) $(BIN)/jupyter lab --notebook-dir=notebooks $(if $(SUDO),,--allow-root)

clean:
	rm -rf build .pytest_cache .hypothesis $(VENV)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
