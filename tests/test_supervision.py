"""A job's supervisor (rfig_exp.launch.task, rfig_exp.launch.supervision): its stall clock, the
signals it passes on, and a real child process killed when its pulse stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from rfig_exp.launch.supervision import SignalForwarder, StallClock


class FakeTime:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_clock_starts_when_the_job_has_compiled():
    now = FakeTime()
    clock = StallClock(1.0, now=now)
    now.t += 1000.0  # a long compile is not a stall
    assert clock.overdue() is None
    clock.start()
    now.t += 2.9
    assert clock.overdue() is None  # 3 x stall_timeout_s before the first window
    now.t += 0.2
    idle = clock.overdue()
    assert idle is not None and abs(idle - 3.1) < 1e-9
    message = clock.message("job", 3.1)
    assert "before its first window" in message and "the process looks wedged" in message


def test_the_limit_follows_the_slowest_window():
    now = FakeTime()
    clock = StallClock(0.1, factor=20.0, first_s=5.0, now=now)
    clock.start()
    assert clock.limit() == 5.0
    now.t += 2.0  # a window that took 2 s
    clock.beat()
    assert clock.limit() == 40.0
    now.t += 0.1
    clock.beat()  # a quick one does not lower it
    assert clock.limit() == 40.0
    now.t += 40.5
    assert clock.overdue() is not None and "after window 2" in clock.message("job", 40.5)


def test_zero_disables_it():
    now = FakeTime()
    clock = StallClock(0.0, first_s=0.01, now=now)
    clock.start()
    now.t += 1e6
    assert clock.overdue() is None


def test_the_forwarder_passes_stop_signals_on_and_restores_the_handlers():
    child = subprocess.Popen([sys.executable, "-c", "import signal, sys, time\n"
                              "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
                              "print('ready', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    before = signal.getsignal(signal.SIGTERM)
    with SignalForwarder() as forward:
        forward.follow(child.pid)
        os.kill(os.getpid(), signal.SIGTERM)
        assert forward.received == signal.SIGTERM
        assert child.wait(timeout=30) == 7
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_before_the_child_exists_goes_to_it_once_it_does():
    child = subprocess.Popen([sys.executable, "-c", "import signal, sys, time\n"
                              "signal.signal(signal.SIGINT, lambda *a: sys.exit(5))\n"
                              "print('ready', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    with SignalForwarder() as forward:
        os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt here: it is the job's to act on
        time.sleep(0.1)
        forward.follow(child.pid)
        assert child.wait(timeout=30) == 5
