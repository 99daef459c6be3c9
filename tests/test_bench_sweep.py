"""``benchmarks/bench_sweep.py`` measures a sweep's CPU time without running
anything beside it: the processes a sweep leaves behind (its fork server, the
workers that server forked) are adopted and waited for, and their CPU time read
once they have ended."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.fresh_python import fresh_python

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# The command's process forks a child and exits at once; the orphaned child then
# burns 0.3 s of CPU time, as a fork server's workers go on after the process
# that started the server.
ORPHAN_BURNS_CPU = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    while time.process_time() < 0.3:\n"
    "        pass\n"
    "    os._exit(0)\n"
)


def measuring(command: str, then: str) -> str:
    """A program that runs ``python -c command`` under ``bench_sweep.run_measured``
    (orphans adopted: ``adopted``, the result: ``measured``), then ``then``."""
    return f"""
import sys
sys.path.insert(0, {str(BENCHMARKS)!r})
import bench_sweep

adopted = bench_sweep.adopt_orphans()
measured = bench_sweep.run_measured([sys.executable, "-c", {command!r}], adopted=adopted)
{then}
"""


CODE = measuring(
    ORPHAN_BURNS_CPU,
    """
import os
try:
    os.waitpid(-1, os.WNOHANG)
    left = "a child left"
except ChildProcessError:
    left = "no child left"
print(adopted, measured.status, measured.cpu_s >= 0.3, measured.own_cpu_s < 0.3, left)
""",
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreaper: Linux only")
def test_the_cpu_time_of_an_orphaned_descendant_is_counted_once_it_has_ended():
    """The orphan's 0.3 s are in the tree's CPU time, not in the command's own."""
    assert fresh_python(CODE) == "True 0 True True no child left"


# The command's process forks a child that burns 0.3 s of CPU time and waits for
# it, as a sweep process waits for the workers it forked.
WAITS_FOR_ITS_CHILD = (
    "import os, time\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    while time.process_time() < 0.3:\n"
    "        pass\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
)

WAITED_CODE = measuring(
    WAITS_FOR_ITS_CHILD,
    "print(measured.status, measured.cpu_s >= 0.3, measured.own_cpu_s < 0.25)",
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_commands_own_cpu_time_leaves_out_the_children_it_waited_for():
    """The child's 0.3 s are in the tree's CPU time, not in the command's own
    (read from the exited process before it is reaped)."""
    assert fresh_python(WAITED_CODE) == "0 True True"


def test_start_and_run_from_the_two_sweeps_wall_times() -> None:
    """8 runs: 1 worker 4.94 s = s + 8 r and 2 workers 2.80 s = s + 4 r give
    r = (4.94 - 2.80) / 4 = 0.535 s and s = 4.94 - 8 x 0.535 = 0.66 s."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from bench_sweep import start_and_run_s
    finally:
        sys.path.remove(str(BENCHMARKS))
    start_s, run_s = start_and_run_s(4.94, 2.80, runs=8, workers=2)
    assert run_s == pytest.approx(0.535) and start_s == pytest.approx(0.66)
    # 3 workers on 9 runs: 1 worker s + 9 r = 5.5, 3 workers s + 3 r = 2.5
    assert start_and_run_s(5.5, 2.5, runs=9, workers=3) == pytest.approx((1.0, 0.5))
