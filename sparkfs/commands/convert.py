"""``sparkfs convert INPUT OUTPUT`` (or ``--input INPUT --output OUTPUT``): LIBSVM or CSV text read
once, with every check of ``select``'s read, and written as a Parquet directory that later jobs read
as columns instead of parsing text.

What is written (``OUTPUT/``, a Parquet directory any Spark, pandas or pyarrow reader opens):

* the label column as read (LIBSVM: double; CSV: typed as ``select`` types it), the weight column
  when one is named (CSV), and the vector column ``features`` (``--features-col``): SparseVectors
  for LIBSVM (a row stores its non-zeros only), dense vectors for CSV, as ``select`` reads them;
* the feature names in the vector column's Spark ML attribute metadata, which Spark stores in
  every Parquet file's key-value metadata (``org.apache.spark.sql.parquet.row.metadata``): a CSV's
  header names one by one (as ``VectorAssembler`` writes them); for LIBSVM the size
  (``num_attrs``), :data:`sparkfs.io.readers.LIBSVM_NAMES`, which says the names are the
  file's own 1-based column numbers ``f1..fD`` (not listed: a million names would be tens of MB
  in every file's footer), and that every vector is sparse (``statsEngine="auto"`` reads it).
  :func:`sparkfs.io.readers.read_dataset` reads both back, so ``select``
  on the Parquet reports the names and the vector size ``select`` on the text reports;
* ``_summary.json``: the marker of the output rules (:mod:`sparkfs.io.output_safety`; its name
  starts with ``_`` so Parquet readers skip it), the rows, the features, the input's fingerprint.

Bad input is refused (exit 2) by the read, which names the line, before anything is written. The
data go to a staging directory beside ``OUTPUT`` and are renamed into place once complete
(:func:`sparkfs.io.output.write_spark_output`), so a failed run leaves no partial output; an
existing output is replaced (``--overwrite``, ``--if-exists overwrite``) only when ``convert``
wrote it and it holds nothing else. The parse is persisted by the read, so the write reads the
rows from the cache: the text is parsed once.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional

from sparkfs.commands import Command
from sparkfs.commands.arguments import (
    add_spark_args,
    check_numeric_options,
    log,
    session_conf,
    spark_conf,
    spark_target,
    stage,
)
from sparkfs.errors import InvalidInputError
from sparkfs.interruption import install_handlers
from sparkfs.io.config import ConfigError
from sparkfs.io.input_files import check_input_files, glob_matches
from sparkfs.io.libsvm import DEFAULT_DRIVER_BUDGET_MB, sparse_vectors_metadata
from sparkfs.io.output import check_output_early, check_output_free, write_spark_output
from sparkfs.io.readers import LIBSVM_NAMES, check_input_early, read_dataset
from sparkfs.io.stores import Location, location_of
from sparkfs.io.table_input import vector_metadata
from sparkfs.job_options import (
    configure_log_format,
    decide_if_exists,
    input_fingerprint,
    log_line,
    run_fields,
    run_id_of,
    skip_if_complete,
    utc_now,
    versions,
    with_run_id,
)
from sparkfs.spark.failures import redacted

INPUT_FORMATS = ("libsvm", "csv", "auto")
#: What ``--format auto`` reads from a file name (after a compression suffix).
_SUFFIXES = {".libsvm": "libsvm", ".svm": "libsvm", ".svmlight": "libsvm", ".csv": "csv"}
_COMPRESSED = (".gz", ".bz2", ".deflate", ".zst", ".lz4", ".snappy")


def add_arguments(commands) -> None:
    convert = commands.add_parser(
        "convert", help="LIBSVM/CSV text -> a Parquet directory (label + vector column, feature names kept), once")
    convert.add_argument("input_path", metavar="INPUT", nargs="?", help="LIBSVM or CSV input: a file, a directory "
                         "of part files or a glob (local path or URI); or --input")
    convert.add_argument("output_path", metavar="OUTPUT", nargs="?", help="output Parquet directory (a new one; "
                         "local path or URI); read it with `sparkfs select --input OUTPUT --format parquet`; or "
                         "--output")
    convert.add_argument("--input", help="the input, as the other commands take it (instead of INPUT)")
    convert.add_argument("--output", help="the output directory, as the other commands take it (instead of OUTPUT)")
    convert.add_argument("--format", choices=INPUT_FORMATS, default="auto",
                         help="input format (default auto: from the file name, .libsvm/.svm/.svmlight or .csv)")
    convert.add_argument("--label-col", help="label column of a CSV input, kept under its name (default: label; a "
                         "LIBSVM input's label is named so)")
    convert.add_argument("--weight-col", help="per-instance weight column of a CSV input, kept as a column")
    convert.add_argument("--features-col", help="name of the vector column written (default: features)")
    convert.add_argument("--vector-size", type=int, help="LIBSVM: the number of features (largest index allowed); "
                         "default: the largest index in the input. Either must fit the driver budget")
    convert.add_argument("--driver-budget-mb", type=float, help="the driver budget bounding the LIBSVM vector size, "
                         f"as select's (default {DEFAULT_DRIVER_BUDGET_MB:g})")
    convert.add_argument("--overwrite", action="store_true", default=None,
                         help="replace an existing output directory written by sparkfs convert (and holding nothing "
                         "else); the same as --if-exists overwrite")
    add_spark_args(convert)


def input_format(location: Location, fmt: str) -> str:
    """``fmt``, or for ``auto`` the format the file names say (a directory: its files'); refused when
    they do not say one format."""
    if fmt != "auto":
        return fmt
    path, local = location.text, location.local
    matches = glob_matches(location)
    if local is not None and matches is None and not os.path.exists(local):
        raise InvalidInputError(f"input path not found: {path}")
    if matches == []:
        raise InvalidInputError(f"input path not found: {path} (no file matches the pattern)")
    names = [os.path.basename(match) for match in matches] if matches else [path]
    if local is not None and matches is None and os.path.isdir(local):
        names = [name for name in os.listdir(local) if not name.startswith(("_", "."))]
        if not names:
            check_input_files(location, "auto")   # refuses the directory without data files
    found = {_format_of_name(name) for name in names}
    if len(found) == 1 and None not in found:
        return found.pop()
    raise ConfigError(f"--format auto cannot tell the format of {path} from its name (.libsvm, .svm, .svmlight or "
                      ".csv): give --format libsvm or --format csv")


def _format_of_name(name: str) -> Optional[str]:
    lower = name.lower().rstrip("/")
    for suffix in _COMPRESSED:
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
    return _SUFFIXES.get(os.path.splitext(lower)[1])


def checks_before_spark(args) -> Optional[str]:
    """Everything that needs no Spark: the Spark target, the numeric options, the job options, the
    output rules (a local output), the input's path and named columns. Returns a skip message
    (``--if-exists skip`` on a complete output) or None."""
    args.input = _path_given(args.input_path, args.input, "input", "INPUT")
    args.output = _path_given(args.output_path, args.output, "output", "OUTPUT")
    input_location = location_of(args.input)
    args.format = input_format(input_location, args.format)
    args.master, args.remote = spark_target(args.master, args.remote, args.output)
    if args.remote:
        raise ConfigError(f"sparkfs convert runs on a classic Spark session (its executors write the Parquet files "
                          f"the driver then moves into place), not on Spark Connect ({redacted(args.remote)})")
    check_numeric_options(args)
    if args.weight_col and args.format == "libsvm":
        raise ConfigError("--weight-col names a column of a CSV input; a LIBSVM input has no weight column")
    if (args.features_col or "features") in (_label_col(args), args.weight_col):
        raise ConfigError(f"--features-col {args.features_col or 'features'} is also the label or weight column: "
                          "give another name")
    args.run_id = run_id_of(args.run_id)
    args.output = with_run_id(args.output, args.run_id)
    args.if_exists = decide_if_exists(args.if_exists, args.overwrite, {})
    args.overwrite = args.if_exists == "overwrite"
    configure_log_format(log, args.log_format, args.run_id)
    skipped = skip_if_complete(args.output, "convert", args.if_exists, inputs=[args.input])
    if skipped:
        return skipped
    args.output_checked = check_output_early(args.output, args.overwrite, command="convert", inputs=[args.input])
    check_input_early(input_location, args.format, label_col=_label_col(args), weight_col=args.weight_col)
    return None


def _path_given(positional: Optional[str], flag: Optional[str], name: str, metavar: str) -> str:
    """The path given as the positional ``metavar`` or as ``--name`` (the same path both ways is
    accepted; two different ones, or none, are refused)."""
    if positional and flag and positional != flag:
        raise ConfigError(f"two {name}s given: {metavar} {positional} and --{name} {flag}; give one")
    if not (positional or flag):
        raise ConfigError(f"no {name}: give {metavar} (sparkfs convert INPUT OUTPUT) or --{name}")
    return str(positional or flag)


def _label_col(args) -> str:
    return args.label_col or "label"


def output_frame(dataset, fmt: str, features_col: str):
    """The frame written: label, weight (when named), the vector under ``features_col`` with the
    feature names in its ML attributes (module notes)."""
    from pyspark.sql import functions as F

    if fmt == "libsvm":
        metadata = sparse_vectors_metadata(dataset.num_features, **LIBSVM_NAMES["sparkfs"])
    else:
        metadata = vector_metadata(dataset.feature_names)
    others = [name for name in dataset.df.columns if name != dataset.features_col]
    return dataset.df.select(*others, F.col(dataset.features_col).alias(features_col, metadata=metadata))


def convert(spark, args) -> Dict[str, Any]:
    """Read ``args.input`` once (every check of select's read), write it as Parquet; the summary."""
    started, started_at = time.perf_counter(), utc_now()
    features_col = args.features_col or "features"
    if not getattr(args, "output_checked", False):  # a URI: checked once the session reaches its file system
        check_output_free(args.output, args.overwrite, spark=spark, command="convert", inputs=[args.input])
    before = input_fingerprint(args.input, spark)
    with stage("read"):
        dataset = read_dataset(spark, args.input, args.format, label_col=_label_col(args), weight_col=args.weight_col,
                               num_features=args.vector_size, require_label=True,
                               driver_budget_mb=args.driver_budget_mb or DEFAULT_DRIVER_BUDGET_MB,
                               budget_name="--driver-budget-mb")
        frame = output_frame(dataset, args.format, features_col)
        n_rows = frame.count()  # from the read's cache
    _refuse_changed_input(args.input, before, spark)
    summary = {"input": {"path": args.input, "format": args.format}, "n_rows": n_rows,
               "n_features": dataset.num_features, "label_col": dataset.label_col, "weight_col": args.weight_col,
               "features_col": features_col, "vector": "sparse" if args.format == "libsvm" else "dense",
               "feature_names": ("the LIBSVM column numbers f1..fD" if args.format == "libsvm"
                                 else "the CSV header's names"),
               **versions(spark), **run_fields(args.run_id, started_at, [args.input], spark)}
    with stage("write"):
        summary["read_seconds"] = round(time.perf_counter() - started, 3)
        summary["output"] = write_spark_output(args.output, lambda uri: frame.write.parquet(uri), summary,
                                               spark=spark, command="convert", overwrite=args.overwrite)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return summary


def _refuse_changed_input(path: str, before: Optional[Dict[str, Any]], spark) -> None:
    """Refuse (exit 2, nothing written) an input whose size or modification time changed while it
    was read: the rows would mix the old and new file."""
    if before is None or before.get("size_bytes") is None:
        return
    after = input_fingerprint(path, spark)
    if after != before:
        raise InvalidInputError(f"input {path} changed while it was read (size {before['size_bytes']:,} bytes, "
                                f"modified {before['modified_at']} -> {after.get('size_bytes')} bytes, modified "
                                f"{after.get('modified_at')}): nothing was written; convert it once it is complete")


def run(args) -> int:
    from sparkfs.spark.session import get_spark

    skipped = checks_before_spark(args)
    if skipped:
        log_line(log, args.log_format, skipped, "skipped", output=args.output)
        return 0
    with stage("spark"):
        spark = get_spark(args.master, conf=session_conf(spark_conf(args), args.verbose))
        install_handlers()  # a new SparkContext installed its own SIGINT handler
    summary = convert(spark, args)
    print(f"rows={summary['n_rows']} features={summary['n_features']} vector={summary['vector']} "
          f"seconds={summary['seconds']}")
    print(f"output: {summary['output']} (Parquet; select on it with --input {args.output} --format parquet)")
    return 0


COMMAND = Command(add_arguments, run, job_args="job")
