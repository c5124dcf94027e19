"""Timing benchmarks: each script measures sparkfs against a named baseline in the same run and
writes a table of ratios to ``benchmarks/results/``. Run from the repository root, e.g.
``python -m benchmarks.bench_lfs --help``; ``benchmarks.common`` is the helper module shared with
``studies/``."""
