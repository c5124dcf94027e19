"""The method registry drives the per-method tests: every method has facts and a family
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


def _connect_modules():
    from pathlib import Path

    folder = Path(__file__).resolve().parent / "connect"
    return [f"tests.connect.{path.stem}" for path in sorted(folder.glob("test_*.py"))]


def test_what_sparkfs_methods_says_of_connect_is_what_the_connect_tests_run():
    """A method is "tested" on Spark Connect in `sparkfs methods` exactly when a module of
    tests/connect runs it (each declares CONNECT_METHODS), and every family has one there."""
    import importlib

    tested = set()
    for module in _connect_modules():
        declared = getattr(importlib.import_module(module), "CONNECT_METHODS", None)
        assert declared is not None, f"{module} declares no CONNECT_METHODS (the methods it runs on Connect)"
        tested |= set(declared)
    assert tested <= set(METHODS), sorted(tested - set(METHODS))
    said = {method for method, facts in METHOD_FACTS.items() if facts.connect == "tested"}
    assert said == tested, (f"said tested but not run on Connect: {sorted(said - tested)}; run on Connect but "
                            f"not said: {sorted(tested - said)}")
    missing = set(FAMILIES.values()) - {family_of(method) for method in tested}
    assert not missing, f"no method of the families {sorted(missing)} runs on Connect"
