"""``sparkfs instance-weights``: Han & Yu's margin-based weights (eq. 7, summing to n) of every
row, written as ``DIR/weights.parquet`` (``row``: the 0-based position of the row in the input,
``weight``) and ``DIR/summary.json``, atomically. No math here.
"""

from __future__ import annotations

import time
from typing import Any, Dict

import numpy as np

from sparkfs.commands import Command
from sparkfs.commands.arguments import add_input_args, add_spark_args, log, read_input, start_study_session


def add_arguments(commands) -> None:
    weights = commands.add_parser("instance-weights",
                                  help="Han & Yu margin-based instance weights: DIR/weights.parquet + summary.json")
    add_input_args(weights)
    weights.add_argument("--output", required=True, help="output directory (local path or URI)")
    weights.add_argument("--overwrite", action="store_true", help="replace an existing output directory written by "
                         "sparkfs instance-weights (and holding nothing else)")
    weights.add_argument("--driver-budget-mb", type=float, default=2048.0,
                         help="largest driver memory for the rows and margin vectors (default 2048)")
    add_spark_args(weights)


def check_output(args) -> str:
    """Refuse an unsafe ``--output`` before any work (a local one before Spark starts;
    :mod:`sparkfs.io.output_safety`). Returns the output."""
    from sparkfs.io.output import check_output_early

    check_output_early(args.output, bool(args.overwrite), command="instance-weights", inputs=[args.input])
    return args.output


def run_instance_weights(args, spark) -> Dict[str, Any]:
    """``sparkfs instance-weights``: the weights of every row, in input order."""
    import pandas as pd

    from sparkfs.io.output import check_output_free, write_output_files
    from sparkfs.job_options import Stage, run_fields, utc_now, versions
    from sparkfs.selectors.instance_weighting import MarginInstanceWeighter

    check_output_free(args.output, bool(args.overwrite), spark=spark, command="instance-weights", inputs=[args.input])
    started, started_at = time.perf_counter(), utc_now()
    with Stage(log, "read"):
        dataset = read_input(args, spark, budget={"driver_budget_mb": args.driver_budget_mb,
                                             "budget_name": "--driver-budget-mb"})
    weighter = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                      driverBudgetMB=args.driver_budget_mb)
    with Stage(log, "instance-weights"):
        weighter.transform(dataset.df)
    result = weighter.result
    table = pd.DataFrame({"row": result.ids.astype(np.int64), "weight": result.weights})
    summary = {**weighter.summary, "input": {"path": args.input, "format": args.format},
               "row_column": "0-based position of the row in the input",
               "seconds": round(time.perf_counter() - started, 3), **versions(spark),
               **run_fields(getattr(args, "run_id", None), started_at, [args.input], spark)}
    with Stage(log, "write"):
        summary["output"] = write_output_files(args.output, {"weights.parquet": table}, summary,
                                               overwrite=bool(args.overwrite), spark=spark, command="instance-weights")
    return summary


def run(args) -> int:
    spark = start_study_session(args, check_output)
    if spark is None:
        return 0
    summary = run_instance_weights(args, spark)
    print(f"rows={summary['n_rows']} weights from {summary['weight_min']:.4g} to {summary['weight_max']:.4g} "
          f"(sum {summary['weight_sum']:.6g}) seconds={summary['seconds']}")
    print(f"output: {summary['output']}/weights.parquet, {summary['output']}/summary.json")
    return 0


COMMAND = Command(add_arguments, run, job_args="job")
