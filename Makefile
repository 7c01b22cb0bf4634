# Two commands do all the set-up: `make demo` and `make test`. Both are
# idempotent: they create the virtualenv, install bedtools and check Java
# only when something is missing.

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test bench system-deps clean

demo: $(STAMP)
	$(BIN)/tfbs demo --config conf/demo.yaml

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

system-deps:
	@bash scripts/system_deps.sh

$(STAMP): setup.py | system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,airflow]'
	@touch $(STAMP)

clean:
	rm -rf build $(VENV) *.egg-info
