"""Job configuration: a YAML file (safe loader) whose values command-line flags override.

Layout of ``conf/*.yaml``::

    input:  {path: data/x.libsvm, format: libsvm, label_col: label, features_col: features, weight_col: null,
             num_features: null, driver_budget_mb: null}   # LIBSVM vector size (--vector-size), its bound
    method: lfs
    params: {gamma: -0.5}
    selection: {num_features: 20}      # or {threshold: 0.0}
    output: {path: output/x, overwrite: false}
    spark:  {master: "local[2]", conf: {spark.driver.memory: 2g}}
"""

from __future__ import annotations

import copy
from typing import Any, Dict

import yaml

DEFAULTS: Dict[str, Any] = {
    "input": {"path": None, "format": "libsvm", "label_col": "label", "features_col": "features",
              "weight_col": None, "num_features": None, "driver_budget_mb": None},
    "method": "lfs",
    "instance_weighting": "none",
    "params": {},
    "selection": {"num_features": None, "threshold": None},
    "output": {"path": None, "overwrite": False},
    "spark": {"master": None, "conf": {}},
}
SECTIONS = set(DEFAULTS)


class ConfigError(ValueError):
    """The configuration file or flags are invalid."""


def load_config(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path} must hold a mapping, got {type(loaded).__name__}")
    unknown = set(loaded) - SECTIONS
    if unknown:
        raise ConfigError(f"unknown section(s) {sorted(unknown)} in {path}; known: {sorted(SECTIONS)}")
    for section, value in loaded.items():
        known = DEFAULTS[section]
        if not isinstance(known, dict) or section == "params":  # method params are checked by the selector
            continue
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"section '{section}' of {path} must be a mapping, got {type(value).__name__}")
        unknown_keys = set(value or {}) - set(known)
        if unknown_keys:
            raise ConfigError(f"unknown key(s) {sorted(unknown_keys)} in section '{section}' of {path}; "
                              f"known: {sorted(known)}")
    return loaded


def merge_config(base: Dict[str, Any], override: Dict[str, Any]) -> Dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base``; ``None`` values in override are ignored."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_config(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def parse_param(text: str):
    """``name=value`` from the command line; the value is typed by YAML (numbers, bools, strings)."""
    if "=" not in text:
        raise ConfigError(f"--param expects name=value, got '{text}'")
    name, raw = text.split("=", 1)
    if not name.strip():
        raise ConfigError(f"--param expects name=value, got '{text}'")
    return name.strip(), yaml.safe_load(raw) if raw.strip() else raw
