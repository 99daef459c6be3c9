"""Results are never stale, mixed, half-written or read from outside their directory
(issue 17, items 1, 6 and 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import write_experiment

from energysched import load_experiment, load_results, plan_runs, run_sweep
from energysched.cli import main
from energysched.errors import ConfigError
from energysched.sweep import run_hash
from simulator.results import load_run

ONE_POLICY = """
name = "one"
[[traces]]
name = "kth"
source = "{trace}"
max_jobs = 40
[[policies]]
name = "easy"
{extra}
"""


def _experiment(tmp_path: Path, extra: str = "", trace: str = "builtin:kth-sp2") -> Path:
    path = tmp_path / "one.toml"
    path.write_text(ONE_POLICY.format(trace=trace, extra=extra), encoding="utf-8")
    return path


def _no_temp_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.name.startswith(".") and "tmp" in p.name]


def test_unsavable_params_fail_only_their_run(tmp_path: Path) -> None:
    extra = '[[policies]]\nname = "bad"\npolicy = "es_experiments_plugins:UnsavablePolicy"\n'
    exp = _experiment(tmp_path, extra)
    out = tmp_path / "out"
    summary = run_sweep(exp, out, progress=False)
    assert summary.completed == ["kth__trace__easy__none__s0"]
    assert summary.failed == ["kth__trace__bad__none__s0"]
    error = (out / "failed" / "kth__trace__bad__none__s0" / "error.txt").read_text()
    assert "cannot be saved as JSON" in error
    assert not (out / "runs" / "kth__trace__bad__none__s0").exists()
    assert _no_temp_files(out) == []
    res = load_results(out)
    assert list(res.summaries["run_id"]) == ["kth__trace__easy__none__s0"]
    assert list(res.failures["run_id"]) == ["kth__trace__bad__none__s0"]
    # the CLI goes on too, and says at the end that a run failed
    result = CliRunner().invoke(
        main, ["experiment", "run", str(exp), "--out", str(tmp_path / "cli"), "--workers", "1"]
    )
    assert result.exit_code == 1
    assert "1 of 2 runs failed" in result.output


def test_full_disk_during_a_write_fails_that_run_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simulator.results as results

    exp = write_experiment(tmp_path / "small.toml")
    tasks = plan_runs(load_experiment(exp))
    victim = tasks[2].run_id
    real = results.RunResult.write

    def write(self, out_dir, *, fmt="auto"):  # type: ignore[no-untyped-def]
        if self.meta.get("run_id") == victim:
            raise OSError(28, "No space left on device")
        return real(self, out_dir, fmt=fmt)

    monkeypatch.setattr(results.RunResult, "write", write)
    out = tmp_path / "out"
    summary = run_sweep(exp, out, progress=False)
    assert summary.failed == [victim]
    assert sorted(summary.completed) == sorted(t.run_id for t in tasks if t.run_id != victim)
    assert "No space left on device" in (out / "failed" / victim / "error.txt").read_text()
    assert _no_temp_files(out) == []
    assert len(load_results(out).summaries) == len(tasks) - 1


def test_run_summary_json_is_never_truncated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = _experiment(tmp_path)
    out = tmp_path / "out"
    run_sweep(exp, out, progress=False)
    run = out / "runs" / "kth__trace__easy__none__s0"
    before = (run / "summary.json").read_text()
    result = load_run(run)
    result.meta["bad"] = {1, 2}  # cannot be saved
    with pytest.raises(ConfigError, match="JSON"):
        result.write(run)
    assert (run / "summary.json").read_text() == before
    assert _no_temp_files(run) == []


def test_load_run_never_mixes_a_stale_parquet_with_a_new_csv(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    out = tmp_path / "out"
    run_sweep(exp, out, progress=False, fmt="parquet")
    run = out / "runs" / "kth__trace__easy__none__s0"
    result = load_run(run)
    stale = result.jobs.copy()
    result.jobs = result.jobs.iloc[:5]
    result.write(run, fmt="csv")
    assert not (run / "jobs.parquet").exists()
    assert len(load_run(run).jobs) == 5
    # an older writer left both: the newer file (this run's) wins
    stale.to_parquet(run / "jobs.parquet")
    result.write(run, fmt="csv")
    stale.to_parquet(run / "old.parquet")
    (run / "old.parquet").rename(run / "jobs.parquet")
    import os

    os.utime(run / "jobs.parquet", ns=(1, 1))
    assert len(load_run(run).jobs) == 5


def test_run_hash_follows_plugin_source_and_trace_content(tmp_path: Path) -> None:
    import sys

    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    module = plugin_dir / "hash_plugin_mod.py"
    module.write_text(
        "from policies.backfilling import QueuePolicy\n"
        "class P(QueuePolicy):\n"
        "    def __init__(self, **kw):\n"
        "        super().__init__(backfill='easy', name='easy', **kw)\n"
    )
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n1 0 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
    sys.path.insert(0, str(plugin_dir))
    try:
        exp = _experiment(
            tmp_path,
            '[[policies]]\nname = "p"\npolicy = "hash_plugin_mod:P"\n',
            trace=str(trace),
        )
        out = tmp_path / "out"
        first = run_sweep(exp, out, progress=False)
        assert len(first.completed) == 2
        assert run_sweep(exp, out, progress=False).completed == []  # nothing changed
        tasks = {t.policy: t for t in plan_runs(load_experiment(exp))}
        old = run_hash(tasks["p"])
        module.write_text(module.read_text() + "# changed\n")
        assert run_hash(tasks["p"]) != old
        assert run_sweep(exp, out, progress=False).completed == ["kth__trace__p__none__s0"]
        trace.write_text(trace.read_text() + "2 5 -1 10 1 -1 -1 1 20 -1 1 1 -1 -1 -1 -1 -1 -1\n")
        again = run_sweep(exp, out, progress=False)
        assert sorted(again.completed) == sorted(t.run_id for t in tasks.values())
        forced = run_sweep(exp, out, progress=False, force=True)
        assert len(forced.completed) == 2 and forced.skipped == []
    finally:
        sys.path.remove(str(plugin_dir))
        sys.modules.pop("hash_plugin_mod", None)


def test_a_changed_platform_file_reruns_the_runs_on_it(tmp_path: Path) -> None:
    from importlib.resources import files

    platform = tmp_path / "cluster.toml"
    bundled = (files("simulator") / "data" / "hybrid-128x16.toml").read_text(encoding="utf-8")
    platform.write_text(bundled, encoding="utf-8")
    exp = tmp_path / "two.toml"
    exp.write_text(
        ONE_POLICY.format(trace="builtin:kth-sp2", extra="")
        + '[[platforms]]\nname = "mine"\nsource = "cluster.toml"\n'
        + '[[platforms]]\nname = "bundled"\nsource = "builtin:hybrid-128x16"\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert len(run_sweep(exp, out, progress=False).completed) == 2
    energy = load_results(out).summaries.set_index("platform")["energy_j"]
    # the same file under two names: the same numbers
    assert energy["mine"] == energy["bundled"]
    assert run_sweep(exp, out, progress=False).completed == []  # nothing changed
    # idle nodes draw more in the platform file: its run is stale, the other is not
    assert "idle_power_w = 88.0" in bundled  # the lowest P-state's: what idle nodes draw
    platform.write_text(
        bundled.replace("idle_power_w = 88.0", "idle_power_w = 98.0"), encoding="utf-8"
    )
    again = run_sweep(exp, out, progress=False)
    assert again.completed == ["kth__mine__easy__none__s0"]
    energy = load_results(out).summaries.set_index("platform")["energy_j"]
    assert energy["mine"] > energy["bundled"]


def test_crafted_experiment_json_cannot_read_outside(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    out = tmp_path / "out"
    run_sweep(exp, out, progress=False)
    # a run directory outside the results, with a plausible run.json
    outside = tmp_path / "secret"
    (outside).mkdir()
    real = out / "runs" / "kth__trace__easy__none__s0"
    for name in ("run.json", "summary.json"):
        (outside / name).write_text((real / name).read_text())
    data = json.loads((out / "experiment.json").read_text())
    data["runs"].append({**data["runs"][0], "run_id": "../../secret"})
    (out / "experiment.json").write_text(json.dumps(data))
    res = load_results(out)
    assert list(res.summaries["run_id"]) == ["kth__trace__easy__none__s0"]
    with pytest.raises(ConfigError, match="not a run id"):
        res.jobs("../../secret")
    with pytest.raises(ConfigError, match="not a run id"):
        res.run("/etc")


def test_sweep_out_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot create"):
        run_sweep(_experiment(tmp_path), blocker / "out", progress=False)


def test_sweep_refuses_a_directory_of_other_files(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(ConfigError, match="not a results directory"):
        run_sweep(exp, out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


def test_atomic_write_leaves_no_temp_file_on_failure(tmp_path: Path) -> None:
    from simulator.results import atomic_path

    target = tmp_path / "x.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old" and sorted(tmp_path.iterdir()) == [target]
    pd.DataFrame({"a": [1]}).to_csv(target, index=False)


def test_report_md_escapes_error_text(tmp_path: Path) -> None:
    from energysched import make_report

    extra = '[[policies]]\nname = "html"\npolicy = "es_experiments_plugins:HtmlErrorPolicy"\n'
    out = tmp_path / "out"
    run_sweep(_experiment(tmp_path, extra), out, progress=False)
    text = make_report(out).markdown.read_text()
    assert "<img" not in text and "](http" not in text
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in text
