"""spark-submit entry point for scheduled selection runs: the same code and flags as `sparkfs select`.

    spark-submit jobs/select.py --config conf/select.yaml [--output DIR --overwrite ...]
"""

import os
import sys

# Python puts this script's folder first on sys.path, where this file would shadow the standard
# library's `select` module (imported by socket, hence by pyspark). Take the folder out first.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _here]

from sparkfs.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["select", *sys.argv[1:]]))
