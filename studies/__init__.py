"""Research studies: quality findings on real data (``../shared/data``) and checks of the papers'
claims, written to ``benchmarks/results/`` or ``docs/``. Run from the repository root, e.g.
``python -m studies.margin_study --help``; the shared helpers are in ``benchmarks.common``."""
