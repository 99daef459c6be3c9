"""Bad input is refused up front with one line naming the file, key and fix (issue 17, items 4, 5, 8)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from energysched import ExperimentFileError, load_experiment
from energysched.cli import main
from energysched.errors import ConfigError
from simulator.config import RunConfig
from simulator.platform import load_platform

TINY = "; MaxNodes: 4\n; MaxProcs: 4\n" + "\n".join(
    f"{i} {10 * i} -1 100 2 -1 -1 2 200 -1 1 1 -1 -1 -1 -1 -1 -1" for i in range(1, 6)
)
EXPERIMENT = textwrap.dedent(
    """
    name = "x"
    [[traces]]
    name = "k"
    source = "builtin:kth-sp2"
    max_jobs = 20
    [[policies]]
    name = "easy"
    """
)


@pytest.fixture()
def tiny_trace(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.swf"
    path.write_text(TINY + "\n")
    return path


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["run", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _one_line_error(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    return lines[0]


def test_trace_or_platform_naming_a_directory(tiny_trace: Path, tmp_path: Path) -> None:
    code, out = _run("--trace", str(tmp_path), "--out", str(tmp_path / "o1"))
    assert code != 0 and "is a directory" in _one_line_error(out)
    code, out = _run(
        "--trace", str(tiny_trace), "--platform", str(tmp_path), "--out", str(tmp_path / "o2")
    )
    assert code != 0 and "is a directory" in _one_line_error(out)


def test_unwritable_out_is_found_before_the_replay(
    tiny_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import energysched.runner as runner

    def boom(spec: object) -> None:
        raise AssertionError("the replay must not start")

    monkeypatch.setattr(runner, "run_spec", boom)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = _run("--trace", str(tiny_trace), "--out", str(blocker / "x"))
    assert code != 0 and "cannot write there" in _one_line_error(out)


def test_out_directory_must_be_empty_unless_overwrite(tiny_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _run("--trace", str(tiny_trace), "--out", str(out))[0] == 0
    code, text = _run("--trace", str(tiny_trace), "--out", str(out), "--format", "csv")
    assert code != 0 and "--overwrite" in _one_line_error(text)
    assert (out / "jobs.parquet").exists() or (out / "jobs.csv").exists()
    first = {p.name for p in out.iterdir()}
    code, text = _run(
        "--trace", str(tiny_trace), "--out", str(out), "--format", "csv", "--overwrite"
    )
    assert code == 0, text
    assert (out / "jobs.csv").exists() and not (out / "jobs.parquet").exists(), first


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1.5"])
def test_noise_must_be_finite_and_below_one(tiny_trace: Path, tmp_path: Path, value: str) -> None:
    code, out = _run("--trace", str(tiny_trace), "--noise", value, "--out", str(tmp_path / "o"))
    assert code == 2 and "--noise" in out


@pytest.mark.parametrize("option", ["--idle-timeout", "--power-cap"])
def test_nan_is_refused_for_numeric_flags(tiny_trace: Path, tmp_path: Path, option: str) -> None:
    code, out = _run("--trace", str(tiny_trace), option, "nan", "--out", str(tmp_path / "o"))
    assert code == 2 and option in out


def test_predictor_given_twice_is_an_error(tiny_trace: Path, tmp_path: Path) -> None:
    code, out = _run(
        "--trace",
        str(tiny_trace),
        "--policy",
        "easy-min-energy",
        "--param",
        "predictor=lbm",
        "--predictor",
        "oracle",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 2 and "predictor" in out


def test_plugin_raising_at_import(tiny_trace: Path, tmp_path: Path) -> None:
    (tmp_path / "broken_plugin_mod.py").write_text("raise RuntimeError('boom at import')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        code, out = _run(
            "--trace",
            str(tiny_trace),
            "--policy",
            "broken_plugin_mod:Policy",
            "--out",
            str(tmp_path / "o"),
        )
        assert code != 0
        line = _one_line_error(out)
        assert "broken_plugin_mod:Policy" in line and "RuntimeError: boom at import" in line
        exp = tmp_path / "e.toml"
        exp.write_text(
            EXPERIMENT.replace('name = "easy"', 'name = "p"\npolicy = "broken_plugin_mod:P"')
        )
        with pytest.raises(ExperimentFileError, match="boom at import"):
            load_experiment(exp)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("broken_plugin_mod", None)


def test_power_cap_below_idle_power_is_refused_before_the_replay(
    tiny_trace: Path, tmp_path: Path
) -> None:
    # 4 default nodes idle at 92 W each: 368 W with nothing running
    code, out = _run("--trace", str(tiny_trace), "--power-cap", "300", "--out", str(tmp_path / "o"))
    line = _one_line_error(out)
    assert code != 0 and "368 W" in line and "--idle-timeout" in line
    assert not (tmp_path / "o" / "summary.json").exists()


def test_run_completing_no_job_exits_non_zero(tiny_trace: Path, tmp_path: Path) -> None:
    # above the idle floor (368 W) but below idle + one job's extra draw: every job rejected
    code, out = _run("--trace", str(tiny_trace), "--power-cap", "400", "--out", str(tmp_path / "o"))
    assert code == 1 and "no job completed" in _one_line_error(out)
    assert (tmp_path / "o" / "summary.json").exists()  # results kept for inspection


def test_latin1_experiment_and_platform_files(tmp_path: Path) -> None:
    exp = tmp_path / "latin.toml"
    exp.write_bytes(EXPERIMENT.replace('name = "x"', '# caf\xe9\nname = "x"').encode("latin-1"))
    with pytest.raises(ConfigError, match=r"line 2: byte 0xe9 is not UTF-8"):
        load_experiment(exp)
    plat = tmp_path / "p.toml"
    plat.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"line 1: .*save the platform file as UTF-8"):
        load_platform(plat)
    with pytest.raises(ConfigError, match="is a directory"):
        load_platform(tmp_path)


@pytest.mark.parametrize(
    ("engine", "key"),
    [
        ('record_power = "no"', "record_power"),
        ("idle_timeout_s = true", "idle_timeout_s"),
        ("reserve_nodes = true", "reserve_nodes"),
        ("power_cap_w = nan", "power_cap_w"),
    ],
)
def test_engine_settings_have_strict_types(tmp_path: Path, engine: str, key: str) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(EXPERIMENT + f"[engine]\n{engine}\n")
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(exp)
    assert info.value.key == f"engine.{key}"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"record_power": "no"},
        {"idle_timeout_s": True},
        {"reserve_nodes": True},
        {"kill_grace_s": "5"},
        {"seed": True},
        {"progress": 1},
        {"idle_timeout_s": 1e300},
        {"kill_grace_s": 1e300},
    ],
)
def test_run_config_refuses_wrong_types(kwargs: dict) -> None:
    with pytest.raises(ConfigError) as info:
        RunConfig(**kwargs)
    assert info.value.key == next(iter(kwargs))


def test_max_jobs_must_be_an_integer_not_a_string(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(EXPERIMENT.replace("max_jobs = 20", 'max_jobs = "200"'))
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(exp)
    assert info.value.key == "traces[0].max_jobs"


def test_huge_pstate_power_is_refused(tmp_path: Path) -> None:
    plat = tmp_path / "p.toml"
    plat.write_text(
        textwrap.dedent(
            """
            [[node_types]]
            count = 4
            cores_per_node = 1
            pstates = [{ freq_ghz = 2.0, idle_power_w = 100.0, busy_power_w = 1e300 }]
            """
        )
    )
    with pytest.raises(ConfigError) as info:
        load_platform(plat)
    assert info.value.key == "node_types[0].pstates[0].busy_power_w"
    assert "check the unit" in str(info.value)


def test_validate_catches_fit_time_parameters_and_oracle_without_truth(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(
        'ground_truth = "none"\n'
        + EXPERIMENT.replace('name = "easy"', 'name = "easy-min-energy"\npredictors = "all"')
        + textwrap.dedent(
            """
            [[predictors]]
            name = "lbm"
            params = { solver = "magic" }
            [[predictors]]
            name = "oracle"
            """
        )
    )
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(exp)
    keys = dict(info.value.errors)
    assert "unknown solver 'magic'" in keys["predictors[0].params.solver"]
    assert "[ground_truth]" in keys["predictors[1].name"]
    exp.write_text(
        exp.read_text().replace('"magic"', '"nnls"').replace('ground_truth = "none"\n', "")
    )
    load_experiment(exp)  # with a ground truth (npb-mix unless told otherwise) the oracle is fine


def test_unreachable_scheduler_fails_fast() -> None:
    import socket
    import time

    from energysched.sweep import make_executor

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.process_time()
    with pytest.raises(ConfigError, match="cannot reach the Dask scheduler"):
        make_executor(scheduler=f"tcp://127.0.0.1:{port}")
    assert time.process_time() - started < 5  # CPU seconds: no 30 s connect loop


def _trace_with_one_bad_line(path: Path) -> Path:
    """20 good jobs and, as line 8, a job whose runtime field is not a number."""
    lines = ["; MaxProcs: 8", "; MaxNodes: 8"]
    lines += [f"{i} {i * 10} 0 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1" for i in range(1, 21)]
    lines.insert(7, "70 70 0 abc 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_experiment_can_skip_the_bad_lines_of_its_trace(tmp_path: Path) -> None:
    import json

    from energysched import plan_runs, run_sweep

    _trace_with_one_bad_line(tmp_path / "bad.swf")
    text = '[[traces]]\nname = "bad"\nsource = "bad.swf"\n{skip}[[policies]]\nname = "easy"\n'
    strict = tmp_path / "strict.toml"
    strict.write_text('name = "strict"\n' + text.format(skip=""), encoding="utf-8")
    summary = run_sweep(strict, tmp_path / "strict", progress=False)
    assert summary.failed == ["bad__trace__easy__none__s0"]
    error = (tmp_path / "strict" / "failed" / summary.failed[0] / "error.txt").read_text()
    assert "bad.swf" in error and "line 8" in error
    assert "skip_bad_lines = true in an experiment's [[traces]] entry" in error

    lenient = tmp_path / "lenient.toml"
    lenient.write_text(
        'name = "lenient"\n' + text.format(skip="skip_bad_lines = true\n"), encoding="utf-8"
    )
    summary = run_sweep(lenient, tmp_path / "lenient", progress=False)
    assert summary.completed == ["bad__trace__easy__none__s0"]
    run = tmp_path / "lenient" / "runs" / summary.completed[0]
    meta = json.loads((run / "summary.json").read_text())["meta"]
    assert meta["cleaning"]["bad_lines_skipped"] == 1 and meta["cleaning"]["jobs_out"] == 20

    # a task that does not skip hashes as tasks did before the field existed
    (task,) = plan_runs(load_experiment(strict))
    old = task.to_dict()
    del old["skip_bad_lines"]
    text_old = json.dumps(old, sort_keys=True, separators=(",", ":"), default=str)
    import hashlib

    assert task.config_hash() == hashlib.sha256(text_old.encode()).hexdigest()[:16]
    (skipping,) = plan_runs(load_experiment(lenient))
    assert skipping.skip_bad_lines and skipping.config_hash() != task.config_hash()


def test_skip_bad_lines_is_for_swf_files_only(tmp_path: Path) -> None:
    path = tmp_path / "synthetic.toml"
    path.write_text(
        'name = "s"\n[[traces]]\nname = "l"\nskip_bad_lines = true\n'
        'synthetic = { model = "lublin", n_jobs = 50, nodes = 16 }\n'
        '[[policies]]\nname = "easy"\n',
        encoding="utf-8",
    )
    with pytest.raises(ExperimentFileError, match="'skip_bad_lines' applies to SWF files"):
        load_experiment(path)


def test_an_engine_setting_the_policy_sets_otherwise_is_an_error_not_overridden(
    tiny_trace: Path, tmp_path: Path
) -> None:
    # easy-energy-bsld-off switches idle nodes off after 600 s itself: before, its 600
    # silently replaced --idle-timeout 100
    code, out = _run(
        "--trace", str(tiny_trace), "--policy", "easy-energy-bsld-off",
        "--idle-timeout", "100", "--out", str(tmp_path / "o1"),
    )  # fmt: skip
    line = _one_line_error(out)
    assert code != 0 and "idle_timeout_s = 100.0" in line and "gives 600.0" in line
    assert not (tmp_path / "o1").exists() or not any((tmp_path / "o1").iterdir())
    # the same value, or the policy's own parameter, is fine
    for extra in (["--idle-timeout", "600"], ["--param", "idle_timeout_s=100"]):
        code, out = _run(
            "--trace", str(tiny_trace), "--policy", "easy-energy-bsld-off", *extra,
            "--out", str(tmp_path / extra[1].replace("=", "-")),
        )  # fmt: skip
        assert code == 0, out
    # the engine takes the policy's settings where the config leaves them at their defaults
    config = RunConfig(seed=3)
    assert config.with_policy_settings({"idle_timeout_s": 600.0}, "p").idle_timeout_s == 600.0
    assert (
        RunConfig(reserve_nodes=2).with_policy_settings({"reserve_nodes": 2}, "p").reserve_nodes
        == 2
    )
    with pytest.raises(ConfigError, match=r"power_cap_w = 1000\.0 and policy 'p' gives 2000\.0"):
        RunConfig(power_cap_w=1000.0).with_policy_settings({"power_cap_w": 2000.0}, "p")


def test_an_experiment_whose_engine_contradicts_a_policy_is_refused(tmp_path: Path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(
        EXPERIMENT.replace('name = "x"', 'name = "x"\n[engine]\nidle_timeout_s = 300')
        + '[[policies]]\nname = "easy-energy-bsld-off"\n'
        + '[[policies]]\nname = "u"\npolicy = "easy-util-freq-off"\n'
        + "engine = { idle_timeout_s = 600 }\n"
        + '[[policies]]\nname = "v"\npolicy = "easy-util-freq-off"\n'
        + "engine = { idle_timeout_s = 60 }\n"
    )
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(exp)
    keys = [key for key, _ in info.value.errors]
    # [engine]'s 300 against bsld-off's 600; v's own 60 against 600; u agrees (600)
    assert keys == ["engine.idle_timeout_s", "policies[3].engine.idle_timeout_s"]


def test_an_experiment_giving_a_policy_a_parameter_its_rules_never_read_says_which_do(
    tmp_path: Path,
) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(
        EXPERIMENT.replace('name = "easy"', 'name = "easy-energy-freq"\nparams = { slack = 0.3 }')
    )
    with pytest.raises(ExperimentFileError) as info:
        load_experiment(exp)
    [(key, reason)] = info.value.errors
    assert key == "policies[0].params.slack"
    assert reason.startswith("slack changes nothing under easy-energy-freq's rules")
    assert "easy-slack-freq" in reason
    # a parameter no built-in has is still unknown, with the known ones listed
    exp.write_text(EXPERIMENT.replace('name = "easy"', 'name = "easy"\nparams = { slak = 0.3 }'))
    with pytest.raises(ExperimentFileError, match="unknown parameter of policy 'easy'; known: "):
        load_experiment(exp)
