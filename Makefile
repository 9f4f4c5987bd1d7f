# fairaudit — the two commands in the README:
#   make demo   set up .venv, install fairaudit, audit the bundled example data
#   make test   set up .venv with the test extras, run the suite (in parallel) but the slow
#               statistical simulations; `make test-slow` runs those (CI runs both: .ci/run)
# Both install the pinned versions of constraints/test.txt (the versions the goldens were made
# with); library users get the ranges of pyproject.toml. `make lock` refreshes the pins.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
CONSTRAINTS := constraints/test.txt
# pytest-xdist workers: one per core ("auto"); PYTEST_WORKERS=0 runs in one process
PYTEST_WORKERS ?= auto

.PHONY: demo test test-slow test-all install install-test lint bench lock clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "fairaudit needs Python >= 3.11 (set PYTHON=python3.11)"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml $(CONSTRAINTS)
	@# the distribution was called "fairaudit" before it became "fairaudit-clusters" (the name
	@# "fairaudit" on the package index is another project): drop a stale copy from old venvs
	@$(PIP) uninstall --quiet --yes fairaudit >/dev/null 2>&1 || true
	$(PIP) install --quiet -c $(CONSTRAINTS) -e ".[all]"
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed examples/fairaudit-example-plugin/pyproject.toml
	$(PIP) install --quiet -c $(CONSTRAINTS) -e ".[all,test]"
	$(PIP) install --quiet -c $(CONSTRAINTS) -e examples/fairaudit-example-plugin
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/fairaudit audit examples/data/adult_sample.parquet --sensitive sex,race \
		--out fairaudit-report.html --json fairaudit-report.json

# every test but those marked slow: the coverage simulations of the intervals and of the
# published release (thousands of audits each), which cost more CPU than the rest together
test: $(VENV)/.installed-test
	$(BIN)/ruff check fairaudit plugins tests benchmarks examples
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "not slow"

# the slow simulations alone (CI runs them after `make test`)
test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m slow

# everything, in one pytest run
test-all: $(VENV)/.installed-test
	$(BIN)/ruff check fairaudit plugins tests benchmarks examples
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check fairaudit plugins tests benchmarks examples
	$(BIN)/ruff format --check fairaudit plugins tests

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_audit.py

# Refresh constraints/test.txt: resolve pyproject.toml's ranges (core + every extra + test + the example
# plugin) in a fresh virtualenv and pin what was installed. Review the diff, run `make test`
# and regenerate the goldens only if a value moved for a reason you understand.
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet -e ".[all,test]" -e examples/fairaudit-example-plugin
	mkdir -p constraints
	{ echo "# Pinned test environment: made by \`make lock\` on $$(date -u +%F) with $$(.venv-lock/bin/python -V)"; \
	  echo "# on $$(uname -sm); \`make demo\`, \`make test\` and .ci/run install from it (pip -c)."; \
	  .venv-lock/bin/python -m pip freeze --exclude-editable | grep -v -i '^fairaudit'; } > $(CONSTRAINTS)
	rm -rf .venv-lock
	@echo "wrote $(CONSTRAINTS)"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis tests/artifacts dist build
