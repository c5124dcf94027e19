"""The method registry drives the per-method tests (issue 35): every method has facts and a family
(its code path), and every per-method test covers every family, so a method added to the registry
in a new family fails here until those tests run it."""

import pytest

from sparkfs.methods import FAMILIES, METHOD_FACTS, METHODS, family_of


def test_every_method_has_facts_and_a_family():
    assert set(FAMILIES) == set(METHODS) == set(METHOD_FACTS)


@pytest.mark.parametrize("module, table", [
    ("tests.integration.test_bad_input_matrix", "METHODS"),
    ("tests.spark.test_partition_property", "FAMILIES"),
])
def test_each_per_method_test_covers_every_family(module, table):
    import importlib

    pytest.importorskip("hypothesis")
    methods = getattr(importlib.import_module(module), table)
    assert set(methods) <= set(METHODS), f"{module}.{table} names unknown methods"
    missing = set(FAMILIES.values()) - {family_of(method) for method in methods}
    assert not missing, f"{module}.{table} runs no method of the families {sorted(missing)}: add one"
