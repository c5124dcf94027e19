"""Bundled demo data: scikit-learn's copy of the Optical Pen digits set, written to LIBSVM."""

from __future__ import annotations

import os


def write_digits_libsvm(path: str) -> str:
    """Write scikit-learn's ``load_digits`` (1,797 x 64, 10 classes; the paper's Optical Pen set)
    to ``path`` in LIBSVM format (1-based indices), unless it exists. Returns the path."""
    if os.path.exists(path):
        return path
    from sklearn.datasets import dump_svmlight_file, load_digits

    features, labels = load_digits(return_X_y=True)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    staging = f"{path}.tmp"
    dump_svmlight_file(features, labels, staging, zero_based=False)
    os.replace(staging, path)
    return path


if __name__ == "__main__":  # python -m sparkfs.io.datasets data/digits.libsvm
    import sys

    print(write_digits_libsvm(sys.argv[1] if len(sys.argv) > 1 else "data/digits.libsvm"))
