"""Experiment files: valid ones resolve; each kind of mistake names the file and the key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from energysched import ExperimentFileError, load_experiment, plan_runs
from energysched.errors import ConfigError

VALID = """
name = "ok"
[seeds]
base = 3
replicates = 2
[ground_truth]
preset = "npb-mix"
[engine]
idle_timeout_s = 600
[[traces]]
name = "kth"
source = "builtin:kth-sp2"
max_jobs = 100
[[traces]]
name = "syn"
synthetic = { model = "lublin", n_jobs = 50, nodes = 32 }
[[predictors]]
name = "oracle"
[[predictors]]
name = "adept+fluid"
[[policies]]
name = "easy"
[[policies]]
name = "fcfs"
[[policies]]
name = "slack"
policy = "easy-min-energy-slack"
params = { slack = 0.2 }
predictors = ["adept+fluid", "oracle"]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_valid_file_plans_the_cross_product(tmp_path: Path) -> None:
    spec = load_experiment(_write(tmp_path, VALID))
    tasks = plan_runs(spec)
    # 2 traces x (easy + fcfs + slack x 2 predictors) x 2 seeds
    assert len(tasks) == 2 * 4 * 2
    assert len({t.run_id for t in tasks}) == len(tasks)
    assert tasks[0].run_id == "kth__trace__easy__none__s0"
    assert {t.predictor for t in tasks if t.policy == "slack"} == {"adept+fluid", "oracle"}
    assert all(t.policy_params == {"slack": 0.2} for t in tasks if t.policy == "slack")
    assert all(t.engine == {"idle_timeout_s": 600} for t in tasks)
    assert spec.baseline_policy() == "easy"


def test_seeds_come_from_seed_sequence_spawn_and_are_shared_by_policies(tmp_path: Path) -> None:
    spec = load_experiment(_write(tmp_path, VALID))
    expected = [
        int(c.generate_state(1, dtype=np.uint32)[0]) for c in np.random.SeedSequence(3).spawn(2)
    ]
    assert spec.seeds.values() == expected
    tasks = plan_runs(spec)
    for rep, seed in enumerate(expected):
        assert {t.seed for t in tasks if t.replicate == rep} == {seed}
    # a synthetic trace without its own seed is one workload for every seed (the first seed's)
    assert {t.trace_synthetic["seed"] for t in tasks if t.trace == "syn"} == {expected[0]}


def test_workload_seed_per_seed_or_fixed(tmp_path: Path) -> None:
    seeds = [
        int(c.generate_state(1, dtype=np.uint32)[0]) for c in np.random.SeedSequence(3).spawn(2)
    ]
    per_seed = VALID.replace('name = "syn"', 'name = "syn"\nworkload_seed = "per-seed"')
    tasks = plan_runs(load_experiment(_write(tmp_path, per_seed)))
    by_rep = {t.replicate: t.trace_synthetic["seed"] for t in tasks if t.trace == "syn"}
    assert by_rep == {0: seeds[0], 1: seeds[1]}
    fixed = VALID.replace('name = "syn"', 'name = "syn"\nworkload_seed = 7')
    tasks = plan_runs(load_experiment(_write(tmp_path, fixed)))
    assert {t.trace_synthetic["seed"] for t in tasks if t.trace == "syn"} == {7}
    # the truth and noise still follow the replicate seed
    assert {t.seed for t in tasks if t.trace == "syn"} == set(seeds)
    wrong = VALID.replace('name = "kth"', 'name = "kth"\nworkload_seed = 7')
    with pytest.raises(ExperimentFileError, match="synthetic traces only"):
        load_experiment(_write(tmp_path, wrong))


def test_explicit_seed_list_and_relative_paths(tmp_path: Path) -> None:
    from workloads.swf import write_swf
    from workloads.synthetic import generate

    (tmp_path / "traces").mkdir()
    write_swf(generate("lublin", 20, 16, seed=1), tmp_path / "traces" / "mine.swf")
    text = VALID.replace('source = "builtin:kth-sp2"', 'source = "traces/mine.swf"').replace(
        "base = 3\nreplicates = 2", "list = [11, 5]"
    )
    spec = load_experiment(_write(tmp_path, text))
    assert spec.seeds.values() == [11, 5]
    assert spec.traces[0].source == str(tmp_path / "traces" / "mine.swf")


def test_run_ids_are_stable_across_loads(tmp_path: Path) -> None:
    path = _write(tmp_path, VALID)
    a = [(t.run_id, t.config_hash()) for t in plan_runs(load_experiment(path))]
    b = [(t.run_id, t.config_hash()) for t in plan_runs(load_experiment(path))]
    assert a == b


# Each kind of mistake: (replace this, with that) -> key named in the message.
MISTAKES = [
    ("toml syntax", ('name = "ok"', 'name = "ok'), "(toml syntax)"),
    ("unknown top-level key", ('name = "ok"', 'name = "ok"\npolcies = []'), "polcies: unknown key"),
    (
        "misspelt table",
        ('[[traces]]\nname = "kth"', '[[tracez]]\nname = "kth"'),
        "tracez: unknown key",
    ),
    (
        "missing required key",
        ('name = "adept+fluid"', 'spec = "adept+fluid"'),
        "predictors[1].name: required key is missing",
    ),
    ("wrong type", ("replicates = 2", 'replicates = "two"'), "seeds.replicates"),
    ("out of range", ("replicates = 2", "replicates = 0"), "seeds.replicates"),
    ("trace without source", ('source = "builtin:kth-sp2"\n', ""), "traces[0]"),
    ("unknown builtin trace", ("builtin:kth-sp2", "builtin:nope"), "traces[0].source"),
    ("missing trace file", ("builtin:kth-sp2", "no/such/file.swf"), "traces[0].source"),
    (
        "unknown synthetic model",
        ('model = "lublin"', 'model = "lublinn"'),
        "traces[1].synthetic.model",
    ),
    (
        "unknown synthetic parameter",
        ("nodes = 32 }", "nodes = 32, params = { lod = 1 } }"),
        "traces[1].synthetic.params.lod",
    ),
    ("unknown policy", ('name = "fcfs"', 'name = "fcsf"'), "policies[1].name"),
    (
        "unknown policy parameter",
        ("params = { slack = 0.2 }", "params = { slak = 0.2 }"),
        "policies[2].params.slak",
    ),
    (
        "bad policy parameter value",
        ("params = { slack = 0.2 }", "params = { slack = -5.0 }"),
        "policies[2].params.slack",
    ),
    (
        "unknown predictor reference",
        ('predictors = ["adept+fluid", "oracle"]', 'predictors = ["adept+fluid", "orcale"]'),
        "policies[2].predictors[1]",
    ),
    ("unknown predictor", ('name = "adept+fluid"', 'name = "magic-ball"'), "predictors[1].name"),
    ("duplicate policy names", ('name = "fcfs"', 'name = "easy"'), "policies[1].name"),
    (
        "unknown engine setting",
        ("idle_timeout_s = 600", "idle_timeout = 600"),
        "engine.idle_timeout",
    ),
    ("bad engine value", ("idle_timeout_s = 600", "idle_timeout_s = -1"), "engine.idle_timeout_s"),
    ("unknown preset", ('preset = "npb-mix"', 'preset = "npb-max"'), "ground_truth.preset"),
    (
        "unknown metric",
        ('name = "ok"', 'name = "ok"\nmetrics = ["energy_j", "joules"]'),
        "metrics[1]",
    ),
    (
        "missing platform file",
        ('name = "ok"', 'name = "ok"\nplatform = "nowhere.toml"'),
        "platforms[0].source",
    ),
    ("bad name", ('name = "syn"', 'name = "my trace"'), "traces[1].name"),
]


@pytest.mark.parametrize(("kind", "edit", "key"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_each_mistake_names_the_key_and_the_file(
    tmp_path: Path, kind: str, edit: tuple[str, str], key: str
) -> None:
    old, new = edit
    assert old in VALID, kind
    path = _write(tmp_path, VALID.replace(old, new, 1))
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(path)
    message = str(info.value)
    assert str(path) in message
    assert key in message, message
    assert isinstance(info.value, ConfigError)


def test_every_mistake_is_reported_at_once(tmp_path: Path) -> None:
    text = VALID.replace('name = "fcfs"', 'name = "fcsf"').replace(
        "idle_timeout_s = 600", "idle_timeout = 600"
    )
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(_write(tmp_path, text))
    keys = [k for k, _ in info.value.errors]
    assert "policies[1].name" in keys and "engine.idle_timeout" in keys


def test_missing_section_is_named(tmp_path: Path) -> None:
    with pytest.raises(ExperimentFileError, match=r"policies: required key is missing"):
        load_experiment(
            _write(tmp_path, 'name = "x"\n[[traces]]\nname = "k"\nsource = "builtin:kth-sp2"\n')
        )


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read experiment file"):
        load_experiment(tmp_path / "absent.toml")
