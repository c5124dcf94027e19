"""Pure NumPy/SciPy math of the selectors: each paper's formula from sufficient statistics.

Nothing in this package imports pyspark; the Spark layer (:mod:`sparkfs.spark`) computes the
statistics and hands them to these functions.
"""
