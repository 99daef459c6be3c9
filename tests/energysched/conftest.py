"""Fixtures of the experiment tests: small experiment files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the plug-in policies of es_experiments_plugins
    sys.path.insert(0, str(HERE))

SMALL = """
name = "small"
[seeds]
base = 7
replicates = 2
[engine]
overrun = "kill"
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 150
[[traces]]
name = "lublin"
synthetic = {{ model = "lublin", n_jobs = 120, nodes = 32 }}
[[policies]]
name = "fcfs"
[[policies]]
name = "easy"
{extra}
"""


def write_trace_with_a_job_without_request(path: Path) -> Path:
    """Write a 5-job SWF trace whose job 3 has no requested time (the engine warns
    that it plans that job with its runtime)."""
    path.write_text(
        "; MaxNodes: 4\n; MaxProcs: 4\n"
        + "\n".join(
            f"{i} {10 * i} -1 100 2 -1 -1 2 {-1 if i == 3 else 200} -1 1 1 -1 -1 -1 -1 -1 -1"
            for i in range(1, 6)
        )
        + "\n"
    )
    return path


def write_warning_experiment(folder: Path) -> Path:
    """Write an experiment of ``easy`` and ``fcfs`` x 2 seeds (4 runs) on the trace of
    :func:`write_trace_with_a_job_without_request`: every run gives the engine's
    warning about the job without a request. Returns the experiment file."""
    trace = write_trace_with_a_job_without_request(folder / "t.swf")
    experiment = folder / "e.toml"
    experiment.write_text(
        'name = "w"\n[seeds]\nreplicates = 2\n[[traces]]\nname = "t"\n'
        f'source = "{trace}"\n[[policies]]\nname = "easy"\n[[policies]]\nname = "fcfs"\n'
    )
    return experiment


def write_experiment(path: Path, extra: str = "", template: str = SMALL) -> Path:
    """Write a small experiment (2 traces x fcfs/easy x 2 seeds) plus ``extra`` TOML."""
    path.write_text(template.format(extra=extra), encoding="utf-8")
    return path


@pytest.fixture
def small_experiment(tmp_path: Path) -> Path:
    """Path of the small experiment file (8 runs, well under a second each)."""
    return write_experiment(tmp_path / "small.toml")
