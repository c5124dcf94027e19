"""Numba for the block kernels, when it can be imported.

:data:`AVAILABLE` is False without Numba, and every kernel module then leaves its compiled
function unset so that its caller takes the NumPy path. :func:`compile_kernel` compiles a plain
loop function once per process, cached on disk when a cache directory is writable.
"""

from __future__ import annotations

from typing import Any, Dict

try:  # pragma: no cover - exercised by whichever environment runs the tests
    import numba

    AVAILABLE = True
except ImportError:  # pragma: no cover
    numba = None  # type: ignore[assignment]  # the kernels then take the NumPy path
    AVAILABLE = False


def compile_kernel(function, inline: bool = False):
    """``function`` compiled in nopython mode (no bounds checks, the GIL released); ``inline``:
    a helper that the kernels calling it take in at compile time (no call per element)."""
    options: Dict[str, Any] = {"boundscheck": False, "nogil": True, "inline": "always" if inline else "never"}
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # pragma: no cover - no writable cache location: compile per process
        return numba.njit(cache=False, **options)(function)
