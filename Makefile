# Every target bootstraps its own virtualenv; nothing relies on a hand-made install.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup system browser curl run test lint format bench mutation scenario clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[dev]'  # no setuptools build chatter
	$(BIN)/python -m compileall -q signal_eval_cli  # an editable install gets no bytecode from pip
	touch $(STAMP)

# Exit 1 means "ran, and some cases failed": the example fails one case on purpose
# (datasets/README.md says which and why). Input errors (2) and Ctrl-C (130) still fail.
run: setup
	@$(BIN)/signal-eval run datasets/code-review.yaml --output results/code-review.json; \
	status=$$?; if [ $$status -eq 1 ]; then echo "(exit 1: cases failed, as the example intends: see datasets/README.md)"; fi; \
	[ $$status -le 1 ]

scenario: setup
	$(BIN)/signal-eval scenario backend-api-opt

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The HTML report's tests drive Debian's chromium (Playwright never downloads a browser);
# the model proxy's tests run curl in a subprocess (a minimal image may lack it). What is
# missing is installed in one apt call; CI runs as root, elsewhere sudo.
SYSTEM_PACKAGES = chromium curl
system:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do command -v $$p >/dev/null 2>&1 || echo $$p; done); \
	[ -z "$$missing" ] || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; }
browser curl: system

# The system packages download beside pip's wheels (both mostly wait on the network). Three
# pytest workers on two cores: many tests wait on subprocesses, loopback servers or the
# browser, and a third worker runs while they wait (the tests must pass on busy cores).
test:
	$(MAKE) -j2 --no-print-directory setup system
	$(MAKE) --no-print-directory lint
	$(BIN)/python -m pytest -n 3

bench: setup
	for b in bench/*.py; do [ $$b = bench/mutation.py ] || { echo "== $$b"; $(BIN)/python $$b || exit 1; }; done

# The engine's mutation score (issue 19): about 15–20 minutes on 2 busy cores.
mutation: setup
	$(BIN)/python bench/mutation.py

clean:
	rm -rf $(VENV) results test-artifacts .mutation-cache .pytest_cache .mypy_cache .ruff_cache .hypothesis
