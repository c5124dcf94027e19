"""Where a Param is written more than once, the copies agree: each Estimator's keyword
signature against its Params and their defaults, each scikit-learn estimator's Params against the
Spark selector's, and each method's options object against the selector that builds it.

The Estimators' constructors are generated from their Params (``keyword_constructor``): a signature
default of None means "unset" (the Param's default applies, or the selector decides from the data
or the preset: numFeatures, selectionMode, Lmba's run, Relief's metric and scaling); any other
default is the Param's. No JVM: Params are plain Python until a fit."""

import dataclasses
import inspect

import pytest

from sparkfs.core import options as method_options
from sparkfs.methods import METHODS, _camel
from sparkfs.selectors.instance_weighting import MarginInstanceWeighter
from sparkfs.sklearn import FRONT

ESTIMATORS = sorted({cls for cls, _ in METHODS.values()} | {MarginInstanceWeighter}, key=lambda cls: cls.__name__)

#: Options fields whose default differs from the selector's Param, and why: the options are the Spark
#: function's, called by scripts and tests with their own defaults; the selector always passes its value.
OPTIONS_DEFAULTS_DIFFER = {
    ("ReliefOptions", "scaling"): "relief_statistics' default is the data as given; the selector's preset chooses",
    ("SVMRFEOptions", "max_iter"):
        "the Spark solver's own iteration cap; the selector's unset maxIter picks per solver",
    ("SVMRFEOptions", "tol"): "the Spark solver's tolerance; the selector's unset tol picks per solver",
    ("SVMRFEOptions", "halve_above"): "svm_rfe_statistics removes `step` per round unless asked; the selector halves",
    ("SVMRFEOptions", "standardize"): "svm_rfe_statistics fits the rows as given; the selector standardises",
}
#: method whose selector builds each options class.
OPTIONS_OF = {"ReliefOptions": "relieff", "MultiSURFOptions": "multisurf", "LmbaOptions": "lmba",
              "SimbaOptions": "simba", "InformationOptions": "mrmr", "ParzenISEOptions": "parzen-ise",
              "SVMRFEOptions": "svm-rfe"}


def _param_default(selector, name):
    return selector.getOrDefault(name) if selector.hasDefault(name) or selector.isSet(name) else None


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_the_constructor_takes_every_param_with_its_default(cls):
    """keyword_constructor: every Param a keyword but those the method refuses (``_not_keywords``);
    the signature's default is the Param's, None where the unset state decides (declared
    ``unset_decides``, or named in ``_unset_keywords``)."""
    keywords = {name: parameter for name, parameter in inspect.signature(cls.__init__).parameters.items()
                if name != "self"}
    assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY for parameter in keywords.values())
    selector = cls()
    params = {param.name for param in selector.params}
    not_keywords = set().union(*(getattr(klass, "_not_keywords", ()) for klass in cls.__mro__))
    unset = set().union(*(getattr(klass, "_unset_keywords", ()) for klass in cls.__mro__)) | {
        param.name for param in selector.params if getattr(param, "unset_decides", False)}
    assert set(keywords) == params - not_keywords and not_keywords <= params
    for name, parameter in keywords.items():
        expected = None if name in unset or not selector.hasDefault(name) else selector.getOrDefault(name)
        assert parameter.default == expected, name
        assert cls(**{name: parameter.default}).isSet(name) is (parameter.default is not None), name
    if "weightCol" in not_keywords:  # left out because the method refuses weights
        assert not getattr(cls, "takes_weights", False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'noSuchParam'"):
        cls(noSuchParam=1)


@pytest.mark.parametrize("method", sorted(FRONT))
def test_the_front_has_the_spark_selectors_params_and_defaults(method):
    selector_class, fixed = METHODS[method]
    selector = selector_class()
    selector._set(**fixed)
    for name, value in FRONT[method]().get_params().items():
        camel = {"driver_memory_mb": "driverMemoryMB"}.get(name, _camel(name))
        assert selector.hasParam(camel), f"{name}: the Spark selector has no Param {camel}"
        assert value is None or value == _param_default(selector, camel), name


@pytest.mark.parametrize("options_name", sorted(OPTIONS_OF))
def test_each_options_field_has_its_params_default_or_a_stated_reason(options_name):
    selector_class, fixed = METHODS[OPTIONS_OF[options_name]]
    selector = selector_class()
    selector._set(**fixed)
    differ = []
    for field in dataclasses.fields(getattr(method_options, options_name)):
        camel = _camel(field.name)
        if field.default is dataclasses.MISSING or not selector.hasParam(camel):
            continue  # required, or a setting the selector derives (not a Param of its own)
        if field.default != _param_default(selector, camel):
            differ.append(field.name)
    stated = sorted(field for options, field in OPTIONS_DEFAULTS_DIFFER if options == options_name)
    assert sorted(differ) == stated


#: pyspark's shared column Params (``HasFeaturesCol`` ...), declared by pyspark; sparkfs gives their defaults.
PYSPARK_SHARED = {"featuresCol", "labelCol", "outputCol", "weightCol"}


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_every_param_is_declared_once_with_its_default_and_constraint(cls):
    """Each sparkfs Param is one ``declare`` statement: a DeclaredParam carrying its default (the
    instance's, unless a class states its own in ``_defaults``) and its constraint (which the
    selector checks, unless a class states its own in ``_param_constraints``)."""
    from sparkfs.selectors._declared import NO_DEFAULT, DeclaredParam

    selector = cls()
    overridden_defaults = set().union(*(vars(klass).get("_defaults", {}) for klass in cls.__mro__))
    overridden_constraints = set().union(*(vars(klass).get("_param_constraints", {}) for klass in cls.__mro__))
    for param in selector.params:
        if param.name in PYSPARK_SHARED:
            continue
        assert isinstance(param, DeclaredParam), f"{cls.__name__}.{param.name} is not declared with declare()"
        if param.name not in overridden_defaults:
            assert selector.hasDefault(param) is (param.default is not NO_DEFAULT), param.name
            if param.default is not NO_DEFAULT:
                assert selector.getOrDefault(param) == param.default, param.name
        if param.constraint is not None and param.name not in overridden_constraints and hasattr(
                selector, "validate_params"):
            predicate, _ = param.constraint
            assert selector._all_constraints()[param.name][0] is predicate, param.name


def test_no_param_is_built_or_defaulted_outside_declare():
    """No second way to write a Param in the selectors: no ``Param(...)`` and no ``_setDefault``
    outside :mod:`sparkfs.selectors._declared` (the model reader sets saved defaults back)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "sparkfs" / "selectors"
    allowed = {"_declared.py": (), "_model_files.py": ("instance._setDefault",)}
    for path in sorted(folder.glob("*.py")):
        text = path.read_text()
        for allowed_text in allowed.get(path.name, ()):
            text = text.replace(allowed_text, "")
        if path.name == "_declared.py":
            continue
        assert "Param(Params._dummy()" not in text and "_setDefault(" not in text, path.name


# --- the checks agree: a value one place refuses, the others refuse too ------------------------
#: Values to try on every Param: each is first converted by the Param's type converter (a value it
#: cannot convert is refused at ``set`` time), then given to every other place that checks it.
PROBES = [-1, 0, 1, 2, 3, 256, 10**7, -1.0, 0.0, 1e-9, 0.5, 1.0, 1.5, 2.0, float("nan"), float("inf"), True]
#: Params checked by the selection rules together (tests/commands/test_selection_modes.py), not one by one.
SELECTION_PARAMS = {"numFeatures", "threshold", "selectionMode", "selectionThreshold"}
#: Options classes and the method whose selector checks the same values as Params.
OPTIONS_CHECKED_BY = {**OPTIONS_OF, "MarginRun": "lmba"}
#: Fields the options cannot be built without.
REQUIRED_FIELDS = {("ReliefOptions", "variant"): "relieff", ("InformationOptions", "num_select"): 1}


def _probes(words: str) -> list:
    """PROBES, every quoted choice of the constraint's words, and a string that is none of them."""
    import re

    return PROBES + re.findall(r"'([^']*)'", words) + ["bogus"]


def _accepts(check) -> bool:
    try:
        check()
    except (ValueError, TypeError):
        return False
    return True


def _spark_accepts(selector, param, value) -> bool:
    """The selector's checks before any pass: its Params (``validate_params``) and its fit rules."""
    copy = selector.copy({param: value})
    return _accepts(lambda: (copy.validate_params(), copy._check_fit_params()))


def _checked_params(method):
    selector_class, fixed = METHODS[method]
    selector = selector_class()
    selector._set(**fixed)
    constraints = selector._all_constraints()
    return selector, {name: constraints[name][1] for name in constraints if name not in SELECTION_PARAMS}


def _converted_probes(selector, checked, camel):
    """(probe, the Param, the probe as its type converter makes it) for every probe of Param
    ``camel`` that the converter takes (one it refuses is refused at ``set`` time); none for a
    Param without a constraint of its own."""
    if camel not in checked:
        return
    param = selector.getParam(camel)
    for probe in _probes(checked[camel]):
        try:
            yield probe, param, param.typeConverter(probe)
        except TypeError:
            continue


@pytest.mark.parametrize("options_name", sorted(OPTIONS_CHECKED_BY))
def test_an_options_object_refuses_what_the_selector_refuses(options_name):
    """The Spark functions' options objects and the selectors' Params check the same values alike
    (the step of SVM-RFE as the selector hands it over: a whole float becomes an int)."""
    from sparkfs.core.margin_runs import MarginRun

    options_class = MarginRun if options_name == "MarginRun" else getattr(method_options, options_name)
    selector, checked = _checked_params(OPTIONS_CHECKED_BY[options_name])
    required = {field: value for (name, field), value in REQUIRED_FIELDS.items() if name == options_name}
    compared = 0
    for field in dataclasses.fields(options_class):
        for probe, param, value in _converted_probes(selector, checked, _camel(field.name)):
            if field.name == "step" and isinstance(value, float) and value.is_integer():
                value = int(value)
            spark = _spark_accepts(selector, param, value)
            options = _accepts(lambda field=field, value=value: options_class(**{**required, field.name: value}))
            assert spark == options, (options_name, field.name, probe, spark, options)
            compared += 1
    assert compared >= 20, compared


@pytest.mark.parametrize("method", sorted(FRONT))
def test_the_front_refuses_what_the_spark_selector_refuses(method):
    """Each scikit-learn estimator's checks and its Spark selector's agree on every probe (a feature
    index the Spark Param holds as a string, the front as an int)."""
    selector, checked = _checked_params(method)
    front_class = FRONT[method]
    for name in front_class().get_params():
        camel = {"driver_memory_mb": "driverMemoryMB"}.get(name, _camel(name))
        for probe, param, value in _converted_probes(selector, checked, camel):
            front_value = probe if isinstance(value, str) and not isinstance(probe, str) else value
            front = front_class(**{name: front_value})
            front_accepts = _accepts(lambda front=front: (front._check_method_params(),
                                                          front._check_selection_params()))
            assert _spark_accepts(selector, param, value) == front_accepts, (name, probe)
