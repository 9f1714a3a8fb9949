# Two entry points for a fresh machine (see README.md):
#   make demo   simulated rover explores a real elevation field over real ROS 2 topics
#   make test   the test suite (what CI runs through .ci/run)
# Both create the virtual environment in $(VENV) on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_ARGS ?=

.PHONY: venv demo test bench clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q --upgrade pip setuptools wheel
	# torch first, pinned: pip takes the local CPU wheel (no multi-GB CUDA download)
	$(BIN)/pip install --disable-pip-version-check -q torch==2.13.0
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.txt
	# the package itself, editable; its dependencies (pyproject.toml) are all pinned in requirements.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/uncertain-bo demo $(DEMO_ARGS)

# how long the whole suite takes on 2 cores (README.md, "Tests", says the same; measured on the CI machine)
TEST_MINUTES := 8.5

test: $(STAMP)
	@echo "make test: the whole suite takes about $(TEST_MINUTES) min on 2 cores; at the end it lists the 15 slowest tests and why each skipped test was skipped"
	$(BIN)/python -m pytest -q --durations=15 test

bench: $(STAMP)
	$(BIN)/python bench/decision_latency.py

clean:
	rm -rf $(VENV) build *.egg-info
