"""A Param declared in one statement: name, doc, type converter, default, constraint, and whether its
*unset* state decides something.

``declare`` returns a :class:`DeclaredParam`, a pyspark ``Param`` that also carries its default and
its constraint. :class:`DeclaredParams` (the root of every sparkfs Params class) collects them over
the class's bases: the defaults are set at construction, the constraints are checked by
``validate_params``, and :func:`keyword_constructor` builds the Estimator's keyword signature from
them. A class overrides what a base declared for its own use in three class attributes, merged over
the bases (the class nearest the instance wins):

* ``_defaults``: a default of its own for an inherited Param (Relief's ``metric`` is Euclidean,
  MultiSURF's Manhattan; pyspark's ``labelCol`` is "label");
* ``_param_constraints``: a constraint of its own for an inherited Param (Relief's ``metric`` also
  takes "cosine");
* ``_unset_keywords`` / ``_not_keywords``: see :func:`keyword_constructor`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from pyspark.ml.param import Param, Params

#: A constraint: (predicate on the value, words for the message).
Constraint = Tuple[Callable[[Any], bool], str]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: ``default=`` of a Param that has none (unset means something the selector decides at fit time).
NO_DEFAULT = _NoDefault()


class DeclaredParam(Param):
    """A ``Param`` with its default, its constraint and whether its unset state decides."""

    def __init__(self, name: str, doc: str, converter, default: Any, constraint: Optional[Constraint],
                 unset_decides: bool):
        super().__init__(Params._dummy(), name, doc, typeConverter=converter)
        self.default = default
        self.constraint = constraint
        self.unset_decides = unset_decides


def declare(name: str, doc: str, converter, *, default: Any = NO_DEFAULT, constraint: Optional[Constraint] = None,
            unset_decides: bool = False) -> DeclaredParam:
    """One Param, written once: ``converter`` is pyspark's ``typeConverter``; ``constraint`` a
    (predicate, words) pair checked before any pass; ``unset_decides`` when leaving it unset is not
    the same as giving its default (numFeatures' "all features when fewer", a preset's choice): the
    constructor's signature then shows None."""
    return DeclaredParam(name, doc, converter, default, constraint, unset_decides)


def _merged(cls, field: str, overrides: Optional[str], absent) -> Dict[str, Any]:
    """Each declared Param's ``field`` (unless ``absent``), then a class's ``overrides`` dict (if any), over
    the bases from the farthest: the class nearest the instance wins."""
    merged: Dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        merged.update({name: getattr(value, field) for name, value in vars(klass).items()
                       if isinstance(value, DeclaredParam) and getattr(value, field) is not absent})
        if overrides:
            merged.update(vars(klass).get(overrides, {}))
    return merged


def declared_defaults(cls) -> Dict[str, Any]:
    return _merged(cls, "default", "_defaults", NO_DEFAULT)


def declared_constraints(cls) -> Dict[str, Constraint]:
    return _merged(cls, "constraint", "_param_constraints", None)


def _merged_class_sets(cls, attribute: str) -> set:
    return set().union(*(vars(klass).get(attribute, ()) for klass in cls.__mro__))


def unset_keywords(cls) -> set:
    """Params whose unset state decides: declared so, or named in a class's ``_unset_keywords``."""
    return set(_merged(cls, "unset_decides", None, False)) | _merged_class_sets(cls, "_unset_keywords")


class DeclaredParams(Params):
    """Root of sparkfs's Params classes: sets every declared default (and ``_defaults``) at construction."""

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(**declared_defaults(type(self)))

    def _all_constraints(self) -> Dict[str, Constraint]:
        return declared_constraints(type(self))


#: The keywords a selector's constructor lists first, in this order; the others follow by name.
LEADING_KEYWORDS = ("featuresCol", "labelCol", "outputCol", "weightCol", "numFeatures", "threshold", "selectionMode",
                    "selectionThreshold")


def keyword_constructor(cls):
    """Class decorator: ``cls.__init__`` takes every Param of the class as a keyword (no copy of the
    Param list to keep in step), sets the ones given (None: unset) and has a signature for ``help``
    and notebooks whose defaults are the Params' declared defaults.

    Params the constructor does not take (the method refuses them) are named in ``_not_keywords``;
    a Param whose *unset* state decides (see :func:`unset_keywords`) has None as its signature
    default, as setting the default value explicitly would not be the same. A subclass may define
    ``_init_state()`` for attributes of its own."""
    from inspect import Parameter, Signature

    def __init__(self, **kwargs):
        keywords = cls.__init__.__signature__.parameters
        unknown = sorted(name for name in kwargs if name not in keywords or name == "self")
        if unknown:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {unknown[0]!r}")
        super(cls, self).__init__()
        self._set(**{name: value for name, value in kwargs.items() if value is not None})
        if hasattr(self, "_init_state"):
            self._init_state()

    __init__.__signature__ = Signature([Parameter("self", Parameter.POSITIONAL_OR_KEYWORD)])
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = f"Every Param of {cls.__name__} as a keyword (None or absent: unset)."
    cls.__init__ = __init__
    probe = cls()
    skipped, unset = _merged_class_sets(cls, "_not_keywords"), unset_keywords(cls)
    names = [param.name for param in probe.params if param.name not in skipped]
    names.sort(key=lambda name: (LEADING_KEYWORDS.index(name) if name in LEADING_KEYWORDS
                                 else len(LEADING_KEYWORDS), name))
    __init__.__signature__ = Signature(
        [Parameter("self", Parameter.POSITIONAL_OR_KEYWORD)]
        + [Parameter(name, Parameter.KEYWORD_ONLY,
                     default=None if name in unset or not probe.hasDefault(name) else probe.getOrDefault(name))
           for name in names])
    return cls
