"""The distributed layer: one-pass aggregations and block-wise kernels over Spark DataFrames.

Functions here return NumPy arrays (sufficient statistics) to :mod:`sparkfs.core`; they never
re-implement a selector's formula.
"""
