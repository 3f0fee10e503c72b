# mdlnb — the two commands are `make reproduce` and `make test`.
# Set-up is idempotent: a second run with nothing changed takes seconds.

PYTHON  ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
FMNIST  := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PROFILE ?= default
NOTEBOOKS := $(basename $(notdir $(wildcard notebooks/*.py)))
PYTEST_ARGS ?= -n 2

.PHONY: setup data-packages reproduce test bench lab clean smoke

setup: $(STAMP) data-packages

# Debian data packages the embedded tasks read (Fashion-MNIST).
data-packages:
	@test -f $(FMNIST) || { \
	  echo ">> installing Debian package dataset-fashion-mnist"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq dataset-fashion-mnist; }

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[test]"
	@touch $(STAMP)

# Regenerate every table and figure in paper/ (PROFILE=default|smoke|full), then list
# the committed paper/*.csv numbers that moved (tolerance: mdlnb/_paperdiff.py).
# paper/claims.md and paper/README.md are merged from what the notebooks wrote.
PAPER_DIR = $(if $(filter smoke,$(PROFILE)),build/paper-smoke,paper)
reproduce: setup
	$(BIN)/python -m mdlnb.runner --profile $(PROFILE) --compare-to-git HEAD $(NOTEBOOKS)
	$(BIN)/python -m mdlnb.claims $(PAPER_DIR)
	$(BIN)/python -m mdlnb.manifest $(PAPER_DIR)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python -m benchmarks $(BENCH)

lab: setup
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[lab]"
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(SUDO),,--allow-root)

clean:
	rm -rf build .pytest_cache .hypothesis $(VENV)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
