"""Atomic output of a selection run: ``features.parquet`` and ``summary.json`` in one directory.

Everything is written into a hidden sibling directory first and renamed into place at the end,
so a failed run leaves no partial output directory. The output is written from the driver with
pyarrow (it holds one row per feature); local paths only.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from typing import Any, Dict, List, Optional
from urllib.parse import urlparse

import numpy as np


class OutputExistsError(FileExistsError):
    pass


def local_output_path(path: str) -> str:
    parsed = urlparse(path)
    if parsed.scheme not in ("", "file"):
        raise ValueError(f"output must be a local directory (got scheme '{parsed.scheme}://')")
    return os.path.abspath(parsed.path if parsed.scheme else path)


def check_output_free(path: str, overwrite: bool) -> str:
    """Refuse an existing output before any work is done (unless ``overwrite``)."""
    target = local_output_path(path)
    if os.path.exists(target) and not overwrite:
        raise OutputExistsError(f"output directory {target} already exists; pass --overwrite to replace it")
    return target


def features_table(scores, selected: List[int], names: Optional[List[str]] = None):
    """index, name, score, rank (1 = best), selected — one row per feature, in index order."""
    import pandas as pd

    from sparkfs.core.selection import rank_features

    scores = np.asarray(scores, dtype=np.float64)
    ranks = np.empty(scores.shape[0], dtype=np.int64)
    ranks[rank_features(scores)] = np.arange(1, scores.shape[0] + 1)
    mask = np.zeros(scores.shape[0], dtype=bool)
    mask[list(selected)] = True
    names = names if names is not None else [f"f{i}" for i in range(scores.shape[0])]
    return pd.DataFrame({
        "index": np.arange(scores.shape[0], dtype=np.int32),
        "name": pd.Series(names, dtype=object).astype(str),
        "score": scores,
        "rank": ranks.astype(np.int32),
        "selected": mask,
    })


def write_selection_output(path: str, table, summary: Dict[str, Any], overwrite: bool = False) -> str:
    """Write ``features.parquet`` + ``summary.json`` atomically into ``path``; returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = check_output_free(path, overwrite)
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staging = os.path.join(parent, f".{os.path.basename(target)}.tmp-{uuid.uuid4().hex}")
    os.makedirs(staging)
    try:
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), os.path.join(staging, "features.parquet"))
        with open(os.path.join(staging, "summary.json"), "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=2, default=_json_default)
        if os.path.exists(target):
            retired = f"{staging}.old"
            os.rename(target, retired)
            os.rename(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
