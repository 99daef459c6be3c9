"""The report: every policy, metric and plot is there; images are real PNGs; nothing from the network."""

from __future__ import annotations

import base64
import struct
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from energysched import load_results, make_report
from energysched.cli import main
from energysched.errors import ConfigError
from energysched.reporting import METRIC_LABELS, PLOTS, config_label

SECTIONS = ["headline", *PLOTS, "metrics", "failures"]


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
    assert set(parsed.images) == {f"fig-{key}" for key in PLOTS}


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


def test_every_metric_is_in_the_metrics_table(parsed: _Collector, demo_dir: Path) -> None:
    res = load_results(demo_dir)
    header = parsed.tables["metrics-table"][0]
    for metric in [
        *res.metrics,
        "energy_j",
        "makespan_s",
        "mean_wait_s",
        "p95_wait_s",
        "mean_bsld",
        "utilisation",
        "edp_js",
    ]:
        assert METRIC_LABELS.get(metric, metric) in header, metric
    for state in ("busy", "idle", "off", "switching"):
        assert f"{state} energy (J)" in header


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
    for title in PLOTS.values():
        assert f"## {title}" in md
    for key in PLOTS:
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
