"""Shape tables: the column kernels equal the plain per-cell tables bit for bit, and
the budget of kept tables bounds memory without changing any answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from predictors.base import Observations
from predictors.baselines import PerApplicationPredictor
from predictors.registry import get_predictor
from tests.predictors.helpers import kth_runs, kth_two_types


def _fitted(spec: str, two_types: bool = False):
    if two_types:
        trace, platform, truth = kth_two_types()
        idx = np.arange(len(trace.jobs))
        rng = np.random.default_rng(1)
        runs = []
        for t in platform.node_types:
            nodes = rng.integers(1, t.count + 1, len(idx))
            freqs = np.asarray(t.freqs_ghz)[rng.integers(0, len(t.freqs_ghz), len(idx))]
            runs.append(truth.measure(idx, t, nodes, freqs, None, None, None, rng))
        runs = pd.concat(runs, ignore_index=True)
    else:
        _, platform, runs = kth_runs()
    return get_predictor(spec).fit(Observations(runs=runs, platform=platform)), platform, runs


@pytest.mark.parametrize("spec", ["auto", "power-law", "fluid"])
@pytest.mark.parametrize("two_types", [False, True])
def test_column_tables_equal_the_plain_per_cell_tables(spec: str, two_types: bool) -> None:
    p, platform, runs = _fitted(spec, two_types)
    apps = [a for a in np.unique(runs["application"]).tolist() if p.model_of(a) is not None]
    assert len(apps) >= 5
    compared = 0
    for t in platform.node_types:
        name = str(t.name)
        for freqs in (np.asarray(t.freqs_ghz, dtype=float), np.asarray(t.freqs_ghz[-2:])):
            meta = p._grid_meta(name, np.asarray(freqs, dtype=float))
            for app in apps:
                state = p.state_[app]
                got = p._compute_table(app, state, name, meta)
                plain = PerApplicationPredictor._compute_table(p, app, state, name, meta)
                for a, b in zip(got[:3], plain[:3]):  # (tau, power, reliable)
                    assert a.shape == b.shape and a.dtype == b.dtype
                    # bit for bit (NaN where NaN)
                    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
                compared += 1
    assert compared >= 10


@pytest.mark.parametrize("budget", ["cells", "applications"])
def test_the_table_budgets_drop_the_least_recently_used_applications(budget: str) -> None:
    """Either budget (``table_cells_budget``: cells of tables; ``table_apps_budget``:
    applications, whatever their cells) keeps the most recently asked applications'
    tables, here three, and a dropped one gives the same shape when asked again."""
    p, platform, runs = _fitted("auto")
    t = platform.node_types[0]
    name, freqs = str(t.name), np.asarray(t.freqs_ghz, dtype=float)
    sizes = np.arange(1, t.count + 1, dtype=np.int64)
    apps = [a for a in np.unique(runs["application"]).tolist() if p.model_of(a) is not None]
    assert len(apps) >= 5
    cells = t.count * len(freqs)  # one table per application here
    unbounded = {a: p.grid_shape(a, name, sizes, freqs, 4.0, 3600.0) for a in apps}
    assert len(p._app_tables) == len(apps) and p._cells_total == cells * len(apps)

    q = get_predictor("auto").fit(Observations(runs=runs, platform=platform))
    if budget == "cells":
        q.table_cells_budget = 3 * cells
    else:
        q.table_apps_budget = 3  # the cell budget (16M) is far away
    for a in apps:
        got = q.grid_shape(a, name, sizes, freqs, 4.0, 3600.0)
        want = unbounded[a]
        assert (got is None) == (want is None)
        if got is not None:
            assert got[1] == want[1]
            np.testing.assert_array_equal(got[0].time, want[0].time)
            np.testing.assert_array_equal(got[0].power_w, want[0].power_w)
            np.testing.assert_array_equal(got[0].reliable, want[0].reliable)
        assert q._cells_total <= 3 * cells and len(q._app_tables) <= 3
        assert q._cells_total == sum(q._cells_of.values())
    # the three most recently asked applications are kept, in that order
    assert list(q._app_tables) == apps[-3:]
    assert q._tables_dropped == len(apps) - 3
    # asking again for a dropped one computes the same shape
    again = q.grid_shape(apps[0], name, sizes, freqs, 4.0, 3600.0)
    if again is not None:
        np.testing.assert_array_equal(again[0].time, unbounded[apps[0]][0].time)
    assert list(q._app_tables)[-1] == apps[0] and len(q._app_tables) == 3


def test_a_replay_schedules_the_same_whatever_tables_the_budgets_keep(monkeypatch) -> None:
    """A predictor-driven replay whose predictors keep the tables of two applications
    only (dropping and making them again all along) schedules every job exactly as
    one that keeps them all: the budgets trade CPU time for memory, never answers."""
    import warnings

    from energysched.runner import build_platform, load_trace
    from policies.registry import get_policy
    from simulator.engine import simulate
    from workloads.applications import assign_ground_truth
    from workloads.bundled import builtin_trace_path

    warnings.simplefilter("ignore", RuntimeWarning)
    trace, _ = load_trace(str(builtin_trace_path("kth-sp2")), max_jobs=600)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=0)

    def replay(apps_budget: int):
        with monkeypatch.context() as m:
            m.setattr(PerApplicationPredictor, "table_apps_budget", apps_budget)
            policy = get_policy("easy-slack-size-freq", predictor="adept+fluid")
            result = simulate(trace, platform, policy, None, truth)
        return result, policy.chooser.predictor

    kept, kept_predictor = replay(10**9)
    bounded, bounded_predictor = replay(2)
    assert kept_predictor.node_._tables_dropped == 0
    assert bounded_predictor.node_._tables_dropped > 20
    assert len(bounded_predictor.freq_._app_tables) <= 2
    pd.testing.assert_frame_equal(bounded.jobs, kept.jobs, check_exact=True)
    pd.testing.assert_frame_equal(bounded.power, kept.power, check_exact=True)


def test_a_composite_counts_the_frequency_parts_shapes_in_the_node_parts_budget() -> None:
    """The node part's budget counts its own tables and the frequency part's shapes
    the composite keeps; a combined shape holds no table (it makes it when read)."""
    _, platform, runs = kth_runs()
    t = platform.node_types[0]
    name, freqs = str(t.name), np.asarray(t.freqs_ghz, dtype=float)
    sizes = np.arange(1, t.count + 1, dtype=np.int64)
    obs = Observations(runs=runs, platform=platform)
    apps = np.unique(runs["application"]).tolist()
    free = get_predictor("auto+fluid").fit(obs)
    want = {a: free.grid_shape(a, name, sizes, freqs, 4.0, 3600.0) for a in apps}
    answered = [a for a in apps if want[a] is not None]
    assert len(answered) >= 5
    node_cells = t.count  # the node part's table: Fmax only
    shape_cells = t.count * len(freqs)  # the fluid part's shape
    per_app = node_cells + shape_cells
    assert free.node_._cells_total == per_app * len(answered)

    bounded = get_predictor("auto+fluid").fit(obs)
    bounded.node_.table_cells_budget = 2 * per_app
    bounded.freq_.table_cells_budget = 2 * shape_cells
    for a in apps:
        got = bounded.grid_shape(a, name, sizes, freqs, 4.0, 3600.0)
        assert (got is None) == (want[a] is None)
        if got is not None:
            assert got[1] == want[a][1]
            np.testing.assert_array_equal(got[0].time, want[a][0].time)
            np.testing.assert_array_equal(got[0].reliable, want[a][0].reliable)
        assert bounded.node_._cells_total <= 2 * per_app
        assert bounded.freq_._cells_total <= 2 * shape_cells
    assert bounded.node_._tables_dropped >= len(answered) - 2


def test_node_tables_kept_over_refits_count_only_the_frequency_shapes_they_hold() -> None:
    """When the node part keeps its model (and tables) over a refit and the frequency
    part refits, the composite replaces its kept answer: the node part's count for
    the application stays its own table plus the one frequency shape it holds."""
    _, platform, truth = kth_two_types()
    t = platform.node_types[0]
    name, freqs = str(t.name), np.asarray(t.freqs_ghz, dtype=float)
    sizes = np.arange(1, t.count + 1, dtype=np.int64)
    rng = np.random.default_rng(0)
    top = np.array([max(t.freqs_ghz)])
    run = truth.measure(np.array([0]), t, np.array([4]), top, None, None, None, rng)
    run["instructions"], run["time_s"] = 4000.0, 1000.0  # n * tau = 1: the same Amdahl a
    app = int(run["application"].iloc[0])
    p = get_predictor("adept+fluid").fit(
        Observations(runs=pd.concat([run] * 3, ignore_index=True), platform=platform)
    )
    node_cells = t.count  # the node part's table: Fmax only
    shape_cells = t.count * len(freqs)  # the fluid part's shape
    first = p.grid_shape(app, name, sizes, freqs, 4.0, 3600.0)[0]
    model = p.node_.model_of(app)
    for k in range(4):
        again = run.copy()
        again["power_w"] = run["power_w"] * (1.0 + 0.01 * (k + 1))  # the fluid part refits
        p.update(again)
        got = p.grid_shape(app, name, sizes, freqs, 4.0, 3600.0)[0]
        assert p.node_.model_of(app) is model and got is not first
        assert p.node_._cells_of[app] == node_cells + shape_cells
    assert p.node_._cells_total == node_cells + shape_cells
