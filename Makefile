# Two entry points (see README): `make demo` and `make test`. Each creates/updates .venv itself.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# One stamp per install: `make demo` installs sparkfs alone (its runtime dependencies), `make test`
# sparkfs with the dev extras. A demo install never stands for a test install, nor the reverse.
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: demo test test-fast venv bench clean pack dist

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(DEMO_STAMP)

$(TEST_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(TEST_STAMP)

venv: $(TEST_STAMP)

demo: $(DEMO_STAMP)
	$(PY) -m sparkfs.io.datasets data/digits.libsvm
	$(VENV)/bin/spark-submit --master "local[2]" \
	  --driver-java-options "-Dlog4j.configurationFile=file:$(CURDIR)/conf/log4j2.properties" \
	  jobs/select_features.py --config conf/demo.yaml

# Two pytest workers (pytest-xdist), each taking whole test modules (--dist loadfile: a module's
# cluster, Connect server or child JVM is started once, in one worker), in the order tests/conftest.py
# gives them (the modules with a slow test first; xdist would otherwise hand out the largest modules first
# and leave the one-test Connect sub-suite to run alone at the end).
TEST_WORKERS ?= 2
test: $(TEST_STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=40 $(PYTEST_ARGS)

bench: $(DEMO_STAMP)
	$(PY) -m benchmarks.bench_lfs

clean:
	rm -rf $(VENV) output data spark-warehouse .pytest_cache

# The JVM-free tier for the inner loop (core maths, refusals before Spark, reports): `-m "not spark"`,
# with a JVM start failing the test at once (tests/conftest.py). `make test` stays the full suite.
test-fast: $(TEST_STAMP)
	SPARKFS_TEST_TIER=fast $(PY) -m pytest -q -m "not spark" $(PYTEST_ARGS)

# The executors' Python environment for a cluster (README, "On a cluster"; docs/cluster.md):
# sparkfs from a wheel plus its runtime dependencies, without pyspark (the cluster's Spark has its own).
# Use it with --conf spark.archives=dist/sparkfs-env.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python
pack: $(TEST_STAMP)
	$(PY) tools/pack_env.py --output dist/sparkfs-env.tar.gz

# The wheel and the sdist in dist/, checked (twine check): what a cluster or Databricks installs from.
dist: $(TEST_STAMP)
	rm -f dist/sparkfs-[0-9]*.whl dist/sparkfs-[0-9]*.tar.gz
	$(PY) -m build --outdir dist .
	$(PY) -m twine check --strict dist/sparkfs-[0-9]*.whl dist/sparkfs-[0-9]*.tar.gz
