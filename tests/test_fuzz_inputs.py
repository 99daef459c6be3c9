"""Property-based fuzzing of the three input files: every SWF trace, platform file
and experiment file either loads or raises one EnergySchedError that says where
(line, field or key), never another exception (issue 17).

Small budget for CI: a few dozen examples per property, no deadline.
"""

from __future__ import annotations

import gzip
import math
import string
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energysched.errors import ConfigError, EnergySchedError, TraceFormatError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)

#: Whole-file problems of a trace: no line or field to name.
_FILE_LEVEL = ("empty", "no job lines", "no valid job lines", "corrupt gzip", "directory")

# --------------------------------------------------------------------------- SWF

_TOKENS = st.one_of(
    st.integers(min_value=-3, max_value=10**6).map(str),
    st.sampled_from(
        [
            "-1",
            "--1",
            "1e",
            "-",
            "+",
            ".",
            "1e400",
            "-1e400",
            "nan",
            "inf",
            "NaN",
            "1.5",
            "0x10",
            "1_000",
            "١٢",
            "½",
            "\ufeff1",
            "9007199254740993",
            "1e16",
            "True",
            "",
        ]
    ),
    st.text(alphabet=string.printable + "é\x85\u2028", min_size=1, max_size=4),
)
_SEPARATORS = st.sampled_from([" ", "  ", "\t", "\f", "\v", "\x85", "\u00a0", " \r"])
_HEADER_KEYS = st.sampled_from(["MaxProcs", "MaxNodes", "UnixStartTime", "Version", "Queue"])


@st.composite
def _swf_lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["job", "job", "job", "header", "comment", "blank", "junk"]))
    if kind == "header":
        return f"; {draw(_HEADER_KEYS)}: {draw(_TOKENS)}"
    if kind == "comment":
        return ";" + draw(st.text(max_size=10))
    if kind == "blank":
        return draw(st.sampled_from(["", "   ", "\t", "\f"]))
    if kind == "junk":
        return draw(st.text(max_size=30))
    n = draw(st.sampled_from([18, 18, 18, 17, 19, 3]))
    good = ["1", "0", "-1", "10", "1", "-1", "-1", "1", "20"] + ["-1"] * 9
    tokens = [
        draw(_TOKENS) if draw(st.booleans()) and draw(st.booleans()) else good[i % 18]
        for i in range(n)
    ]
    sep = draw(_SEPARATORS)
    return sep.join(tokens)


@st.composite
def _swf_files(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_swf_lines(), max_size=12))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = newline.join(lines) + draw(st.sampled_from(["", newline]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "latin-1"]))
    data = text.encode(encoding, errors="replace")
    if draw(st.booleans()) and draw(st.booleans()):
        data = gzip.compress(data)
        if draw(st.booleans()):
            data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    return data


def _check_trace_error(err: TraceFormatError) -> None:
    text = str(err)
    assert "\n" not in text, text
    assert (
        err.line is not None
        or err.field is not None
        or any(words in err.reason for words in _FILE_LEVEL)
    ), text


@FUZZ
@given(data=_swf_files())
def test_swf_fuzz(tmp_path: Path, data: bytes) -> None:
    from simulator.platform import platform_from_trace
    from workloads.cleaning import clean_trace
    from workloads.swf import read_swf

    path = tmp_path / "fuzz.swf"
    path.write_bytes(data)
    for skip in (False, True):
        try:
            trace = read_swf(path, skip_bad_lines=skip)
        except TraceFormatError as err:
            _check_trace_error(err)
            continue
        jobs = trace.jobs
        assert jobs["job_id"].dropna().is_unique
        for column in ("submit_s", "runtime_s", "time_req_s"):
            values = jobs[column].to_numpy(dtype=float, na_value=math.nan)
            finite = values[~(values != values)]
            assert (abs(finite) < 2**53).all()
        try:
            cleaned, _ = clean_trace(trace)
            platform_from_trace(cleaned)
        except ConfigError as err:
            assert err.key


# --------------------------------------------------------------------------- platform

_VALUES = st.one_of(
    st.integers(min_value=-5, max_value=10**7),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
    st.lists(st.integers(min_value=-1, max_value=4), max_size=2),
    st.sampled_from([1e300, -1.0, 0, 0.5, 2.5]),
)


@st.composite
def _platforms(draw: st.DrawFn) -> dict[str, Any]:
    pstate = {"freq_ghz": 2.0, "idle_power_w": 90.0, "busy_power_w": 200.0}
    node_type: dict[str, Any] = {
        "name": "n",
        "count": 4,
        "cores_per_node": 2,
        "pstates": [dict(pstate), {**pstate, "freq_ghz": 1.0}],
        "off_power_w": 5.0,
        "boot_time_s": 10.0,
        "boot_energy_j": 1000.0,
    }
    data: dict[str, Any] = {"name": "p", "node_types": [node_type]}
    if draw(st.booleans()):
        data["topology"] = {"nodes_per_switch": 2, "link_bandwidth_gbs": 1.0}
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        target = draw(st.sampled_from(["top", "type", "pstate", "topology"]))
        value = draw(_VALUES)
        if target == "top":
            data[draw(st.sampled_from(["name", "node_types", "extra"]))] = value
        elif target == "type" and isinstance(data.get("node_types"), list):
            key = draw(st.sampled_from([*sorted(node_type), "bogus"]))
            node_type[key] = value
        elif target == "pstate" and isinstance(node_type.get("pstates"), list):
            key = draw(st.sampled_from(sorted(pstate)))
            node_type["pstates"][0][key] = value
        elif "topology" in data and isinstance(data["topology"], dict):
            data["topology"][draw(st.sampled_from(["nodes_per_switch", "link_bandwidth_gbs"]))] = (
                value
            )
    return data


@FUZZ
@given(data=_platforms())
def test_platform_fuzz(data: dict[str, Any]) -> None:
    from simulator.platform import platform_from_dict

    try:
        platform = platform_from_dict(data, source="fuzz.toml")
    except ConfigError as err:
        assert err.key and "\n" not in str(err)
        return
    for t in platform.node_types:
        for p in t.pstates:
            assert 0 <= p.idle_power_w <= p.busy_power_w <= 1e6
        assert t.count * t.max_power_w < 1e14  # sums over nodes stay finite and exact


@FUZZ
@given(text=st.text(alphabet=string.printable + "é\x00", max_size=80))
def test_platform_text_fuzz(tmp_path: Path, text: str) -> None:
    from simulator.platform import load_platform

    path = tmp_path / "p.toml"
    path.write_bytes(("[[node_types]]\ncount = 2\n" + text).encode("latin-1", errors="replace"))
    try:
        load_platform(path)
    except ConfigError as err:
        assert err.key


# --------------------------------------------------------------------------- experiment

_BASE_EXPERIMENT: dict[str, Any] = {
    "name": "fuzz",
    "traces": [{"name": "k", "source": "builtin:kth-sp2", "max_jobs": 20}],
    "policies": [{"name": "easy"}],
}


@st.composite
def _experiments(draw: st.DrawFn) -> dict[str, Any]:
    import copy

    data = copy.deepcopy(_BASE_EXPERIMENT)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        where = draw(
            st.sampled_from(
                ["top", "trace", "policy", "engine", "seeds", "ground_truth", "predictors"]
            )
        )
        value = draw(_VALUES)
        if where == "top":
            data[draw(st.sampled_from(["name", "metrics", "platform", "bogus"]))] = value
        elif where == "trace":
            data["traces"][0][draw(st.sampled_from(["name", "source", "max_jobs", "x"]))] = value
        elif where == "policy":
            key = draw(st.sampled_from(["name", "policy", "params", "predictors", "baseline"]))
            data["policies"][0][key] = value
        elif where == "engine":
            key = draw(
                st.sampled_from(
                    [
                        "record_power",
                        "idle_timeout_s",
                        "reserve_nodes",
                        "power_cap_w",
                        "kill_grace_s",
                        "overrun",
                        "seed",
                    ]
                )
            )
            data.setdefault("engine", {})[key] = value
        elif where == "seeds":
            data["seeds"] = {draw(st.sampled_from(["base", "replicates", "list"])): value}
        elif where == "ground_truth":
            data["ground_truth"] = {
                "preset": draw(st.sampled_from(["npb-mix", "nope"])),
                "noise": value,
            }
        else:
            data["predictors"] = [
                {
                    "name": draw(st.sampled_from(["lbm", "oracle", "zz"])),
                    "params": {"solver": value},
                }
            ]
            data["policies"][0]["predictors"] = "all"
            data["policies"][0]["name"] = "easy-min-energy"
    return data


@FUZZ
@given(data=_experiments())
def test_experiment_fuzz(tmp_path: Path, data: dict[str, Any]) -> None:
    from energysched.config import parse_experiment
    from energysched.sweep import plan_runs

    try:
        spec = parse_experiment(data, source="fuzz.toml", base_dir=tmp_path)
    except ConfigError as err:
        assert err.key
        return
    assert plan_runs(spec)


@FUZZ
@given(text=st.text(alphabet=string.printable + "é", max_size=60))
def test_experiment_text_fuzz(tmp_path: Path, text: str) -> None:
    from energysched.config import load_experiment

    path = tmp_path / "e.toml"
    path.write_bytes(text.encode("latin-1", errors="replace"))  # so "é" is not UTF-8
    try:
        load_experiment(path)
    except ConfigError as err:
        assert err.key
    except EnergySchedError as err:  # pragma: no cover - any other of ours is a bug here
        pytest.fail(f"unexpected {type(err).__name__}: {err}")


def test_toml_module_is_the_one_the_loaders_use() -> None:
    assert tomllib.loads("a = 1") == {"a": 1}
