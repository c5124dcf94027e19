"""Faults in the cluster: a task that fails on its first attempt is retried by Spark, and the
result equals the fault-free one exactly. Runs in a child process on ``local[2,3]``
(two threads, up to three attempts per task), with the engine's test-only fault hook, and with a
Python worker killed from outside by SIGKILL while a pass runs. Both happen in one child
(one JVM start for the two tests): first the injected faults, then the kills."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # each test runs a child with its own JVM

CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession
    from sparkfs import LmbaSelector, ReliefSelector

    armed = os.path.join(sys.argv[1], "armed")


    def arm_faults(directory):
        # Test-only wrapper: every module's aggregate_partitions (the engine's one reduced pass) is
        # wrapped so that, while directory/armed exists, the first attempt of each task with a block
        # fails (leaving a marker file behind); retries run the pass as it is.
        import sparkfs.spark.blocks as blocks

        original = blocks.aggregate_partitions

        def with_faults(df, columns, summarize_block, merge, **options):
            def summarize(block):
                from pyspark import TaskContext

                task = TaskContext.get()
                if os.path.exists(os.path.join(directory, "armed")) and task.attemptNumber() == 0:
                    marker = f"fault-stage{task.stageId()}-partition{task.partitionId()}"
                    open(os.path.join(directory, marker), "w").close()
                    raise RuntimeError(f"injected fault ({marker}, attempt 0)")
                return summarize_block(block)

            return original(df, columns, summarize, merge, **options)

        wrapped = [module for module in list(sys.modules.values())
                   if getattr(module, "__name__", "").startswith("sparkfs.")
                   and getattr(module, "aggregate_partitions", None) is original]
        for module in wrapped:
            module.aggregate_partitions = with_faults
        assert len(wrapped) >= 3, [module.__name__ for module in wrapped]


    arm_faults(sys.argv[1])
    spark = SparkSession.builder.master("local[2,3]").config("spark.ui.enabled", "false").getOrCreate()
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(float)
    df = spark.createDataFrame([(Vectors.dense(r.tolist()), float(l)) for r, l in zip(X, y)],
                               ["features", "label"]).repartition(3).cache()
    df.count()
    selectors = {
        "relieff": lambda: ReliefSelector(numFeatures=2, k=4),
        "lmba": lambda: LmbaSelector(numFeatures=2, batchSize=16, iterations=16),
    }
    results = {}
    for name, make in selectors.items():
        runs = []
        for faulty in (False, True):
            if faulty:
                open(armed, "w").close()
            try:
                runs.append(make().fit(df).scores.tolist())
            finally:
                if os.path.exists(armed):
                    os.remove(armed)
        results[name] = runs
    df.unpersist()
    print("RESULT " + json.dumps(results), flush=True)
""")


def test_a_task_failing_once_is_retried_and_gives_the_same_scores(faulty_child):
    assert faulty_child.returncode == 0, faulty_child.log[-3000:]
    line = next(line for line in faulty_child.stdout_lines if line.startswith("RESULT "))
    results = json.loads(line[len("RESULT "):])
    faults = [path.name for path in faulty_child.folder.iterdir() if path.name.startswith("fault-")]
    assert len(faults) >= 4, faults  # every faulty fit lost tasks, and Spark retried them
    assert "injected fault" in faulty_child.log[:faulty_child.kill_phase_starts]
    assert set(results) == {"relieff", "lmba"}
    for name, (clean, retried) in results.items():
        assert np.array_equal(np.asarray(clean), np.asarray(retried)), name


# A Python worker killed from outside (SIGKILL) while a pass runs ---------------------------------

# the second phase of the same child, in the same session (the fault hook is disarmed by then)
KILL_CHILD = CHILD + textwrap.dedent("""
    killed = os.path.join(sys.argv[1], "killed")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 60))
    y = (X[:, 0] - X[:, 1] > 0).astype(float)
    df = spark.createDataFrame([(Vectors.dense(r.tolist()), float(l)) for r, l in zip(X, y)],
                               ["features", "label"]).repartition(4).cache()
    df.count()
    # every row a query, Manhattan distances (a Numba loop, O(n^2 p)): a search pass of seconds
    fit = lambda: ReliefSelector(numFeatures=5, k=5, metric="manhattan").fit(df).scores.tolist()
    print("CLEAN " + json.dumps(fit()), flush=True)
    for attempt in range(60):  # until the test has killed a worker during one of these fits (the
        # canonical layout runs 3,000 rows as one task per stage: a kill can land just after a task)
        print("DISTURBED " + json.dumps(fit()), flush=True)
        if os.path.exists(killed):
            break
    spark.stop()
""")


def _descendants(root: int) -> list:
    """Pids of every process below ``root`` (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _proc_field(pid: int, name: str):
    try:
        if name == "cmdline":
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                return handle.read().replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[1]) if name == "ppid" else int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def _busy_python_workers(root: int) -> list:
    """Python workers under ``root`` that are running a task: a forked child of pyspark.daemon
    (or a pyspark.worker) whose CPU time grows over a short interval."""
    workers = []
    for pid in _descendants(root):
        command = _proc_field(pid, "cmdline") or ""
        parent_command = _proc_field(_proc_field(pid, "ppid") or 0, "cmdline") or ""
        if "pyspark.worker" in command or ("pyspark.daemon" in command and "pyspark.daemon" in parent_command):
            workers.append(pid)
    before = {pid: _proc_field(pid, "cpu") for pid in workers}
    time.sleep(0.15)
    return [pid for pid in workers if before[pid] is not None and (_proc_field(pid, "cpu") or 0) > before[pid]]


@pytest.fixture(scope="module")
def faulty_child(tmp_path_factory):
    """One child for both tests: the injected faults (RESULT line), then a clean fit (CLEAN line)
    and fits disturbed by SIGKILLs of busy Python workers sent from here. Returns what the tests
    check; the kill phase reads only the log written after the CLEAN line (the injected faults
    also log "Lost task")."""
    folder = tmp_path_factory.mktemp("faults")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    log = folder / "stderr.txt"  # a file, not a pipe: Spark's log must never block the child
    with open(log, "w") as stderr:
        child = subprocess.Popen([sys.executable, "-c", KILL_CHILD, str(folder)], stdout=subprocess.PIPE,
                                 stderr=stderr, text=True, env=env, start_new_session=True)
    lines, start, kills, task_lost = [], None, [], False

    def kill_phase_log():
        return log.read_text()[start:]

    try:
        for line in child.stdout:
            lines.append(line)
            if line.startswith("CLEAN "):
                start = len(log.read_text())
                break
        deadline = time.monotonic() + 90
        while start is not None and not task_lost and child.poll() is None and time.monotonic() < deadline:
            busy = _busy_python_workers(child.pid)
            if busy:  # kill it; an idle worker's death fails no task: then try the next busy one
                os.kill(busy[0], signal.SIGKILL)
                kills.append(busy[0])
                # wait for Spark to report the lost task before another kill: on a loaded machine the
                # log lags, and killing the same task's retries 3 times would fail the job (local[2,3])
                waited = time.monotonic() + 5
                while "Lost task" not in kill_phase_log() and time.monotonic() < waited and child.poll() is None:
                    time.sleep(0.2)
            task_lost = "Lost task" in kill_phase_log()
        if task_lost:
            (folder / "killed").write_text(" ".join(map(str, kills)))  # the child stops after this fit
        lines += child.communicate(timeout=600)[0].splitlines()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    return SimpleNamespace(folder=folder, stdout_lines=lines, log=log.read_text(), kill_phase_starts=start or 0,
                           kills=kills, task_lost=task_lost, returncode=child.returncode,
                           left_behind=_left_in_session(child.pid))


def test_a_python_worker_killed_mid_pass_is_retried_and_gives_the_same_scores(faulty_child):
    lines, err = faulty_child.stdout_lines, faulty_child.log[faulty_child.kill_phase_starts:]
    clean_line = next((line for line in lines if line.startswith("CLEAN ")), "")
    assert clean_line, faulty_child.log[-3000:]
    assert faulty_child.kills and faulty_child.task_lost, (f"killed {faulty_child.kills}; no task was lost: "
                                                           f"{err[-3000:]}")
    assert faulty_child.returncode == 0, err[-3000:]
    assert "Python worker exited unexpectedly" in err  # the task died with its worker; Spark retried it
    clean = np.asarray(json.loads(clean_line[len("CLEAN "):]))
    disturbed = [np.asarray(json.loads(line[len("DISTURBED "):])) for line in lines if line.startswith("DISTURBED ")]
    assert disturbed and all(np.array_equal(clean, scores) for scores in disturbed)
    assert faulty_child.left_behind == []  # no worker, daemon or JVM left behind


def _left_in_session(session: int, grace: float = 10.0) -> list:
    """Pids still in the session the child led (its JVM, daemon and workers), after a grace period."""
    deadline = time.monotonic() + grace
    while True:
        members = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[3]) == session:
                        members.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.2)
