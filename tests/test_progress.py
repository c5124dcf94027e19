"""The progress hook (sparkfs.progress): silent by default, lines with the time left, the interruption check."""

import pandas as pd
import pytest

from sparkfs import progress
from sparkfs.io.output import write_output_files


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def lines():
    written, clock = [], Clock()
    previous = progress.set_reporter(progress.Reporter(written.append, min_interval=1.0, clock=clock))
    yield written, clock
    progress.set_reporter(previous)
    progress.clear_interruption()


def test_silent_without_a_reporter(capsys):
    meter = progress.steps("simba", 3)
    for _ in range(3):
        meter.advance()
    assert capsys.readouterr() == ("", "")


def test_one_line_per_step_with_the_time_left_at_most_one_a_second(lines):
    written, clock = lines
    meter = progress.steps("simba", 10)
    clock.now += 2.0
    meter.advance()
    clock.now += 0.5  # within a second of the last line: not reported
    meter.advance()
    clock.now += 0.5
    meter.advance()
    clock.now += 10.0
    for _ in range(7):
        meter.advance()
    assert written == ["sparkfs progress simba: step 1/10 (10%), 2.0 s elapsed, about 18 s left",
                       "sparkfs progress simba: step 3/10 (30%), 3.0 s elapsed, about 7.0 s left",
                       "sparkfs progress simba: step 4/10 (40%), 13 s elapsed, about 20 s left",
                       "sparkfs progress simba: step 10/10 (100%), 13 s elapsed, done"]  # the last always


def test_a_loop_of_one_step_says_nothing(lines):
    written, _ = lines
    progress.steps("nearest", 1, "query batch").advance()
    assert written == []


def test_durations():
    assert [progress.duration(s) for s in (3.21, 42, 185, 7620)] == ["3.2 s", "42 s", "3 min 05 s", "2 h 07 min"]


def test_an_interruption_stops_the_next_step_and_the_output_writer(lines, tmp_path):
    meter = progress.steps("simba", 10)
    meter.advance()
    progress.interrupt(15)
    with pytest.raises(progress.Interrupted) as stop:
        meter.advance()
    assert stop.value.signal_number == 15
    with pytest.raises(progress.Interrupted):
        write_output_files(str(tmp_path / "out"), {"features.parquet": pd.DataFrame({"a": [1]})}, {})
    assert list(tmp_path.iterdir()) == []
