"""Honest comparisons: one ground truth for every policy, and a configuration that
completes fewer jobs than the baseline is flagged, never crowned."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import tomllib

from energysched.config import parse_experiment
from energysched.reporting import headline_sentences, headline_table, make_report
from energysched.sweep import plan_runs, run_sweep

EXPERIMENT = """
name = "honest"
[seeds]
list = [3]
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 120
[[policies]]
name = "easy"
baseline = true
[[policies]]
name = "nothing"
policy = "es_experiments_plugins:StartsNothingPolicy"
[[policies]]
name = "easy-poweroff"
policy = "easy"
engine = { idle_timeout_s = 60 }
"""


@pytest.fixture(scope="module")
def honest_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("honest")
    path = tmp / "honest.toml"
    path.write_text(EXPERIMENT, encoding="utf-8")
    out = tmp / "results"
    summary = run_sweep(path, out)
    assert not summary.failed
    return out


def test_every_run_of_a_sweep_gets_the_default_ground_truth() -> None:
    spec = parse_experiment(tomllib.loads(EXPERIMENT))
    assert spec.ground_truth is not None and spec.ground_truth.preset == "npb-mix"
    assert {t.truth_preset for t in plan_runs(spec)} == {"npb-mix"}
    none = parse_experiment(tomllib.loads('ground_truth = "none"\n' + EXPERIMENT))
    assert none.ground_truth is None
    assert {t.truth_preset for t in plan_runs(none)} == {None}


def test_a_policy_that_starts_nothing_is_flagged_not_crowned(honest_results: Path) -> None:
    report = make_report(honest_results)
    head = report.headline.set_index("configuration")
    nothing = head.loc["nothing"]
    # it "saves" the most energy (the platform only idles) ...
    assert nothing["energy_saving_pct"] == head["energy_saving_pct"].max()
    assert nothing["energy_saving_pct"] > 10
    # ... because it completed nothing: flagged, and its energy per completed job is undefined
    assert nothing["jobs_completed"] == 0
    assert nothing["jobs_completed_change_pct"] == pytest.approx(-100.0)
    assert bool(nothing["fewer_completed"]) and "fewer jobs" in nothing["flag"]
    assert pd.isna(nothing["energy_per_completed_job_kwh"])
    assert not bool(head.loc["easy-poweroff", "fewer_completed"])
    sentences = headline_sentences(report.headline)
    crowned = [s for s in sentences if "best non-oracle" in s]
    assert len(crowned) == 1 and "is easy-poweroff:" in crowned[0]
    assert "mean wait" in crowned[0] and "mean bounded slowdown" in crowned[0]
    assert any(s.startswith("On kth") and "nothing is left out" in s for s in sentences)
    html = report.html.read_text(encoding="utf-8")
    assert "Ground truth: npb-mix (noise 0.02), the same for every run" in html
    assert "completed 100.0% fewer jobs than the baseline (tolerance 1%)" in html


def test_the_tolerance_is_configurable(honest_results: Path) -> None:
    from energysched import load_results
    from energysched.reporting import _with_config

    t = _with_config(load_results(honest_results).summaries)
    # with a 100 % tolerance even a policy that completed nothing is not flagged
    head = headline_table(t, "easy", completed_tolerance=1.0).set_index("configuration")
    assert not bool(head.loc["nothing", "fewer_completed"])
    with pytest.raises(Exception, match="completed_tolerance"):
        headline_table(t, "easy", completed_tolerance=-0.1)
