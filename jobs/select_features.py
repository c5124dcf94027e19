"""spark-submit entry point for scheduled selection runs: the same code and flags as `sparkfs select`.

    spark-submit jobs/select_features.py --config conf/select.yaml [--output DIR --overwrite ...]

(Not named ``select.py``: spark-submit puts this script's folder first on sys.path, where a
``select.py`` would shadow the standard library's ``select`` module, imported by socket and so by
pyspark.)
"""

import sys

from sparkfs.cli import main

if __name__ == "__main__":
    sys.exit(main(["select", *sys.argv[1:]]))
