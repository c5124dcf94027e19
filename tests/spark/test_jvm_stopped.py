"""A driver JVM killed from outside is not an out-of-memory, on canned inputs
(no JVM): a JVM ended by a signal 1.3 s after its start was reported as "the Spark JVM stopped
during the job ... (most often java.lang.OutOfMemoryError ...). Give it more memory: --driver-memory
22g" on a 24 GB machine."""

import pytest

import sparkfs.spark.failures as failures
import sparkfs.spark.memory as memory_module
from sparkfs.spark.failures import (
    more_memory_advice,
    oom_killed,
    resource_failure,
    stopped_jvm_message,
    usable_memory_bytes,
)

GIB = 1 << 30
KERNEL_LOG = """[ 1234.5] systemd[1]: Started Session 3.
[ 2001.1] java invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0
[ 2001.2] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task=java,pid=4242,uid=0
[ 2001.3] Out of memory: Killed process 4242 (java) total-vm:30000000kB, anon-rss:20000000kB
"""


@pytest.fixture
def jvm_gone(monkeypatch):
    """resource_failure's view of a JVM that broke its connection, with the facts set by the test."""
    monkeypatch.setitem(memory_module.applied_settings, "spark.driver.memory", "11g")
    monkeypatch.setattr(memory_module, "total_memory_bytes", lambda *a, **k: 24 * GIB)
    monkeypatch.setattr(memory_module, "available_memory_bytes", lambda *a, **k: 6 * GIB)
    monkeypatch.setattr(failures, "_jvm_pid", lambda: 4242)

    def diagnose(signal_number, log_text):
        monkeypatch.setattr(failures, "jvm_exit_signal", lambda: signal_number)
        monkeypatch.setattr(failures, "kernel_log", lambda: log_text)
        return str(resource_failure(ConnectionRefusedError(111, "Connection refused")))

    return diagnose


def test_a_sigterm_is_named_and_memory_is_not_advised(jvm_gone):
    text = jvm_gone(15, None)
    assert "killed by a signal from outside sparkfs (SIGTERM, signal 15" in text
    assert "not a lack of memory" in text
    assert "--driver-memory" not in text and "OutOfMemoryError" not in text


def test_a_sigkill_the_kernel_log_shows_as_an_oom_kill_is_named_as_that(jvm_gone):
    text = jvm_gone(9, KERNEL_LOG)
    assert "killed by the operating system (SIGKILL: the kernel's out-of-memory killer (the kernel log shows it))" \
        in text
    assert "spark.driver.memory=11g" in text and "6.0 GiB are available now" in text


def test_a_sigkill_of_another_process_is_not_called_an_oom_kill(jvm_gone):
    text = jvm_gone(9, KERNEL_LOG.replace("4242", "777"))
    assert "killed by a signal from outside sparkfs (SIGKILL, signal 9" in text
    assert "the kernel log shows no out-of-memory kill of it" in text
    assert "--driver-memory" not in text


def test_a_sigkill_without_a_readable_kernel_log_says_it_cannot_tell(jvm_gone):
    text = jvm_gone(9, None)
    assert "killed by the operating system (SIGKILL: most often the kernel's out-of-memory killer" in text
    assert "the kernel log is not readable here to tell" in text


def test_an_unknown_end_on_a_24_gb_machine_never_advises_22g(jvm_gone):
    text = jvm_gone(None, None)
    assert "the Spark JVM stopped during the job (this session had spark.driver.memory=11g)" in text
    assert "how it ended is not known here" in text
    assert "--driver-memory 22g" not in text and "this machine has 24 GiB, too little for more than 11g" in text


def test_an_out_of_memory_error_in_the_text_is_still_memory(jvm_gone, monkeypatch):
    monkeypatch.setattr(failures, "jvm_exit_signal", lambda: (_ for _ in ()).throw(AssertionError("not asked")))
    text = str(resource_failure(RuntimeError("java.lang.OutOfMemoryError: Java heap space")))
    assert text.startswith("Spark ran out of memory (java.lang.OutOfMemoryError)")


def test_the_kernel_log_is_read_for_the_jvm_pid_only():
    assert oom_killed(KERNEL_LOG, 4242) is True
    assert oom_killed(KERNEL_LOG, 4243) is False
    assert oom_killed("Memory cgroup out of memory: Killed process 99 (java)", 99) is True
    assert oom_killed(None, 4242) is None and oom_killed(KERNEL_LOG, None) is None


def test_advice_stays_below_the_machine_less_a_margin():
    assert usable_memory_bytes(24 * GIB) == 21 * GIB and usable_memory_bytes(8 * GIB) == 6 * GIB
    assert "--driver-memory" not in more_memory_advice("11g", 24 * GIB)
    assert "--driver-memory 22g" in more_memory_advice("11g", 64 * GIB)
    assert "--driver-memory 16g" in more_memory_advice("8g", 24 * GIB) or "16g" not in more_memory_advice("8g",
                                                                                                          18 * GIB)


def test_the_message_function_on_canned_facts():
    assert "SIGHUP, signal 1" in stopped_jvm_message(1, None, "", "ADVICE", None)
    assert "ADVICE" in stopped_jvm_message(None, None, "", "ADVICE", None)
    assert "the free memory is unknown" in stopped_jvm_message(9, True, "", "ADVICE", None)
