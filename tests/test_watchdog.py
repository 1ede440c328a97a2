"""The stall watchdog: a wedged training loop ends the process instead of hanging for ever."""

from __future__ import annotations

import time

import pytest

from rfig_exp.config.errors import ExitCode
from rfig_exp.run.watchdog import Watchdog

pytestmark = pytest.mark.kept_apart  # its thread's deadlines are tenths of a second


def _watch(**kwargs):
    stalls: list[str] = []
    dog = Watchdog("test", on_stall=stalls.append, poll_s=0.02, **kwargs)
    return dog, stalls


def _wait_for(stalls, seconds):
    deadline = time.monotonic() + seconds
    while not stalls and time.monotonic() < deadline:
        time.sleep(0.02)


def test_no_first_window_in_time_is_a_stall():
    dog, stalls = _watch(min_s=0.2, first_s=0.3)
    with dog:
        _wait_for(stalls, 3.0)
    assert len(stalls) == 1 and "before its first window" in stalls[0]
    assert f"exit code {int(ExitCode.STALLED)}" in stalls[0] and "relaunch the same command to resume" in stalls[0]


def test_steady_windows_keep_it_quiet_and_a_stop_after_them_is_caught():
    dog, stalls = _watch(min_s=1.0, first_s=1.0)  # 20x margin over the windows: no false alarm under load
    with dog:
        for _ in range(30):  # 1.5 s of windows, each well inside the limit
            time.sleep(0.05)
            dog.beat()
        assert not stalls
        _wait_for(stalls, 5.0)
    assert len(stalls) == 1 and "after window 30" in stalls[0]


def test_the_limit_follows_the_slowest_window():
    dog, _ = _watch(min_s=0.1, factor=20.0, first_s=5.0)
    assert dog.limit() == 5.0
    dog.last = time.monotonic() - 2.0  # a window that took 2 s
    dog.beat()
    assert 40.0 <= dog.limit() < 41.0
    dog.beat()  # a quick one does not lower it
    assert dog.limit() >= 40.0


def test_zero_disables_it():
    dog, stalls = _watch(min_s=0.0, first_s=0.01)
    with dog:
        time.sleep(0.2)
    assert dog._thread is None and not stalls
