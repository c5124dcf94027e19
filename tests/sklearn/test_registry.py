"""The front tied to the method registry and to the layer rules.

* Every ``--method`` of ``sparkfs.methods.METHODS`` has a front (``FRONT``, or a filter of
  ``MOMENT_FILTERS`` served by ``MomentFilterSelector``) or is in ``NOT_YET`` with a reason; nothing
  else is in either list; docs/sklearn.md names each method in the list it is in.
* ``sparkfs/sklearn`` imports of sparkfs only ``core``, ``errors`` and itself, and no pyspark (the
  architecture's layer check, with the same import collector as tests/test_layers.py).
* Fitting and transforming with every front starts no JVM (a child process in which starting one
  fails).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sparkfs.core.moment_filters import MOMENT_FILTERS
from sparkfs.methods import METHODS
from sparkfs.selectors.baseline import UnivariateTestSelector
from sparkfs.sklearn import FRONT, NOT_YET
from sparkfs.sklearn.filters import is_class_filter
from tests.test_layers import imports_of, is_under, source_files

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "sklearn.md"


def _is_moment_filter(method):
    selector_class, fixed = METHODS[method]
    test = fixed.get("test")
    return selector_class is UnivariateTestSelector and test in MOMENT_FILTERS and is_class_filter(test)


def test_every_registry_method_has_a_front_or_is_listed_as_not_yet():
    missing = [m for m in METHODS if m not in FRONT and m not in NOT_YET and not _is_moment_filter(m)]
    assert not missing, f"methods neither in the front nor in NOT_YET (sparkfs/sklearn/registry.py): {missing}"
    assert not set(FRONT) & set(NOT_YET)
    assert set(FRONT) | set(NOT_YET) <= set(METHODS), "names in the front that are not methods"
    assert all(reason.strip() for reason in NOT_YET.values())


@pytest.mark.parametrize("method", sorted(FRONT))
def test_each_front_is_the_method_it_is_listed_as(method):
    estimator = FRONT[method]()
    assert estimator.method == method
    selector = METHODS[method][0]()
    selector._set(**METHODS[method][1])
    assert estimator.has_p_values == selector.hasPValues()
    assert estimator.requires_labels == selector.requires_labels


def _doc_section(title):
    text = DOC.read_text(encoding="utf-8")
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_doc_lists_the_methods_covered_and_the_ones_not_yet():
    covered, not_yet = _doc_section("Methods covered"), _doc_section("Not yet")
    for method in FRONT:
        assert f"`{method}`" in covered, method
    for method, _ in NOT_YET.items():
        assert f"`{method}`" in not_yet, method
    if NOT_YET:
        assert not re.search(r"`(" + "|".join(map(re.escape, NOT_YET)) + r")`", covered)


ALLOWED = ["sparkfs.sklearn", "sparkfs.core", "sparkfs.errors"]
FORBIDDEN = ["pyspark", "pyarrow", "py4j"]


def test_the_front_imports_only_core_and_no_spark():
    files = source_files("sklearn")
    assert files
    violations = []
    for path in files:
        for line, name, names in imports_of(path):
            targets = [f"sparkfs.{n}" for n in names] if name == "sparkfs" else [name]
            for target in targets:
                if is_under(target, "sparkfs") and not any(is_under(target, a) for a in ALLOWED):
                    violations.append(f"{path.name}:{line} imports {target}")
                if any(is_under(target, f) for f in FORBIDDEN):
                    violations.append(f"{path.name}:{line} imports {target}")
    assert not violations, violations


_NO_JVM = """
import numpy as np
import pyspark.java_gateway
def refuse(*args, **kwargs):
    raise RuntimeError("a JVM was started")
pyspark.java_gateway.launch_gateway = refuse
import sparkfs.sklearn
from pyspark import SparkContext
rng = np.random.default_rng(0)
X, y = np.round(3 * np.abs(rng.normal(size=(40, 5)))), rng.integers(0, 2, 40)  # counts: chi2-categorical takes them
for name, front in sorted(sparkfs.sklearn.FRONT.items()):
    front(num_features=2).fit(X, y).transform(X)
assert SparkContext._gateway is None and SparkContext._active_spark_context is None
print("no JVM")
"""


_NO_PYSPARK = """
import sys
import numpy as np
import sparkfs.sklearn
rng = np.random.default_rng(0)
X, y = np.round(3 * np.abs(rng.normal(size=(40, 5)))), rng.integers(0, 2, 40)  # counts: chi2-categorical takes them
for name, front in sorted(sparkfs.sklearn.FRONT.items()):
    front(num_features=2).fit(X, y).transform(X)
loaded = sorted(name for name in sys.modules if name.split(".")[0] == "pyspark" or name.startswith("sparkfs.spark")
                or name.startswith("sparkfs.selectors"))
assert not loaded, loaded
print("no pyspark")
"""


def test_the_front_imports_no_pyspark_at_all():
    """`import sparkfs.sklearn` and every fit load neither pyspark nor the Spark layers (the package's
    Estimators are imported only when asked for: sparkfs/__init__.py)."""
    run = subprocess.run([sys.executable, "-c", _NO_PYSPARK], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0 and "no pyspark" in run.stdout, run.stderr[-3000:]


def test_fitting_every_front_starts_no_jvm():
    run = subprocess.run([sys.executable, "-c", _NO_JVM], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0 and "no JVM" in run.stdout, run.stderr[-3000:]
