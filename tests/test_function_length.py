"""No function in sparkfs/ grows past MAX_FUNCTION_LINES (80, the style's aim) without a
reason written here. A function's lines run from its ``def`` to its last line, less
its docstring: documentation is not length to split.

``python tests/test_function_length.py [LINES]`` lists every function longer than LINES (default
80), longest first, with its place.
"""

import ast
import functools
import sys
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "sparkfs"
#: Above this a function fails the test unless it is in LONG_FUNCTIONS.
MAX_FUNCTION_LINES = 80
#: The style's aim, for the listing.
AIM_LINES = 80

#: Every function over AIM_LINES, "path:qualified name" -> why it stays long (the listing prints it).
LONG_FUNCTIONS = {}


def _docstring_lines(function) -> int:
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.end_lineno - first.lineno + 1
    return 0


@functools.lru_cache(maxsize=None)
def function_lengths(root=PACKAGE_ROOT):
    """[(lines, "path:qualified.name")] of every function and method under ``root``; a nested
    function counts both alone and as part of the function around it."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root.parent).as_posix()

        def visit(node, prefix, where=where):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}{child.name}"
                    found.append((child.end_lineno - child.lineno + 1 - _docstring_lines(child), f"{where}:{name}"))
                    visit(child, name + ".")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
        visit(tree, "")
    return tuple(sorted(found, reverse=True))


def test_no_function_is_longer_than_the_limit_without_a_reason():
    too_long = [f"{lines:4d} {name}" for lines, name in function_lengths()
                if lines > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS]
    assert not too_long, (f"functions over {MAX_FUNCTION_LINES} lines: split them, or write the reason in "
                          "LONG_FUNCTIONS (tests/test_function_length.py):\n" + "\n".join(too_long))


def test_every_allowed_long_function_still_exists_and_is_long():
    lengths = {name: lines for lines, name in function_lengths()}
    stale = [name for name in LONG_FUNCTIONS if lengths.get(name, 0) <= AIM_LINES]
    assert not stale, f"LONG_FUNCTIONS entries no longer needed (gone or short enough): {stale}"


if __name__ == "__main__":  # pragma: no cover
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else AIM_LINES
    for lines, name in function_lengths():
        if lines > limit:
            reason = f"  (allowed: {LONG_FUNCTIONS[name]})" if name in LONG_FUNCTIONS else ""
            print(f"{lines:4d} {name}{reason}")
