"""A report's figures made side by side (energysched.figure_files): the same PNG bytes
as one after the other, the SVG drawn with the PNG's layout, errors and dead workers
handled as in one process."""

from __future__ import annotations

import io
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from energysched.figure_files import figure_bytes, render_figures
from energysched.plots import figure
from tests.fresh_python import fresh_python

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


def _curve_figure(seed: int):
    """A small laid-out figure: two panels with titles, labels and a legend."""
    rng = np.random.default_rng(seed)
    fig = figure(6, 3)
    for k in range(2):
        ax = fig.add_subplot(1, 2, k + 1)
        ax.plot(np.cumsum(rng.random(50)), label=f"series {seed}")
        ax.set_title(f"panel {k} of figure {seed}")
        ax.set_xlabel("jobs seen")
        ax.set_ylabel("median error (%)")
        ax.legend()
    return fig


def _positions(fig) -> np.ndarray:
    return np.array([ax.get_position().bounds for ax in fig.axes])


def test_the_svg_is_drawn_with_the_pngs_layout() -> None:
    """The PNG's draw lays the figure out; the SVG keeps those axes positions (drawn
    with its own layout, at 72 dpi instead of 100, the axes move by about 0.1 % of
    the figure)."""
    png_only = _curve_figure(1)
    png_only.savefig(io.BytesIO(), format="png", metadata={"Software": None})
    both = _curve_figure(1)
    png, svg = figure_bytes(both)
    assert np.array_equal(_positions(both), _positions(png_only))
    again = io.BytesIO()
    png_only.savefig(again, format="png", metadata={"Software": None})
    assert png == again.getvalue()
    assert svg.startswith(b"<?xml") and svg.rstrip().endswith(b"</svg>")


# A fresh interpreter (no thread of another test alive, so that it may fork): each
# builder records the process it ran in; the figures are made by 2 workers, then in
# this process, and the bytes compared.
SIDE_BY_SIDE = """
import json, os, sys
from functools import partial
sys.path.insert(0, {root!r})
from energysched.figure_files import render_figures
from tests.energysched.test_figure_files import _curve_figure

def made_in(seed, log):
    with open(log, "a") as fh:
        fh.write(f"{{seed}} {{os.getpid()}}\\n")
    return None if seed == 2 else _curve_figure(seed)

builders = {{f"fig{{s}}": partial(made_in, s, {log!r}) for s in range(5)}}
forked = render_figures(builders, workers=2)
here = render_figures(builders, workers=1)
print(json.dumps({{
    "pid": os.getpid(),
    "keys": list(forked),
    "same_png": all(forked[k][0] == here[k][0] for k in here),
    "same_keys": list(forked) == list(here),
}}))
"""


@linux_only
def test_figures_made_by_forked_workers_are_those_made_here(tmp_path: Path) -> None:
    log = tmp_path / "made.txt"
    root = str(Path(__file__).resolve().parents[2])
    out = json.loads(fresh_python(SIDE_BY_SIDE.format(root=root, log=str(log))).splitlines()[-1])
    assert out["keys"] == ["fig0", "fig1", "fig3", "fig4"]  # fig2 had nothing to show
    assert out["same_keys"] and out["same_png"]
    made = [line.split() for line in log.read_text().split("\n") if line]
    forked, here = made[:5], made[5:]
    assert sorted(seed for seed, _ in forked) == ["0", "1", "2", "3", "4"]
    assert all(pid != str(out["pid"]) for _, pid in forked)  # each in a worker
    assert all(pid == str(out["pid"]) for _, pid in here)


def _failing() -> None:
    raise ValueError("no data for this figure")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_builders_error_is_raised_to_the_caller(workers: int) -> None:
    builders = {"ok": partial(_curve_figure, 0), "bad": _failing}
    with pytest.raises(ValueError, match="no data for this figure"):
        render_figures(builders, workers=workers)


DEAD_WORKER = """
import os, sys
from functools import partial
sys.path.insert(0, {root!r})
from energysched.figure_files import render_figures
from tests.energysched.test_figure_files import _curve_figure

parent = os.getpid()

def dies_in_a_worker(seed):
    if os.getpid() != parent:
        os._exit(3)  # as if killed
    return _curve_figure(seed)

builders = {{"a": partial(_curve_figure, 0), "b": partial(dies_in_a_worker, 1)}}
made = render_figures(builders, workers=2)
here = render_figures({{"b": partial(_curve_figure, 1)}}, workers=1)
print(sorted(made), made["b"][0] == here["b"][0])
"""


@linux_only
def test_a_dead_workers_figures_are_made_here() -> None:
    root = str(Path(__file__).resolve().parents[2])
    assert fresh_python(DEAD_WORKER.format(root=root)).splitlines()[-1] == "['a', 'b'] True"
