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

.PHONY: demo test test-fast venv bench clean

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

test: $(TEST_STAMP)
	$(PY) -m pytest -q --durations=40 $(PYTEST_ARGS)

bench: $(DEMO_STAMP)
	$(PY) benchmarks/bench_lfs.py

clean:
	rm -rf $(VENV) output data spark-warehouse .pytest_cache

# The JVM-free tier for the inner loop (core maths, refusals before Spark, reports): `-m "not spark"`,
# with a JVM start failing the test at once (tests/conftest.py). `make test` stays the full suite.
test-fast: $(TEST_STAMP)
	SPARKFS_TEST_TIER=fast $(PY) -m pytest -q -m "not spark" $(PYTEST_ARGS)
