"""The report: every policy, metric and plot is there; images are real PNGs; nothing from the network."""

from __future__ import annotations

import base64
import json
import struct
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import write_warning_experiment

from energysched import load_results, make_report
from energysched.cli import main
from energysched.errors import ConfigError
from energysched.plots import (
    assign_nodes,
    busy_nodes_events,
    ecdf_points,
    peak_rows,
    queue_events,
    step_means,
)
from energysched.reporting import (
    COMPACT_METRICS,
    OPTIONAL_PLOTS,
    PLOTS,
    compact_column,
    config_label,
    warnings_table,
)

#: the demo's policies all run every core of a node: no chosen-configurations figure
DEMO_PLOTS = [key for key in PLOTS if key not in OPTIONAL_PLOTS]
SECTIONS = ["headline", *DEMO_PLOTS, "metrics", "warnings", "failures"]


class _Collector(HTMLParser):
    """Collects section ids, images, tables (as lists of rows) and external references."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: dict[str, str] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self.external: list[str] = []
        self.tags: set[str] = set()
        self._figure: str | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        for key in ("src", "href"):
            if key not in a:
                continue
            value = a[key] or ""
            if value.startswith(("http:", "https:", "//")) or (
                key == "src" and not value.startswith("data:")
            ):
                self.external.append(value)
        if tag == "section":
            self.sections.append(a.get("id", ""))
        elif tag == "figure":
            self._figure = a.get("id")
        elif tag == "img" and self._figure:
            self.images[self._figure] = a.get("src", "")
        elif tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "figure":
            self._figure = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``energysched demo --quick`` (all policies, predictors and oracle twins, one seed)."""
    out = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(main, ["demo", "--quick", "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert f"report: {(out / 'report.html').resolve()}" in result.output
    return out


@pytest.fixture(scope="module")
def parsed(demo_dir: Path) -> _Collector:
    parser = _Collector()
    parser.feed((demo_dir / "report.html").read_text(encoding="utf-8"))
    return parser


def test_every_section_and_plot_is_present(parsed: _Collector) -> None:
    assert parsed.sections == SECTIONS
    assert set(parsed.images) == {f"fig-{key}" for key in DEMO_PLOTS}


def test_images_are_embedded_non_empty_pngs(parsed: _Collector, demo_dir: Path) -> None:
    for fig_id, src in parsed.images.items():
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix), fig_id
        data = base64.b64decode(src[len(prefix) :], validate=True)
        width, height = _png_size(data)
        assert width >= 300 and height >= 100, fig_id
        # the Markdown twin's PNG files are the same images
        assert (demo_dir / "report_files" / f"{fig_id[4:]}.png").read_bytes() == data


def test_report_is_self_contained(parsed: _Collector) -> None:
    assert parsed.external == []
    assert not parsed.tags & {"script", "link", "iframe"}


def test_every_policy_and_predictor_is_in_the_tables(parsed: _Collector, demo_dir: Path) -> None:
    res = load_results(demo_dir)
    labels = {
        config_label(p, q)
        for p, q in zip(res.summaries["policy"], res.summaries["predictor"], strict=True)
    }
    assert {
        "fcfs",
        "easy",
        "easy-poweroff",
        "conservative",
        "easy-energy-freq + oracle",
        "easy-energy-freq + adept+fluid",
    } <= labels
    headline = {row[1].removesuffix(" (baseline)") for row in parsed.tables["headline-table"][1:]}
    metrics = {row[1] for row in parsed.tables["metrics-table"][1:]}
    assert labels <= headline and labels <= metrics
    assert any(row[1] == "easy (baseline)" for row in parsed.tables["headline-table"])
    predictors = {row[0] for row in parsed.tables["predictor-error-table"][1:]}
    assert predictors == {"adept+fluid", "oracle"}


def test_the_metrics_table_is_compact_in_mwh_and_hours(parsed: _Collector, demo_dir: Path) -> None:
    res = load_results(demo_dir)
    header = parsed.tables["metrics-table"][0]
    for metric in [*res.metrics, "energy_j", "makespan_s", "mean_wait_s", "mean_bsld"]:
        column = compact_column(metric)
        if column is not None:
            assert COMPACT_METRICS[column][0] in header, metric
    for state in ("busy", "idle", "off", "switching"):
        assert f"{state} (MWh)" in header
    assert not any("(J" in h for h in header)  # no joules
    # values: the mean over seeds, converted (energy J -> MWh, makespan s -> h)
    t = res.summaries
    row = parsed.tables["metrics-table"][1]
    first = t[(t["trace"] == row[0]) & (t["policy"] == row[1].split(" + ")[0])]
    energy_mwh = float(row[header.index("energy (MWh)")].replace(",", ""))
    assert energy_mwh == pytest.approx(first["energy_j"].mean() / 3.6e9, rel=5e-3)
    makespan_h = float(row[header.index("makespan (h)")].replace(",", ""))
    assert makespan_h == pytest.approx(first["makespan_s"].mean() / 3600, rel=5e-3)


def test_every_figure_is_also_an_svg(demo_dir: Path) -> None:
    html_text = (demo_dir / "report.html").read_text(encoding="utf-8")
    for key in DEMO_PLOTS:
        svg = (demo_dir / "report_files" / f"{key}.svg").read_text(encoding="utf-8")
        assert "<svg" in svg[:2000] and svg.rstrip().endswith("</svg>"), key
        assert f'href="report_files/{key}.svg"' in html_text


def test_ecdf_points_of_a_few_values_are_every_value() -> None:
    x, y = ecdf_points(np.array([3.0, np.nan, 1.0, 2.0, 2.0, np.inf]), levels=10)
    assert x.tolist() == [1.0, 2.0, 2.0, 3.0]
    assert y.tolist() == [0.25, 0.5, 0.75, 1.0]


@pytest.mark.parametrize("levels", [10, 100])
def test_ecdf_points_stay_within_one_level_of_the_ecdf(levels: int) -> None:
    """Drawn as a step function (where="post"), the kept points are within 1 / levels
    of the full ECDF at every value, with ties (many zero waits) and a long tail."""
    rng = np.random.default_rng(3)
    values = np.concatenate([np.zeros(3000), rng.lognormal(5, 2, 7000), np.full(500, 60.0)])
    x, y = ecdf_points(values, levels=levels)
    assert len(x) <= levels + 2
    full = np.sort(values)
    assert x[0] == full[0] and x[-1] == full[-1] and y[-1] == 1.0
    ecdf = np.searchsorted(full, full, side="right") / len(full)  # the ECDF at each value
    drawn = y[np.searchsorted(x, full, side="right") - 1]  # the step's height there
    assert np.all(drawn <= ecdf + 1e-12)
    assert np.max(ecdf - drawn) < 1.0 / levels
    on_curve = np.searchsorted(full, x, side="right") / len(full)
    assert np.all(y <= on_curve + 1e-12)  # every kept point lies on the ECDF's graph


def test_step_means_by_hand() -> None:
    # 2 nodes busy from t=1 to t=3: bins [0, 2) and [2, 4) are half busy
    means = step_means(np.array([1.0, 3.0]), np.array([2.0, -2.0]), np.array([0.0, 2.0, 4.0]))
    assert means == pytest.approx([1.0, 1.0])
    # simultaneous jumps add up; the level before the first jump is start_level
    means = step_means(
        np.array([2.0, 2.0, 6.0]), np.array([1.0, 3.0, -4.0]), np.array([0.0, 4.0, 8.0]), 1.0
    )
    assert means == pytest.approx([(2 * 1 + 2 * 5) / 4, (2 * 5 + 2 * 1) / 4])


def test_utilisation_over_time_integrates_to_the_runs_utilisation(demo_dir: Path) -> None:
    res = load_results(demo_dir)
    row = res.summaries.iloc[0]
    jobs = res.jobs(row["run_id"])
    times, deltas = busy_nodes_events(jobs)
    t0 = float(jobs["submit_s"].min())
    edges = np.array([t0, t0 + float(row["makespan_s"])])
    nodes = row["busy_node_s"] / (row["utilisation"] * row["makespan_s"])
    assert step_means(times, deltas, edges)[0] / nodes == pytest.approx(row["utilisation"])
    # queue length: every started job entered once and left once
    times, deltas = queue_events(jobs)
    assert deltas.sum() == 0 and (deltas > 0).sum() == jobs["start_s"].notna().sum()


def test_schedule_rows_never_overlap() -> None:
    jobs = pd.DataFrame(
        {
            "start_s": [0.0, 0.0, 5.0, 10.0, np.nan],
            "end_s": [10.0, 5.0, 10.0, 12.0, np.nan],
            "nodes": [1, 1, 1, 2, 1],
        }
    )
    rows = assign_nodes(jobs)
    assert rows == [
        [0],
        [1],
        [1],
        [0, 1],
        [],
    ]  # job 2 reuses job 1's row; job 3 starts as 0 and 2 end
    events = []
    for i, r in enumerate(rows):
        assert len(r) == (jobs["nodes"][i] if np.isfinite(jobs["start_s"][i]) else 0)
        events += [(jobs["start_s"][i], jobs["end_s"][i], n) for n in r]
    for a in events:
        for b in events:
            if a is not b and a[2] == b[2]:
                assert a[1] <= b[0] or b[1] <= a[0]


def test_schedule_rows_of_a_window_and_the_peak_row_count() -> None:
    """The rows of the jobs started by a cut are those of the whole assignment (rows
    are given in time order), the later jobs get none; peak_rows is the number of rows
    the whole assignment opens (3 in the case worked by hand: jobs 0 and 1 then job 3
    with 2 nodes while job 0 still runs)."""
    jobs = pd.DataFrame(
        {
            "start_s": [0.0, 0.0, 5.0, 6.0, np.nan],
            "end_s": [10.0, 5.0, 6.0, 12.0, np.nan],
            "nodes": [1, 1, 1, 2, 1],
        }
    )
    assert assign_nodes(jobs) == [[0], [1], [1], [1, 2], []]
    assert peak_rows(jobs) == 3
    assert assign_nodes(jobs, started_by_s=5.0) == [[0], [1], [1], [], []]
    rng = np.random.default_rng(5)
    start = np.sort(rng.uniform(0, 1000, 400)).round()
    many = pd.DataFrame(
        {
            "start_s": start,
            "end_s": start + rng.integers(1, 200, 400),
            "nodes": rng.integers(1, 9, 400),
        }
    )
    full = assign_nodes(many)
    assert peak_rows(many) == max(max(r) + 1 for r in full)
    cut = float(start[150])
    window = assign_nodes(many, started_by_s=cut)
    for i, rows in enumerate(window):
        assert rows == (full[i] if start[i] <= cut else [])


def test_oracle_regret_and_predictor_error_are_computed(demo_dir: Path) -> None:
    t = load_results(demo_dir).summaries
    learned = t[t["predictor"] == "adept+fluid"]
    oracle = t[t["predictor"] == "oracle"]
    assert len(learned) and np.isfinite(learned["oracle_energy_regret"]).all()
    assert (oracle["oracle_energy_regret"] == 0).all()
    assert np.isfinite(learned["mape_runtime"]).all() and (learned["n_predicted"] > 0).all()
    assert t.loc[t["predictor"] == "none", "oracle_energy_regret"].isna().all()


def test_markdown_twin(demo_dir: Path) -> None:
    md = (demo_dir / "report.md").read_text(encoding="utf-8")
    for key in DEMO_PLOTS:
        assert f"## {PLOTS[key]}" in md
        assert f"](report_files/{key}.png)" in md
    assert "| setting | configuration |" in md and "easy (baseline)" in md


def test_power_plot_for_a_chosen_run_and_unknown_run(demo_dir: Path, tmp_path: Path) -> None:
    run_id = load_results(demo_dir).summaries["run_id"].iloc[0]
    result = CliRunner().invoke(
        main, ["report", str(demo_dir), "--run", run_id, "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert f"run {run_id}" in (tmp_path / "report.html").read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match="no finished run 'nope'"):
        make_report(demo_dir, run_id="nope", out_dir=tmp_path)


def test_the_warnings_section_counts_each_kind_once_per_run() -> None:
    rows = [
        ("a__s0", "easy-energy-freq", "adept+fluid", "WARNING predictors.dvfs: fluid: application 42: alpha 1.5"),
        ("a__s0", "easy-energy-freq", "adept+fluid", "WARNING predictors.dvfs: fluid: application 7: alpha 2"),
        ("a__s1", "easy-energy-freq", "adept+fluid", "WARNING predictors.dvfs: fluid: application 9: alpha 1.1"),
        ("b__s0", "easy", "none", "WARNING simulator.engine: 3 of 50 jobs have no requested time"),
        ("c__s1", "easy-slack-freq", "oracle", "WARNING predictors.dvfs: fluid: application 3: alpha 4"),
    ]  # fmt: skip
    table = pd.DataFrame(
        [
            {"run_id": r, "trace": "t", "policy": p, "predictor": q, "replicate": 0,
             "warning": w, "count": 1}
            for r, p, q, w in rows
        ]
    )  # fmt: skip
    cols, got = warnings_table(table)
    assert cols == ["warning (an example)", "runs", "configurations"]
    # the fluid warning (the same text but for its numbers) in 3 runs of 2 configurations,
    # the engine's in 1 run: most frequent first, each with its first example
    assert got == [
        [rows[0][3], "3", "easy-energy-freq + adept+fluid, easy-slack-freq + oracle"],
        [rows[3][3], "1", "easy"],
    ]
    assert warnings_table(table.iloc[:0]) == (cols, [])


def test_the_report_lists_the_warnings_the_runs_recorded(
    demo_dir: Path, parsed: _Collector
) -> None:
    res = load_results(demo_dir)
    recorded = {
        (run_id, w)
        for run_dir in (demo_dir / "runs").iterdir()
        for run_id in [run_dir.name]
        for w in json.loads((run_dir / "run.json").read_text())["warnings"]
    }
    assert {
        (r, f"{w} x{n}")
        for r, w, n in zip(res.warnings["run_id"], res.warnings["warning"], res.warnings["count"])
    } == recorded
    _, rows = warnings_table(res.warnings)
    if recorded:  # the HTML table: its header, then one row per kind
        assert parsed.tables["warnings-table"][1:] == rows
    else:
        md = (demo_dir / "report.md").read_text(encoding="utf-8")
        assert "## Warnings the runs gave\n\nNone." in md


def test_a_warning_every_run_gave_is_one_row_of_the_report(tmp_path: Path) -> None:
    from energysched import run_sweep

    experiment = write_warning_experiment(tmp_path)
    run_sweep(experiment, tmp_path / "out", progress=False)
    report = make_report(tmp_path / "out")
    page = _Collector()
    page.feed(report.html.read_text(encoding="utf-8"))
    [[example, runs, configs]] = page.tables["warnings-table"][1:]
    assert example.startswith("WARNING simulator.engine: 1 of 5 jobs have no requested time")
    assert (runs, configs) == ("4", "easy, fcfs")
