"""sparkfs on a real Spark standalone cluster whose workers cannot see this checkout.

One master and two workers (1 core, 1 GiB each) started from pyspark's own jars with
``spark-class``, once for the module. Each worker runs in its own mount namespace (``unshare -m``)
with a tmpfs over the checkout, so neither it nor its executors can see the project or its .venv,
as on separate nodes: Spark's jars reach them through a bind mount of the pyspark package made
(before the tmpfs) at a path outside the checkout, as a Spark installed at /opt/spark would, and
only Spark's ``pyspark.zip``/py4j are on their Python workers' path. The executors' Python comes
from ``make pack``'s archive (built once per session when missing or older than the sources).
Every process is started in a new session and stopped by its process group, also on failure.
The spark-submit application loses worker-2 (killed with its executor) after its first run; the
tests after it run on worker-1 alone.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "dist" / "sparkfs-env.tar.gz"
RECIPE = ["--conf", f"spark.archives={ARCHIVE}#environment", "--conf", "spark.pyspark.python=./environment/bin/python"]
#: The sources the archive is built from: a newer one rebuilds it.
PACK_SOURCES = ("sparkfs", "pyproject.toml", "tools/pack_env.py")
START_TIMEOUT = 90
#: The JIT's first tier only, in the daemons and the executors, as tests/conftest.py sets it for every
#: driver: the test's JVMs are short-lived (the settings a user's recipe needs are RECIPE's alone).
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
EXECUTOR_OPTIONS = ["--conf", f"spark.executor.defaultJavaOptions={TEST_JVM_OPTIONS}"]


def _pyspark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _newest_source() -> float:
    paths = [REPO / name for name in PACK_SOURCES]
    files = [file for path in paths for file in ([path] if path.is_file() else path.rglob("*.py"))]
    return max(file.stat().st_mtime for file in files)


@pytest.fixture(scope="session")
def packed_environment():
    """dist/sparkfs-env.tar.gz, built by tools/pack_env.py (make pack) when missing or stale."""
    if not ARCHIVE.exists() or ARCHIVE.stat().st_mtime < _newest_source():
        built = subprocess.run([sys.executable, str(REPO / "tools" / "pack_env.py"), "--output", str(ARCHIVE),
                                "--compress-level", "1"],
                               capture_output=True, text=True, timeout=1200)
        assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    return ARCHIVE


def _namespace_refusal(folder: Path):
    """Why a worker cannot get a mount namespace with the checkout hidden here, or None."""
    if not (shutil.which("unshare") and shutil.which("mount")):
        return "unshare or mount is not installed"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            f"mount -t tmpfs none '{REPO}' && test ! -e '{REPO}/pyproject.toml'"],
                           capture_output=True, text=True, cwd=folder)
    if probe.returncode:
        return f"cannot hide the checkout in a mount namespace: {(probe.stderr or probe.stdout).strip()[:300]}"
    return None


def _worker_environ(spark_home: str) -> dict:
    """A worker node's environment: no venv on PATH, no PYTHONPATH, no PYSPARK_PYTHON; finished
    applications' folders removed within seconds (Spark's worker cleanup)."""
    environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
               "LANG": "C.UTF-8", "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_OPTIONS,
               "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.interval=5 "
                                    "-Dspark.worker.cleanup.appDataTtl=1"}
    if os.environ.get("JAVA_HOME"):
        environ["JAVA_HOME"] = os.environ["JAVA_HOME"]
    return environ


def _master_state(webui_port: int):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=2) as answer:
            return json.loads(answer.read())
    except OSError:
        return None


def _stop(process: subprocess.Popen) -> None:
    """Stop a process we started in its own session, and everything in its group (executors,
    Python workers): SIGTERM, then SIGKILL after 10 s."""
    for signal_number, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, signal_number)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            os.killpg(process.pid, 0)  # a child (an executor) may outlive its worker
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


class Cluster:
    def __init__(self, folder: Path):
        self.folder = folder
        self.processes = {}
        self.worker_ports = {}
        self.master_port, self.webui_port = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.master_port}"

    def start_master(self):
        home = str(_pyspark_home())
        log = open(self.folder / "master.log", "w")
        self.processes["master"] = subprocess.Popen(
            [f"{home}/bin/spark-class", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.master_port), "--webui-port", str(self.webui_port)],
            stdout=log, stderr=subprocess.STDOUT, env=_worker_environ(home), start_new_session=True)

    def start_worker(self, name: str):
        """A worker in a mount namespace of its own: Spark bind-mounted outside the checkout, then
        a tmpfs over the checkout."""
        spark_home = self.folder / "spark-home"  # an empty mount point; the bind mount is the worker's alone
        spark_home.mkdir(exist_ok=True)
        work_dir = self.folder / f"{name}-work"
        work_dir.mkdir(exist_ok=True)
        self.worker_ports[name] = _free_port()
        # the executors' folders (each unpacks the 709 MB environment per application) on a tmpfs of the
        # worker's own: gone with its namespace, nothing to delete; the worker removes finished applications'
        script = (f"mount --bind '{_pyspark_home()}' '{spark_home}' && mount -t tmpfs none '{REPO}' && "
                  f"mount -t tmpfs -o size=4g none '{work_dir}' && "
                  f"exec '{spark_home}/bin/spark-class' org.apache.spark.deploy.worker.Worker --host 127.0.0.1 "
                  f"--port {self.worker_ports[name]} --cores 1 --memory 1g --webui-port {_free_port()} "
                  f"--work-dir '{work_dir}' {self.url}")
        log = open(self.folder / f"{name}.log", "w")
        self.processes[name] = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script], cwd=self.folder,
            stdout=log, stderr=subprocess.STDOUT, env=_worker_environ(str(spark_home)), start_new_session=True)

    def wait_for_workers(self, count: int):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            state = _master_state(self.webui_port)
            if state and state.get("aliveworkers", 0) >= count:
                return
            dead = [name for name, process in self.processes.items() if process.poll() is not None]
            if dead:
                break
            time.sleep(1)
        logs = {path.name: path.read_text()[-1500:] for path in self.folder.glob("*.log")}
        raise AssertionError(f"the cluster did not come up with {count} workers: {logs}")

    def cores_used(self, name: str) -> int:
        """Cores the master has given applications on worker ``name`` (its executors), 0 if unknown."""
        state = _master_state(self.webui_port) or {}
        return sum(int(worker.get("coresused", 0)) for worker in state.get("workers", [])
                   if int(worker.get("port", -1)) == self.worker_ports[name] and worker.get("state") == "ALIVE")

    def kill(self, name: str):
        """A node lost: SIGKILL to the worker and everything in its group (its executors)."""
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(timeout=30)

    def stop(self):
        for process in reversed(list(self.processes.values())):
            _stop(process)


@pytest.fixture(scope="module")
def cluster():
    """A master and two hidden-checkout workers on 127.0.0.1, started once for the module."""
    folder = Path(tempfile.mkdtemp(prefix="sparkfs-cluster-"))
    refusal = _namespace_refusal(folder)
    if refusal:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(refusal)
    started = Cluster(folder)
    try:
        started.start_master()
        started.start_worker("worker-1")
        started.start_worker("worker-2")
        started.wait_for_workers(2)
        yield started
    finally:
        started.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The Optical Pen digits as LIBSVM, outside the checkout (a path every worker sees)."""
    from sparkfs.io.datasets import write_digits_libsvm

    return write_digits_libsvm(str(tmp_path_factory.mktemp("cluster-data") / "digits.libsvm"))


def _without_local_python(environ=None) -> dict:
    """This process's environment as a new user's shell has it: no PYSPARK_PYTHON, no master."""
    inherited = {key: value for key, value in os.environ.items()
                 if key not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARKFS_MASTER")}
    return {**inherited, **(environ or {}), "SPARK_LOCAL_IP": "127.0.0.1"}


def _select(args, timeout=600):
    """``sparkfs select`` as a new user runs it: a process of this interpreter, no PYSPARK_PYTHON."""
    return subprocess.run([sys.executable, "-m", "sparkfs.cli", "select", *args, "--conf", "spark.ui.enabled=false",
                           *EXECUTOR_OPTIONS],
                          capture_output=True, text=True, env=_without_local_python(), timeout=timeout, cwd=REPO)


def _output(folder: Path):
    import pandas as pd

    table = pd.read_parquet(folder / "features.parquet").sort_values("index").reset_index(drop=True)
    return table, json.loads((folder / "summary.json").read_text())


def _same_as_local(folder: Path, arguments, reference: Path, method: str, k: int):
    """The cluster's output equals the in-process local[2] session's (the `spark` fixture) to the bit."""
    from sparkfs.cli import main

    assert main([*arguments, "--output", str(reference)]) == 0
    (table, summary), (local_table, _) = _output(folder), _output(reference)
    assert summary["method"] == method and table["selected"].sum() == k
    assert table["score"].tolist() == local_table["score"].tolist(), method
    assert table["selected"].tolist() == local_table["selected"].tolist(), method


def _select_args(digits, method, k, *params):
    return ["select", "--input", digits, "--format", "libsvm", "--method", method, "--num-features", str(k),
            "--deterministic", *params]


def test_the_cli_recipe_gives_local_selection(spark, cluster, packed_environment, digits, tmp_path):
    """README's recipe: `sparkfs select --master spark://... --conf spark.archives=...#environment
    --conf spark.pyspark.python=./environment/bin/python` gives local[2]'s LFS scores to the last bit."""
    arguments = _select_args(digits, "lfs", 10, "--param", "gamma=-0.5")
    ran = _select([*arguments[1:], "--master", cluster.url, *RECIPE, "--output", str(tmp_path / "cluster")])
    assert ran.returncode == 0, ran.stderr[-4000:]
    _same_as_local(tmp_path / "cluster", arguments, tmp_path / "local", "lfs", 10)


#: Run under spark-submit in one application (the executors and their environment start once),
#: compared with local[2] to the bit (--deterministic).
SUBMIT_RUNS = {
    "relieff": ("relieff", 10, "--param", "sampleSize=300"),   # broadcast queries, the Numba kernel
    "mrmr": ("mrmr", 5),                                       # cached codes, one pass per chosen feature
}
#: Every selector family in the same application, through jobs/select_features.py with a config
#: file and overriding flags, on breast-w; compared with local[2] to rounding (1e-10).
FAMILY_RUNS = {
    "lfs": [],
    # the neighbour engine across executor JVMs: broadcast queries, tree merge, Numba L1 kernel
    "relieff": ["--param", "metric=manhattan", "--param", "scaling=range", "--param", "k=5"],
    # an iterative method: one job per step across executor JVMs, cached blocks
    "lmba": ["--param", "k=2", "--param", "batchSize=128", "--param", "iterations=256"],
    # the baselines' family (Spark ML's ANOVATest in the JVM)
    "anova": [],
    # unsupervised: FCM passes, group moments, ISE pair sums per query batch
    "parzen-ise": ["--param", "maxIter=2", "--param", "fcmMaxIter=5", "--param", "heldOutFeature=none"],
    # SVM-RFE: the label pass, the column summary and the rows collected from executor JVMs
    "svm-rfe": ["--param", "step=0.5"],
}
# svm-rfe with solver=spark (one job per L-BFGS step) ran over 5 minutes here on a loaded 2-core
# machine, too long for the suite: not part of this run.


@pytest.fixture(scope="module")
def breast(tmp_path_factory, shared_data):
    """breast-w as LIBSVM, outside the checkout."""
    from sklearn.datasets import dump_svmlight_file

    data = np.load(shared_data / "breast_w.npz")
    path = tmp_path_factory.mktemp("cluster-breast") / "breast.libsvm"
    dump_svmlight_file(data["X"], data["y"], str(path), zero_based=False)
    return str(path)


@pytest.fixture(scope="module")
def breast_parquet(spark, breast, tmp_path_factory):
    """breast-w converted to Parquet (``sparkfs convert``) twice: every row (a nightly job's input
    table) and its first 60 rows (tomorrow's rows), outside the checkout."""
    from sparkfs.cli import main

    folder = tmp_path_factory.mktemp("cluster-tables")
    lines = Path(breast).read_text().splitlines()
    (folder / "new.libsvm").write_text("\n".join(lines[:60]) + "\n")
    for name, source in (("train", breast), ("new", str(folder / "new.libsvm"))):
        assert main(["convert", "--input", source, "--output", str(folder / name), "--format", "libsvm",
                     "--vector-size", "9", "--master", "local[2]"]) == 0
    return folder


def _table_runs(breast_parquet: Path, folder: Path) -> dict:
    """A nightly job and the next one, as the platform page tells it: select reads a catalog table
    (a path-based one) and appends its selection to a table, with its model in the output; apply
    reads tomorrow's rows and writes them, reduced, to a table. The application's catalog keeps its
    warehouse in the driver's working folder, which the workers see."""
    return {
        "table-select": ["sparkfs", "select", "--input-table", f"parquet.`{breast_parquet / 'train'}`",
                         "--method", "lfs", "--num-features", "4", "--deterministic",
                         "--output", str(folder / "table-select"), "--output-table", "nightly_selection",
                         "--run-id", "night-1"],
        "table-apply": ["sparkfs", "apply", "--model", str(folder / "table-select"),
                        "--input-table", f"parquet.`{breast_parquet / 'new'}`", "--output-table", "nightly_reduced",
                        "--run-id", "night-1"],
    }


@pytest.fixture(scope="module")
def submitted(cluster, packed_environment, digits, breast, breast_parquet, tmp_path_factory):
    """Spark's own recipe, `PYSPARK_PYTHON=./environment/bin/python spark-submit --archives
    env.tar.gz#environment ...`: one application runs jobs/select_features.py for every run above
    (tests/integration/cluster_job_runs.py). Returns the folder, the exit codes and the driver's log."""
    folder = tmp_path_factory.mktemp("submitted")
    runs = {name: [*_select_args(digits, *run)[1:], "--output", str(folder / name)]
            for name, run in SUBMIT_RUNS.items()}
    for method, params in FAMILY_RUNS.items():
        config = folder / f"{method}.yaml"
        config.write_text(f"input: {{path: {breast}, format: libsvm}}\nmethod: {method}\n"
                          f"selection: {{num_features: 2}}\noutput: {{path: {folder / ('family-' + method)}}}\n")
        runs[f"family-{method}"] = ["--config", str(config), "--num-features", "4", *params]
    for command, arguments in STUDY_RUNS.items():
        runs[command] = ["sparkfs", command, "--input", breast, "--format", "libsvm", *arguments,
                         "--output", str(folder / command)]
    runs.update(_table_runs(breast_parquet, folder))
    (folder / "runs.json").write_text(json.dumps(runs))
    environ = _without_local_python({"PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_HOME": str(_pyspark_home()),
                                     "PYSPARK_PYTHON": "./environment/bin/python"})
    stdout_path, stderr_path = folder / "stdout.txt", folder / "stderr.txt"
    with open(stdout_path, "w") as stdout, open(stderr_path, "w") as stderr:  # files: never a blocked pipe
        submitted = subprocess.Popen(
            [str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.url,
             "--archives", f"{packed_environment}#environment", "--conf", "spark.ui.enabled=false", *EXECUTOR_OPTIONS,
             "--conf", "spark.default.parallelism=3",
             str(REPO / "tests" / "integration" / "cluster_job_runs.py"), str(folder / "runs.json"),
             str(folder / "exit_codes.json")],
            stdout=stdout, stderr=stderr, env=environ, cwd=folder, start_new_session=True)
        try:
            killed_while_in_use = _kill_a_worker_after_the_first_run(cluster, submitted, stderr_path)
            submitted.wait(timeout=900)
        finally:
            if submitted.poll() is None:
                os.killpg(submitted.pid, signal.SIGKILL)
    out_text, log = stdout_path.read_text(), stderr_path.read_text()
    assert submitted.returncode == 0, out_text[-3000:] + log[-3000:]
    assert killed_while_in_use, "worker-2 ran no executor of the application when it was killed"
    # spark-submit merges the Python driver's stderr into its stdout; the job logs to the JVM's stderr
    assert "stage=" not in out_text and "sparkfs: error" not in out_text, out_text[-3000:]
    return folder, json.loads((folder / "exit_codes.json").read_text()), log


def _kill_a_worker_after_the_first_run(cluster, submitted, stderr_path) -> bool:
    """Once the application's first run is done (its executors are up on both workers), kill
    worker-2 with its executor, as a node lost mid-application: the other runs must still finish
    on worker-1 with the same results. Returns whether worker-2 held an executor then."""
    deadline = time.monotonic() + 600
    while "stage=fit status=done" not in stderr_path.read_text():
        if submitted.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    in_use = cluster.cores_used("worker-2") > 0
    cluster.kill("worker-2")
    return in_use


def test_spark_submit_with_archives_gives_local_selection(spark, submitted, digits, tmp_path):
    """MRMR and ReliefF in the spark-submit application give local[2]'s selection to the last bit,
    though worker-2 (and its executor) was killed after the first run: the lost executor's tasks ran
    again on worker-1."""
    folder, exit_codes, log = submitted
    assert "Lost executor" in log or "lost executor" in log.lower(), log[-3000:]
    assert {name: exit_codes[name] for name in SUBMIT_RUNS} == dict.fromkeys(SUBMIT_RUNS, 0), log[-3000:]
    assert log.count("stage=fit status=done") >= len(SUBMIT_RUNS) + len(FAMILY_RUNS)
    for name, (method, k, *params) in SUBMIT_RUNS.items():
        _same_as_local(folder / name, _select_args(digits, method, k, *params), tmp_path / f"{name}-local",
                       method, k)


@pytest.mark.parametrize("method", list(FAMILY_RUNS))
def test_each_family_on_the_cluster_gives_local_scores(spark, submitted, breast, method, tmp_path):
    """Each family, with its config file and overriding flags, gives the in-process local[2] scores."""
    from sparkfs.cli import main

    folder, exit_codes, log = submitted
    assert exit_codes[f"family-{method}"] == 0, log[-3000:]
    params = FAMILY_RUNS[method]
    table, summary = _output(folder / f"family-{method}")
    assert summary["method"] == method and table["selected"].sum() == 4
    for name, value in (text.split("=") for text in params[1::2]):
        assert str(summary["params"][name]) == value
    assert main(["select", "--master", "local[2]", "--input", breast, "--format", "libsvm", "--method", method,
                 "--num-features", "4", *params, "--output", str(tmp_path / "local")]) == 0
    local_table, _ = _output(tmp_path / "local")
    np.testing.assert_allclose(table["score"], local_table["score"], rtol=1e-10, atol=1e-15)
    assert table["selected"].tolist() == local_table["selected"].tolist()


#: `sparkfs evaluate` and `sparkfs stability` in the spark-submit application (after the killed worker).
STUDY_RUNS = {
    "evaluate": ["--methods", "lfs,relieff", "--classifiers", "nb", "--num-features", "2,4", "--cv", "3"],
    "stability": ["--method", "lfs", "--runs", "3", "--num-features", "2,4", "--seed", "3"],
}


def test_evaluate_and_stability_on_the_cluster_equal_local(spark, submitted, breast, tmp_path):
    """The studies run on the cluster too: evaluate's accuracies and stability's selections equal
    the same commands on local[2] (selection in each fold on the executors, classifiers on the driver)."""
    from sparkfs.cli import main

    folder, exit_codes, log = submitted
    assert {command: exit_codes[command] for command in STUDY_RUNS} == dict.fromkeys(STUDY_RUNS, 0), log[-3000:]
    for command, arguments in STUDY_RUNS.items():
        assert main([command, "--master", "local[2]", "--input", breast, "--format", "libsvm", *arguments,
                     "--output", str(tmp_path / command)]) == 0
    keys = ["method", "classifier", "k", "fold"]
    on_cluster = pd.read_parquet(folder / "evaluate" / "results.parquet").sort_values(keys).reset_index(drop=True)
    local = pd.read_parquet(tmp_path / "evaluate" / "results.parquet").sort_values(keys).reset_index(drop=True)
    assert len(on_cluster) == 2 * 2 * 3 and on_cluster[keys].equals(local[keys])
    np.testing.assert_allclose(on_cluster["accuracy"], local["accuracy"])
    stability = [json.loads((where / "stability" / "stability.json").read_text()) for where in (folder, tmp_path)]
    assert stability[0]["summary"] == stability[1]["summary"]


def test_a_nightly_job_reads_and_writes_tables_on_the_cluster(spark, submitted, breast_parquet, tmp_path):
    """select --input-table --output-table and apply --input-table --output-table in the cluster's
    application: the selection table holds the run's rows with local[2]'s scores (--deterministic), the
    output folder the model, and the reduced table tomorrow's rows sliced to the selected features."""
    from sparkfs.cli import main

    folder, exit_codes, log = submitted
    assert {name: exit_codes[name] for name in ("table-select", "table-apply")} == \
        {"table-select": 0, "table-apply": 0}, log[-3000:]
    warehouse = folder / "spark-warehouse"
    rows = spark.read.parquet(str(warehouse / "nightly_selection")).toPandas().sort_values("index")
    assert set(rows["run_id"]) == {"night-1"} and len(rows) == 9 and rows["selected"].sum() == 4
    assert (folder / "table-select" / "model").is_dir()
    assert main(["select", "--master", "local[2]", "--input-table", f"parquet.`{breast_parquet / 'train'}`",
                 "--method", "lfs", "--num-features", "4", "--deterministic", "--output", str(tmp_path / "local")]) == 0
    local, _ = _output(tmp_path / "local")
    assert rows["score"].tolist() == local["score"].tolist()
    selected = sorted(local.loc[local["selected"], "index"])
    reduced = spark.read.parquet(str(warehouse / "nightly_reduced"))
    assert set(reduced.columns) >= {"features", "label", "run_id"}
    new = spark.read.parquet(str(breast_parquet / "new"))
    assert sorted(tuple(row["features"].toArray()) for row in reduced.collect()) == \
        sorted(tuple(row["features"].toArray()[selected]) for row in new.collect())


def test_without_the_environment_the_executors_python_is_named(cluster, digits, tmp_path):
    """No archive: the executors run Spark's default python3, which has no sparkfs (nor numpy):
    exit 1 and one message naming that Python and the recipe, not a Py4J error."""
    ran = _select(["--input", digits, "--format", "libsvm", "--method", "lfs", "--num-features", "5",
                   "--master", cluster.url, "--output", str(tmp_path / "out")])
    assert ran.returncode == 1, ran.stderr[-4000:]
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("sparkfs: failed: the executors"), ran.stderr[-4000:]
    assert "python3" in last and "make pack" in last and "spark.archives=" in last, last
    assert "Py4JJavaError" not in last


def test_an_input_only_the_driver_has_is_named(cluster, digits, tmp_path):
    """An input under the checkout exists on the driver, not on the workers (hidden there); the
    file is read before any Python runs on the executors, so no environment is needed."""
    with tempfile.TemporaryDirectory(dir=REPO, prefix=".cluster-test-input-") as folder:
        driver_only = shutil.copy(digits, folder)
        ran = _select(["--input", driver_only, "--format", "libsvm", "--method", "lfs", "--num-features", "5",
                       "--master", cluster.url, "--output", str(tmp_path / "out")])
    assert ran.returncode == 1, ran.stderr[-4000:]
    last = ran.stderr.strip().splitlines()[-1]
    assert "exists on the driver" in last and driver_only in last and "HDFS" in last, ran.stderr[-4000:]
