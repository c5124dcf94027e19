"""spark-submit entry point for scheduled selection runs: the same code and flags as `sparkfs select`.

    spark-submit jobs/select_features.py --config conf/select.yaml [--output DIR --overwrite ...]

Results go to stdout; sparkfs's stage logs and errors to stderr, as with the `sparkfs` command.
spark-submit joins its Python driver's stderr to its stdout (its PythonRunner merges the two
streams of the child process), so here ``sys.stderr`` writes through the JVM's own ``System.err``.
Spark's own INFO and WARN lines are off from the SparkContext's start (``spark.log.level``;
``--verbose`` keeps them); the few of spark-submit's own start come before it (``--driver-java-options
"-Dlog4j.configurationFile=..."`` silences those too).

(Not named ``select.py``: spark-submit puts this script's folder first on sys.path, where a
``select.py`` would shadow the standard library's ``select`` module, imported by socket and so by
pyspark.)
"""

import io
import os
import sys

from sparkfs.cli import main


class JvmStderr(io.TextIOBase):
    """A text stream writing to the spark-submit JVM's ``System.err`` (this process's own stderr
    when the JVM cannot be reached)."""

    def __init__(self, gateway):
        self._stream = gateway.jvm.java.lang.System.err

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        try:
            self._stream.print(text)
            self._stream.flush()
        except Exception:  # the JVM is gone: the merged stream is better than nothing
            sys.__stderr__.write(text)
        return len(text)


def stderr_of_spark_submit():
    """The JVM's stderr when running under spark-submit, else None."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark.java_gateway import launch_gateway

    try:
        return JvmStderr(launch_gateway())
    except Exception:
        return None


if __name__ == "__main__":
    sys.stderr = stderr_of_spark_submit() or sys.stderr
    sys.exit(main(["select", *sys.argv[1:]]))
