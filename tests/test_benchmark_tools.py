"""The benchmark scripts' tools that other work relies on: fresh-process repeats that
must agree, and the recorded ``fit_downey`` corpus whose digest says whether the
current code still gives the recorded fits (used to prove speed-only changes)."""

from __future__ import annotations

import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(script: str, *args: str) -> str:
    got = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=BENCHMARKS,
    )
    assert got.returncode == 0, got.stderr
    return got.stdout


def test_recorded_fits_replay_to_their_recorded_digest(tmp_path: Path) -> None:
    corpus = tmp_path / "fits.pkl"
    out = _run(
        "bench_policies.py",
        "--trace",
        "builtin:kth-sp2",
        "--max-jobs",
        "600",
        "--repeat",
        "2",
        "--record-fits",
        str(corpus),
    )
    assert "2 fresh processes" in out
    # each process timed the rigid reference after its replay (the two agreed, else exit 1)
    assert re.search(r"host reference, policy easy .*replay / reference: [\d.]+, [\d.]+\n", out)
    fits = int(re.search(r"Downey fits \(node predictor\): (\d+)", out).group(1))  # type: ignore[union-attr]
    recorded = int(re.search(r"recorded (\d+) fit_downey calls", out).group(1))  # type: ignore[union-attr]
    assert fits > 0
    assert recorded == fits  # every Downey fit of the replay, the deferred ones included

    check = _run("bench_adept.py", "--corpus", str(corpus), "--passes", "1", "--digest")
    assert f"on {fits} recorded calls" in check
    assert "the same)" in check

    # a corpus whose fits no longer match is reported as such
    data = pickle.loads(corpus.read_bytes())
    data["digest"] = "0" * 16
    corpus.write_bytes(pickle.dumps(data))
    check = _run("bench_adept.py", "--corpus", str(corpus), "--passes", "1", "--digest")
    assert "DIFFERENT: the fits changed" in check


def test_auto_fits_are_recorded_as_the_fit_downey_calls_they_equal(tmp_path: Path) -> None:
    # auto's leave-one-out calls fit_downey_params (bound at auto's import): recorded as
    # one-target fit_downey calls, whose replay gives the digest recorded with them
    corpus = tmp_path / "auto.pkl"
    out = _run(
        "bench_policies.py",
        *("--trace", "builtin:kth-sp2", "--max-jobs", "600", "--repeat", "1"),
        *("--reference", "none", "--predictor", "auto+fluid", "--record-fits", str(corpus)),
    )
    recorded = int(re.search(r"recorded (\d+) fit_downey calls", out).group(1))  # type: ignore[union-attr]
    assert recorded > 0
    fits = pickle.loads(corpus.read_bytes())["fits"]
    assert len(fits) == recorded
    assert all(len(targets) == 1 for _, _, targets, _ in fits)
    check = _run("bench_adept.py", "--corpus", str(corpus), "--passes", "1", "--digest")
    assert f"on {recorded} recorded calls" in check
    assert "the same)" in check


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (callgrind)")
def test_instruction_count_is_of_the_same_replay_and_repeatable() -> None:
    args = ("--trace", "builtin:kth-sp2", "--max-jobs", "150")
    timed = _run("bench_policies.py", *args, "--repeat", "1", "--reference", "none")
    counts = []
    for _ in range(2):
        out = _run("bench_policies.py", *args, "--instructions")
        counts.append(int(re.search(r"callgrind\): ([\d,]+)", out).group(1).replace(",", "")))  # type: ignore[union-attr]
        assert out.strip().splitlines()[-1] == timed.strip().splitlines()[-1]  # same result line
    assert counts[0] > 10_000_000  # the replay was counted, not only the switch calls
    assert abs(counts[0] - counts[1]) < 0.01 * counts[0]  # repeatable, unlike seconds


def test_outputs_digest_sees_every_value_of_the_three_tables() -> None:
    import types

    import pandas as pd

    sys.path.insert(0, str(BENCHMARKS))
    try:
        from bench_policies import result_digest
    finally:
        sys.path.remove(str(BENCHMARKS))

    def result(jobs=None, power=None, log=None):
        base_jobs = pd.DataFrame({"job_id": [1, 2], "start_s": [0.0, 10.0], "reason": ["a", "b"]})
        base_power = pd.DataFrame({"time_s": [0.0, 5.0], "power_w": [100.0, 250.0]})
        return types.SimpleNamespace(
            jobs=base_jobs if jobs is None else jobs,
            power=base_power if power is None else power,
            predictor_log=log,
        )

    plain = result_digest(result())
    assert re.fullmatch(r"[0-9a-f]{16}", plain)
    assert result_digest(result()) == plain  # a function of the values only
    moved = pd.DataFrame(
        {"job_id": [1, 2], "start_s": [0.0, 10.000000000000002], "reason": ["a", "b"]}
    )
    renamed = pd.DataFrame({"job_id": [1, 2], "begin_s": [0.0, 10.0], "reason": ["a", "b"]})
    power = pd.DataFrame({"time_s": [0.0, 5.0], "power_w": [100.0, 250.5]})
    log = pd.DataFrame([{"refits": 3}])
    others = [
        result_digest(result(jobs=moved)),  # one float moved by one rounding step
        result_digest(result(jobs=renamed)),
        result_digest(result(power=power)),
        result_digest(result(log=log)),
        result_digest(result(log=pd.DataFrame([{"refits": 4}]))),
    ]
    assert plain not in others and len(set(others)) == len(others)
    # the schedule digest reads the jobs table and the power timeline only
    schedule = result_digest(result(), with_log=False)
    assert result_digest(result(log=log), with_log=False) == schedule
    assert result_digest(result(jobs=moved), with_log=False) != schedule
    assert result_digest(result(power=power), with_log=False) != schedule


def test_sweep_phases_times_every_process_of_a_sweep() -> None:
    """Two runs on two workers: each worker runs one, forked after the sweep process
    has read the trace they share, and writes its results; the sweep process
    writes the summaries table."""
    out = _run(
        "sweep_phases.py",
        "--trace",
        "builtin:kth-sp2",
        "--runs",
        "2",
        "--max-jobs",
        "200",
        "--policy",
        "easy",
    )
    ready = float(re.search(r"shared work done +([\d.]+) s", out).group(1))
    workers = re.findall(r"^worker \d+: runs, start-end \(CPU\): ([\d.]+)-([\d.]+) \(", out, re.M)
    assert len(workers) == 2, out
    assert all(ready <= float(start) < float(end) for start, end in workers), out
    assert len(re.findall(r"^results written by the worker \(\d+\): 1 runs", out, re.M)) == 2
    assert re.search(r"^summaries table +[\d.]+ s", out, re.M), out
    assert "while the runs ran" in out
