"""A local Parquet input's footer is read once before Spark reads the file: the column
names, the pandas index and the date/time check share one schema."""

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.io import table_input

pytestmark = pytest.mark.spark


def test_the_footer_is_read_once_for_the_checks(spark, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"]).assign(label=np.arange(40) % 2)
    frame.to_parquet(tmp_path / "in.parquet")  # with pandas metadata (a RangeIndex)
    reads = []
    original = pq.read_schema
    monkeypatch.setattr(pq, "read_schema", lambda *args, **kwargs: reads.append(args) or original(*args, **kwargs))
    table_input._footer_schema.cache_clear()
    assert main(["select", "--master", "local[2]", "--input", str(tmp_path / "in.parquet"), "--format", "parquet",
                 "--label-col", "label", "--method", "anova", "--num-features", "2",
                 "--output", str(tmp_path / "out")]) == 0
    assert len(reads) == 1, reads
    frame.to_parquet(tmp_path / "in.parquet", index=False)  # rewritten: read again, not the stale schema
    assert table_input.parquet_schema(str(tmp_path / "in.parquet")).metadata is not None
    assert len(reads) == 2
