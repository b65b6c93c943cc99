# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo tour loop-demo edit-check test test-slow test-all lint study-quick bench clean

# [llamacpp] builds llama-cpp-python from source the first time (~3 min, cmake and a C++ compiler);
# pip keeps the wheel, so later installs take seconds.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e ".[train,eval,dev,llamacpp]"
	$(BIN)/harnessctl model fetch smollm2-135m
	touch $(STAMP)

demo: $(STAMP)
	bash scripts/demo.sh

tour: $(STAMP)
	bash scripts/tour.sh

loop-demo: $(STAMP)
	PYTHON=$(BIN)/python bash scripts/loop_demo.sh

# The shipped models under the shipped harness, this week's edit and a held-out variant (200
# livestream cases each; LIMIT=40 for a quicker look).
edit-check: $(STAMP)
	bash scripts/edit_check.sh

# Unit and integration tests; the slow end-to-end ones (marked `slow`: whole studies, the demo
# scripts, runs killed and resumed, the real SmolLM2 base) run in `make test-slow` / `make test-all`.
test: $(STAMP) lint
	$(BIN)/python -m pytest -q -n 2 -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m slow

test-all: $(STAMP) lint
	$(BIN)/python -m pytest -q -n 2

# The HAT study's --quick preset end to end (every arm trained and evaluated), from scratch in
# out/study-quick; CI runs it after the tests (.ci/run).
study-quick: $(STAMP)
	rm -rf out/study-quick
	$(BIN)/harnessctl experiment hat --quick --out out/study-quick

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f; done

clean:
	rm -rf $(VENV) runs .pytest_cache
