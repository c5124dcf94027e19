"""The notebooks in notebooks/: Databricks-ready first cells, and every notebook run headless, top
to bottom, without errors.

The first three code cells of every notebook are the same: install (``%pip`` on Databricks only),
parameters (tagged ``parameters``) and session (the notebook's ``spark`` where one exists). They
are checked here without a kernel, with a stand-in for Databricks' IPython and ``dbutils``. The run
uses one kernel (the venv's Python) for all notebooks in sequence, so one Spark JVM starts: the
first notebook's session cell starts it, the later ones find it and use it as Databricks' would.
"""

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
nbformat = pytest.importorskip("nbformat")


def code_cells(path):
    return [cell for cell in nbformat.read(str(path), as_version=4).cells if cell.cell_type == "code"]


class FakeIPython:
    def __init__(self):
        self.magics = []

    def run_line_magic(self, name, line):
        self.magics.append((name, line))


class FakeLibrary:
    restarted = 0

    def restartPython(self):
        self.restarted += 1


class FakeDbutils:
    def __init__(self):
        self.library = FakeLibrary()


def run_install_cell(source, monkeypatch, runtime):
    if runtime is None:
        monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    else:
        monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", runtime)
    ipython, dbutils = FakeIPython(), FakeDbutils()
    exec(compile(source, "install cell", "exec"), {"get_ipython": lambda: ipython, "dbutils": dbutils})
    return ipython.magics, dbutils.library.restarted


def test_notebooks_open_with_install_parameters_and_session_cells(monkeypatch, tmp_path):
    """On Databricks the install cell pip-installs sparkfs (without a PyPI pyspark) and restarts
    Python; elsewhere it does nothing. The session cell keeps an existing ``spark`` and starts no
    other. The parameters cell (papermill's tag) holds the folder the notebook writes to."""
    assert {path.name for path in NOTEBOOKS} >= {"evaluate.ipynb", "lfs_quickstart.ipynb",
                                                 "relief_quickstart.ipynb", "term_matrix.ipynb"}
    import sparkfs.spark.session as session_module

    def no_new_session(*args, **kwargs):
        raise AssertionError("the session cell started a session although `spark` existed")

    monkeypatch.setattr(session_module, "get_spark", no_new_session)
    for path in NOTEBOOKS:
        install, parameters, session = code_cells(path)[:3]
        magics, restarted = run_install_cell(install.source, monkeypatch, "15.4")
        assert magics[0] == ("pip", "install --quiet --no-deps sparkfs"), path.name
        assert all(name == "pip" and "pyspark" not in line for name, line in magics), path.name
        assert restarted == 1, path.name
        assert run_install_cell(install.source, monkeypatch, None) == ([], 0), path.name
        assert parameters.metadata.get("tags") == ["parameters"], path.name
        namespace = {}
        exec(compile(parameters.source, "parameters cell", "exec"), namespace)
        assert namespace["WORK_DIR"] == "", path.name
        existing = SimpleNamespace(version="4.0.1")
        namespace = {"spark": existing, "os": os, "WORK_DIR": str(tmp_path / path.stem)}
        exec(compile(session.source, "session cell", "exec"), namespace)
        assert namespace["spark"] is existing and namespace["work"] == namespace["WORK_DIR"], path.name


def _execute(notebook, kernel_manager):
    import nbclient

    nbclient.NotebookClient(notebook, km=kernel_manager, timeout=300).execute()
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]


def _text(outputs):
    return "".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")


def _pcmac_subset(shared_data, folder, every=3):
    """Every ``every``-th PCMAC post, saved in the layout the notebook reads (CSR arrays, shape, y):
    the real vocabulary and sparsity at a third of the rows (test time)."""
    import numpy as np
    import scipy.sparse

    with np.load(shared_data / "PCMAC.npz") as stored:
        counts = scipy.sparse.csr_matrix((stored["data"], stored["indices"], stored["indptr"]),
                                         shape=tuple(stored["shape"]))[::every]
        y = stored["y"][::every]
    path = folder / "PCMAC_subset.npz"
    np.savez(path, data=counts.data, indices=counts.indices, indptr=counts.indptr, shape=np.array(counts.shape), y=y)
    return path, counts.shape


@pytest.mark.slow
@pytest.mark.spark  # the kernel starts its own JVM
def test_notebooks_run_headless_in_one_kernel(shared_data, tmp_path):
    """Every notebook, in one kernel of this interpreter (one Spark start); the term matrix one on
    a third of the PCMAC newsgroup counts with 2 folds, passed as papermill would, through an
    injected parameters cell. The LFS quick start's Databricks path runs on the local catalog: a table
    in, the selection appended to a table, in a warehouse that is a temporary folder (nothing appears
    in the notebooks' folder, the kernel's working directory)."""
    pytest.importorskip("nbclient")
    from jupyter_client.manager import KernelManager
    from nbformat.v4 import new_code_cell, new_notebook

    term_counts, (n_documents, n_terms) = _pcmac_subset(shared_data, tmp_path)

    before = set(os.listdir(NOTEBOOK_DIR))
    kernel_manager = KernelManager(kernel_name="python3")
    kernel_manager.start_kernel(cwd=str(NOTEBOOK_DIR))
    between = new_notebook(cells=[new_code_cell("%reset -f"), new_code_cell("import sys\nprint(sys.executable)")])
    sessions = {}
    try:
        for path in NOTEBOOKS:
            printed = _text(_execute(nbformat.from_dict(between), kernel_manager))
            assert os.path.realpath(printed.strip()) == os.path.realpath(sys.executable)
            notebook = nbformat.read(str(path), as_version=4)
            if path.name == "term_matrix.ipynb":
                position = next(i for i, cell in enumerate(notebook.cells)
                                if "parameters" in cell.metadata.get("tags", []))
                injected = new_code_cell(f"TERM_COUNTS = {str(term_counts)!r}\nFOLDS = 2",
                                         metadata={"tags": ["injected-parameters"]})
                notebook.cells.insert(position + 1, injected)
            outputs = _execute(notebook, kernel_manager)
            assert not [output for output in outputs if output.get("output_type") == "error"], path.name
            session_cell = code_cells(path)[2]
            sessions[path.name] = _text(next(cell for cell in notebook.cells if cell.source == session_cell.source)
                                        .get("outputs", []))
            if path.name == "term_matrix.ipynb":
                text = _text(outputs)
                assert f"{n_documents} documents x {n_terms} terms" in text and "test accuracy" in text
                assert "first section: Recommendation" in text
            if path.name == "lfs_quickstart.ipynb":
                assert "run digits-lfs-1: lfs on 1797 rows, 20 of 64 features selected" in _text(outputs)
    finally:
        stop = new_notebook(cells=[new_code_cell("from pyspark.sql import SparkSession\n"
                                                 "active = SparkSession.getActiveSession()\n"
                                                 "active is None or active.stop()")])
        try:
            _execute(stop, kernel_manager)
        finally:
            kernel_manager.shutdown_kernel(now=False)
    assert set(os.listdir(NOTEBOOK_DIR)) - before == set()   # no spark-warehouse, no metastore_db
    first, *later = [sessions[path.name] for path in NOTEBOOKS]
    assert "started here" in first
    assert later and all("of the notebook's session" in text for text in later)
