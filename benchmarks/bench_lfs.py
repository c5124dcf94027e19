"""LFS fit vs Spark ML's UnivariateFeatureSelector (ANOVA F-test) on the same cached DataFrames.

Baseline: `UnivariateFeatureSelector(featureType="continuous", labelType="categorical")`, the
nearest built-in one-pass selector, top 50. Target: LFS time / baseline time <= 0.25.
Writes benchmarks/results/lfs.md.

    .venv/bin/python -m benchmarks.bench_lfs [--quick]
"""

import argparse
from functools import partial

from benchmarks.common import dense_frame, session, sparse_frame, timed, write_table


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args()
    from pyspark.ml.feature import UnivariateFeatureSelector

    from sparkfs import FisherMarkovSelector

    spark = session()
    cases = [("dense", 20_000, 500, None), ("sparse", 100_000, 50_000, 0.002)]
    if args.quick:
        cases = [("dense", 2_000, 100, None), ("sparse", 5_000, 5_000, 0.002)]
    rows = []
    for kind, n_rows, n_features, density in cases:
        df = (dense_frame(spark, n_rows, n_features, 3) if kind == "dense"
              else sparse_frame(spark, n_rows, n_features, density))
        df.count()  # materialise the cache before timing
        baseline = (UnivariateFeatureSelector().setFeatureType("continuous").setLabelType("categorical")
                    .setSelectionMode("numTopFeatures").setSelectionThreshold(50))
        baseline_seconds, _ = timed(partial(baseline.fit, df))
        for engine in ("float", "jvm", "arrow"):
            selector = FisherMarkovSelector(numFeatures=50, statsEngine=engine)
            seconds, model = timed(partial(selector.fit, df))
            rows.append([f"{kind} {n_rows:,} x {n_features:,}" + (f", density {density}" if density else ""),
                         f"LFS ({engine})", f"{seconds:.2f}", f"{baseline_seconds:.2f}",
                         f"{seconds / baseline_seconds:.2f}"])
        df.unpersist()
    write_table(
        "lfs", "LFS fit vs Spark ML UnivariateFeatureSelector (ANOVA)",
        ["data (cached, local[2])", "sparkfs", "sparkfs s", "baseline s", "ratio (target <= 0.25)"], rows,
        notes=["Median of 3 fits each, same cached DataFrame, same session.",
               "Baseline: UnivariateFeatureSelector(continuous features, categorical label, numTopFeatures=50).",
               "Sparse input stays sparse in every LFS engine (Summarizer updates non-zeros; Arrow blocks become CSR). "
               "float (the default): NumPy float64 class sums, labels counted in the same pass; arrow: "
               "exact sums (deterministic=true)."],
    )
    spark.stop()


if __name__ == "__main__":
    main()
