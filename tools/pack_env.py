"""Build the executors' Python environment: ``dist/sparkfs-env.tar.gz`` (``make pack``).

A fresh venv (``dist/.pack-venv``, made without pip) gets sparkfs from a wheel of this checkout,
installed non-editable (an editable install points at the checkout, which the executors do not
have) and with ``--no-deps``, then sparkfs's runtime dependencies from pyproject.toml less pyspark:
the cluster's Spark ships its own pyspark to every Python worker (``pyspark.zip`` and py4j on the
workers' PYTHONPATH), and a second one of another version would shadow it. The test suites of the
dependencies (``*/tests``: never imported) are removed, then ``venv-pack`` writes the archive, and
the archive is unpacked into a temporary folder and its Python asked to import what the executors
import. Use it as::

    --conf spark.archives=dist/sparkfs-env.tar.gz#environment --conf spark.pyspark.python=./environment/bin/python

venv-pack does not copy the interpreter: ``environment/bin/python`` links to the Python this venv
was made from (``sys.base_prefix``), which must exist at the same path, same minor version, on every
node (docs/cluster.md). Run with the interpreter whose venv-pack to use: ``.venv/bin/python tools/pack_env.py``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
#: Written into the pack venv: only a folder holding it is ever deleted by this script.
MARKER = ".sparkfs-pack-venv"
#: What the executors import (pyspark comes from the cluster's Spark, not from the archive).
IMPORT_CHECK = "import sparkfs, numpy, numba, pyarrow, pandas, scipy, sklearn, yaml"


def runtime_requirements(pyproject: Path) -> list[str]:
    """sparkfs's dependencies as pyproject.toml declares them, less pyspark."""
    declared = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return [requirement for requirement in declared
            if re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower() != "pyspark"]


def run(*command) -> None:
    print("+", " ".join(str(part) for part in command), flush=True)
    subprocess.run([str(part) for part in command], check=True)


def fresh_venv(path: Path) -> Path:
    if path.exists():
        if not (path / MARKER).exists():
            sys.exit(f"pack_env: {path} exists and was not made by this script; remove it yourself")
        shutil.rmtree(path)
    run(sys.executable, "-m", "venv", "--without-pip", path)
    (path / MARKER).write_text("made by tools/pack_env.py; deleted and rebuilt by it\n")
    return path / "bin" / "python"


def prune(venv: Path) -> None:
    """Remove the dependencies' own test suites (never imported at run time) and pip's leftovers."""
    for site in venv.glob("lib/python*/site-packages"):
        for tests in sorted(site.glob("*/**/tests")) + sorted(site.glob("*/tests")):
            if tests.is_dir() and not tests.relative_to(site).parts[0].startswith("sparkfs"):
                shutil.rmtree(tests, ignore_errors=True)


def spark_python_path() -> str:
    """The PYTHONPATH Spark gives its Python workers (``pyspark.zip`` and py4j from its own
    ``python/lib``), here from the pyspark of the Python running this script."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        sys.exit("pack_env: run this with a Python that has pyspark (the check imports sparkfs with Spark's "
                 "pyspark.zip)")
    return ":".join(str(path) for path in sorted(Path(spec.origin).parent.glob("python/lib/*.zip")))


def check_archive(archive: Path) -> None:
    """Unpack the archive as Spark does (``#environment``) and import what the executors import,
    with pyspark from Spark's own zip files (as on the executors), outside the checkout."""
    with tempfile.TemporaryDirectory(prefix="sparkfs-pack-check-") as folder:
        with tarfile.open(archive) as packed:
            packed.extractall(Path(folder, "environment"), filter="fully_trusted")
        code = (f"{IMPORT_CHECK}; import importlib.util as u; "
                "assert sparkfs.__file__.startswith('environment/') or '/environment/' in sparkfs.__file__, "
                "sparkfs.__file__; assert '.zip' in u.find_spec('pyspark').origin, 'pyspark was packed'")
        print(f"+ (in {folder}) environment/bin/python -c {code!r}", flush=True)
        subprocess.run([str(Path("environment", "bin", "python")), "-c", code], cwd=folder, check=True,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": spark_python_path()})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default=str(ROOT / "dist" / "sparkfs-env.tar.gz"))
    parser.add_argument("--venv", default=str(ROOT / "dist" / ".pack-venv"))
    parser.add_argument("--python-prefix", help="the prefix of the nodes' Python (e.g. /usr), same minor version as "
                        "this one, when it is not at this one's path there (venv-pack's --python-prefix)")
    parser.add_argument("--compress-level", type=int, default=4, choices=range(10), metavar="0-9",
                        help="gzip level of the archive (default 4, venv-pack's; 1 packs in 60%% of the time, "
                             "9%% larger)")
    args = parser.parse_args()
    started = time.monotonic()
    output, venv = Path(args.output), Path(args.venv)
    output.parent.mkdir(parents=True, exist_ok=True)
    python = fresh_venv(venv)
    with tempfile.TemporaryDirectory(prefix="sparkfs-wheel-") as wheels:
        run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels, ROOT)
        wheel = next(Path(wheels).glob("sparkfs-*.whl"))
        pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet"]
        run(*pip, *runtime_requirements(ROOT / "pyproject.toml"))
        run(*pip, "--no-deps", "--no-warn-conflicts", wheel)  # its pyspark is the cluster's
    prune(venv)
    prefix = ["--python-prefix", args.python_prefix] if args.python_prefix else []
    run(sys.executable, "-m", "venv_pack", "--quiet", "--force", "--prefix", venv, "--output", output,
        "--compress-level", args.compress_level, *prefix)
    check_archive(output)
    print(f"pack_env: {output} ({output.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
