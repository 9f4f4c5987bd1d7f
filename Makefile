# fairaudit — the two commands in the README:
#   make demo   set up .venv, install fairaudit, audit the bundled example data
#   make test   set up .venv with the test extras, run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: demo test install install-test lint bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "fairaudit needs Python >= 3.11 (set PYTHON=python3.11)"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	@# the distribution was called "fairaudit" before it became "fairaudit-clusters" (the name
	@# "fairaudit" on the package index is another project): drop a stale copy from old venvs
	@$(PIP) uninstall --quiet --yes fairaudit >/dev/null 2>&1 || true
	$(PIP) install --quiet -e ".[all]"
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed examples/fairaudit-example-plugin/pyproject.toml
	$(PIP) install --quiet -e ".[all,test]"
	$(PIP) install --quiet -e examples/fairaudit-example-plugin
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/fairaudit audit examples/data/adult_sample.parquet --sensitive sex,race \
		--out fairaudit-report.html --json fairaudit-report.json

test: $(VENV)/.installed-test
	$(BIN)/ruff check fairaudit plugins tests benchmarks examples
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check fairaudit plugins tests benchmarks examples
	$(BIN)/ruff format --check fairaudit plugins tests

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_audit.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis tests/artifacts dist build
