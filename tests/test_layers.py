"""The architecture's layer rules, checked on the source with ``ast`` (nothing is imported).

Every import counts, including those inside functions, relative imports (resolved against the
package) and ``importlib.import_module`` / ``__import__`` calls with a literal module name.
``from a.b import c`` counts as importing both ``a.b`` and ``a.b.c`` (c may be a submodule).
"""

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "sparkfs"
MAX_MODULE_LINES = 600

#: One row per layer row of docs/architecture.md: (folder or file under sparkfs/, the sparkfs modules
#: it may import, the third-party packages it may not import). Every import of sparkfs outside the
#: allowed modules is a violation, so a new layer edge must be written here (and in the doc) first.
_BASE = ["sparkfs.errors", "sparkfs.progress"]
LAYER_ROWS = [
    ("errors.py", [], ["pyspark", "numpy"]),
    ("progress.py", [], ["pyspark", "numpy"]),
    ("core", ["sparkfs.core", *_BASE], ["pyspark", "pandas", "pyarrow", "matplotlib"]),
    ("spark", ["sparkfs.spark", "sparkfs.core", *_BASE], ["sklearn", "matplotlib"]),
    ("selectors", ["sparkfs.selectors", "sparkfs.spark", "sparkfs.core", "sparkfs.io", *_BASE], ["matplotlib"]),
    ("sklearn", ["sparkfs.sklearn", "sparkfs.core", *_BASE], ["pyspark", "matplotlib"]),
    ("io", ["sparkfs.io", "sparkfs.core.selection", *_BASE], ["matplotlib"]),
    ("evaluation", ["sparkfs.evaluation", "sparkfs.core", "sparkfs.io.output_safety",
                    "sparkfs.io.strict_json", *_BASE], ["pyspark"]),
    ("figures", [], ["pyspark", "numpy", "matplotlib"]),
    ("methods.py", ["sparkfs.methods", "sparkfs.selectors", "sparkfs.core", "sparkfs.io", "sparkfs.figures", *_BASE],
     ["matplotlib"]),
    ("commands", ["sparkfs.commands", "sparkfs.methods", "sparkfs.selectors", "sparkfs.spark", "sparkfs.core",
                  "sparkfs.io", "sparkfs.evaluation", "sparkfs.job_options", "sparkfs.interruption", *_BASE],
     ["sklearn", "matplotlib"]),
    ("cli.py", ["sparkfs.commands", "sparkfs._version", "sparkfs.interruption", "sparkfs.io.config",
                "sparkfs.io.output", "sparkfs.job_options", "sparkfs.spark.failures", *_BASE],
     ["sklearn", "matplotlib"]),
]


def source_files(under=""):
    target = PACKAGE_ROOT / under if under else PACKAGE_ROOT
    files = [target] if target.is_file() else sorted(target.rglob("*.py"))
    return [path for path in files if "__pycache__" not in path.parts]


def module_name(path):
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(path, module, level):
    """The absolute name of ``from <level dots><module> import ...`` written in ``path``."""
    if level == 0:
        return module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(path, source=None):
    """[(line, imported module name, imported names)] of every import in the file (or in ``source``)."""
    found = []
    source = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(path, node.module, node.level)
            names = tuple(alias.name for alias in node.names)
            found.append((node.lineno, base, names))
            found.extend((node.lineno, f"{base}.{name}", ()) for name in names if name != "*")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value, ()))
    return found


def is_under(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def test_the_package_is_where_the_test_expects_it():
    assert (PACKAGE_ROOT / "__init__.py").is_file()
    for layer, _, _ in LAYER_ROWS:
        assert source_files(layer), f"no Python file under sparkfs/{layer}"


def _outside(name, names, allowed):
    """An import of sparkfs (``from sparkfs import x`` counts as sparkfs.x) outside ``allowed``."""
    if name == "sparkfs":
        return [f"sparkfs.{imported}" for imported in names
                if not any(is_under(f"sparkfs.{imported}", prefix) for prefix in allowed)]
    if is_under(name, "sparkfs") and not any(is_under(name, prefix) for prefix in allowed):
        return [name]
    return []


@pytest.mark.parametrize("layer, allowed, forbidden", LAYER_ROWS, ids=[row[0] for row in LAYER_ROWS])
def test_layer_imports_nothing_from_the_layers_above(layer, allowed, forbidden):
    violations = []
    for path in source_files(layer):
        for line, name, names in imports_of(path):
            where = f"{path.relative_to(PACKAGE_ROOT.parent)}:{line}"
            violations += [f"{where} imports {module}" for module in _outside(name, names, allowed)]
            if any(is_under(name, package) for package in forbidden):
                violations.append(f"{where} imports {name}")
    assert not violations, (f"sparkfs/{layer} may import only {allowed or 'nothing'} of sparkfs and none of "
                            f"{forbidden}:\n" + "\n".join(sorted(set(violations))))


def test_a_command_module_imports_no_other_command():
    """Each module of sparkfs/commands/ imports, of the commands, only the package (its ``Command``)
    and the shared ``arguments``, ``tracking`` (the MLflow runs) and ``reduced`` (the sliced input):
    no command reaches into another."""
    commands = {module_name(path) for path in source_files("commands")}
    # tracking: --mlflow; reduced: the sliced input that apply and select --write-reduced write
    shared = {"sparkfs.commands", "sparkfs.commands.arguments", "sparkfs.commands.tracking",
              "sparkfs.commands.reduced"}
    violations = []
    for path in source_files("commands"):
        for line, name, _ in imports_of(path):
            if name in commands and name not in shared and name != module_name(path):
                violations.append(f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {name}")
    assert commands > shared and not violations, "a command module imports another:\n" + "\n".join(violations)


def test_every_layer_row_of_the_architecture_doc_is_checked():
    doc = (PACKAGE_ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc.split("## Layers and what each may import", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1].strip() for line in table.splitlines()[2:] if line.startswith("| `sparkfs/")]
    checked = {f"`sparkfs/{layer}/`" if not layer.endswith(".py") else f"`sparkfs/{layer}`"
               for layer, _, _ in LAYER_ROWS}
    library_rows = [row for row in rows if row.split(" ")[0].rstrip(",") in checked]
    assert len(library_rows) == len(LAYER_ROWS), f"rows of the doc not checked here: {rows}"


@pytest.mark.parametrize("where", ["io", "cli.py"])
def test_invalid_input_error_comes_from_sparkfs_errors(where):
    """io/ and the CLI import InvalidInputError from sparkfs.errors, never via the Spark layer."""
    files = source_files(where)
    assert files, f"sparkfs/{where} not found"
    violations = []
    for path in files:
        for line, name, names in imports_of(path):
            location = f"{path.relative_to(PACKAGE_ROOT.parent)}:{line}"
            if "InvalidInputError" in names and name != "sparkfs.errors":
                violations.append(f"{location} imports InvalidInputError from {name}")
            if is_under(name, "sparkfs.spark.stats"):
                violations.append(f"{location} imports {name}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "InvalidInputError":
                if ast.unparse(node.value) not in ("errors", "sparkfs.errors"):
                    violations.append(f"{path.relative_to(PACKAGE_ROOT.parent)}:{node.lineno} uses "
                                      f"{ast.unparse(node)}")
    assert not violations, "InvalidInputError must be imported from sparkfs.errors:\n" + "\n".join(violations)


def test_no_module_is_longer_than_the_limit():
    lengths = sorted(((len(path.read_text(encoding="utf-8").splitlines()), path) for path in source_files()),
                     reverse=True)
    too_long = [(lines, path) for lines, path in lengths if lines > MAX_MODULE_LINES]
    longest = "\n".join(f"{lines:5d} {path.relative_to(PACKAGE_ROOT.parent)}" for lines, path in lengths[:5])
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines; the longest:\n{longest}"


def test_the_import_collector_sees_every_kind_of_import():
    """The checker itself: imports in functions, relative imports and import_module are found."""
    fake = PACKAGE_ROOT / "core" / "fake_module.py"
    source = (
        "import numpy as np\n"
        "def f():\n"
        "    from pyspark.sql import functions\n"
        "    from ..spark import stats\n"
        "    from . import pairs\n"
        "    import importlib\n"
        "    importlib.import_module('sparkfs.cli')\n"
    )
    names = {name for _, name, _ in imports_of(fake, source)}
    assert {"numpy", "pyspark.sql", "sparkfs.spark", "sparkfs.spark.stats", "sparkfs.core.pairs",
            "sparkfs.cli"} <= names
    # and the allow-list sees through `from sparkfs import x`
    assert _outside("sparkfs", ("cli", "errors"), ["sparkfs.core", "sparkfs.errors"]) == ["sparkfs.cli"]
    assert _outside("sparkfs.spark.rows", (), ["sparkfs.core"]) == ["sparkfs.spark.rows"]




def _is_private(name):
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_a_private_name_of_another_module():
    """What a module shares is public (the pass API of ``spark/passes.py``, ``Rows``): a new method
    composes it from its own module, never through the engine's private helpers. A private
    module of the importer's own package (``from sparkfs.core import _manhattan``) is allowed."""
    violations = set()
    for path in source_files():
        package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
        for line, name, names in imports_of(path):
            if not is_under(name, "sparkfs"):
                continue
            violations.update(f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {imported} from {name}"
                              for imported in names if _is_private(imported) and name != package)
    assert not violations, "private names imported across modules:\n" + "\n".join(sorted(violations))


def module_graph():
    """{module: the sparkfs modules it imports}. ``from sparkfs.x import y`` counts as importing the
    module ``sparkfs.x.y`` when that is a module, else ``sparkfs.x``; a package's own ``__init__``
    (run first by any import below it) is not an edge."""
    modules = {module_name(path): path for path in source_files()}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for _, imported, names in imports_of(path):
            if not is_under(imported, "sparkfs"):
                continue
            submodules = [f"{imported}.{n}" for n in names if f"{imported}.{n}" in modules]
            if submodules:
                targets.update(submodules)
            elif imported in modules and (names or not modules[imported].name == "__init__.py"):
                targets.add(imported)
        graph[name] = {target for target in targets if target != name and target in modules
                       and modules[target].name != "__init__.py"}
    return graph


def import_cycles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_imports_one_that_imports_it_back():
    """No import circle, direct or through other modules, function-level imports included."""
    cycles = import_cycles(module_graph())
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_cycle_finder_finds_a_circle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
