"""JSON that every parser reads: no ``NaN``, ``Infinity`` or ``-Infinity``.

Python's :mod:`json` writes a float that is not finite as the bare words ``NaN`` and ``Infinity``,
which are not JSON (RFC 8259): strict parsers (``jq``, JavaScript's ``JSON.parse``, Java's
Jackson by default, Go's ``encoding/json``) refuse the whole file. Every JSON file and log line
sparkfs writes goes through :func:`dumps`, which writes such a number as ``null``, as JavaScript's
``JSON.stringify`` does, and then refuses any that is left (``allow_nan=False``). The exact values
stay in the Parquet tables beside the JSON (``features.parquet``'s scores), which hold doubles.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def finite_for_json(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None, NumPy scalars and arrays
    as Python numbers and lists, tuples as lists; dict keys are kept as they are."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_for_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_for_json(item) for item in value]
    return value


def dumps(document: Any, **options: Any) -> str:
    """``json.dumps`` of ``document`` as strict JSON (see the module notes); ``options`` as json.dumps's."""
    return json.dumps(finite_for_json(document), allow_nan=False, **options)
