"""The DVFS backtest (predictors.validation_dvfs): hand-computed errors and the issue-14
targets on measured GPU curves (../shared/data/dvfs, when present)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from energysched.errors import ConfigError
from predictors.dvfs import calibration_clock_indices, exploration_clock_index
from predictors.validation_dvfs import ROW_COLUMNS, backtest_dvfs, summarize_dvfs
from tests.shared_data import shared_path

RTX8000 = shared_path("dvfs", "rtx8000_dvfs.csv")


def _curve(freqs, times, powers, curve_id="k"):
    return pd.DataFrame(
        {
            "curve_id": curve_id,
            "application": curve_id,
            "device": "gpu",
            "freq_mhz": freqs,
            "time_s": times,
            "power_w": powers,
            "source_id": "hand",
        }
    )


def test_calibration_clocks_rule():
    assert calibration_clock_indices(10, 2) == [0, 9]
    assert calibration_clock_indices(10, 3) == [0, 5, 9]  # floor(9/2 + 1/2) = 5
    assert calibration_clock_indices(5, 3) == [0, 2, 4]
    assert calibration_clock_indices(10, 4) == [0, 3, 6, 9]
    assert calibration_clock_indices(3, 5) == [0, 1, 2]
    assert [exploration_clock_index(10, 2, k) for k in range(3)] == [0, 5, 5]
    assert exploration_clock_index(5, 1, 0) == 0
    with pytest.raises(ConfigError, match="at least 2"):
        calibration_clock_indices(10, 1)


def test_backtest_on_a_hand_built_curve():
    # calibrated on 500 and 2000 MHz (n_clocks = 2): alpha = (40/10 - 1) / (4 - 1) = 1;
    # power anchored: Pdyn = (200 - 50) / (1 - 0.25^2) = 160, Pstatic = 40
    # at 1000 MHz: T = 10 * 2 = 20 (true 20: 0 %), P = 40 + 160 / 4 = 80 (true 80: 0 %)
    # at 1500 MHz: T = 10 * 4/3 (true 12: +11.11 %), P = 40 + 160 * 9/16 = 130 (true 120: +8.33 %)
    # energy measured: 2000, 1600, 1440, 2000 -> optimum 1500 MHz; predicted: 2000, 1600,
    # 1733.3, 2000 -> picks 1000 MHz, which loses 1600 / 1440 - 1 = 11.11 %
    curve = _curve([500, 1000, 1500, 2000], [40.0, 20.0, 12.0, 10.0], [50.0, 80.0, 120.0, 200.0])
    rows = backtest_dvfs(curve, ["fluid", "inverse-clock"], 2)
    assert list(rows.columns) == list(ROW_COLUMNS)
    fluid = rows[rows.predictor == "fluid"].set_index("freq_mhz")
    assert list(fluid.index) == [1000.0, 1500.0]
    assert fluid.loc[1000.0, "time_error_pct"] == pytest.approx(0.0, abs=1e-9)
    assert fluid.loc[1500.0, "time_pred_s"] == pytest.approx(40 / 3)
    assert fluid.loc[1500.0, "time_error_pct"] == pytest.approx(100 * (40 / 36 - 1))
    assert fluid.loc[1500.0, "power_error_pct"] == pytest.approx(100 * (130 / 120 - 1))
    assert fluid.loc[1000.0, "power_pred_w"] == pytest.approx(80.0)
    assert (fluid.picked_freq_mhz == 1000.0).all() and (fluid.optimal_freq_mhz == 1500.0).all()
    assert fluid.energy_loss_pct.iloc[0] == pytest.approx(100 * (1600 / 1440 - 1))
    summary = summarize_dvfs(rows).set_index("predictor")
    assert summary.loc["fluid", "time_error_median_pct"] == pytest.approx(100 * (40 / 36 - 1) / 2)
    assert summary.loc["fluid", "energy_loss_mean_pct"] == pytest.approx(100 * (1600 / 1440 - 1))
    assert summary.loc["fluid", "curves"] == 1 and summary.loc["fluid", "points"] == 2
    # alpha = 1 here: the baseline gives the same numbers
    assert summary.loc["inverse-clock", "time_error_mean_pct"] == pytest.approx(
        summary.loc["fluid", "time_error_mean_pct"]
    )


def test_backtest_inverse_clock_against_a_memory_bound_curve():
    # T = 10 (0.5 + 0.5 * 2000 / f): fluid recovers alpha = 0.5 exactly from 2 clocks;
    # T ~ 1/f predicts 10 * 2000 / f: at 1000 MHz 20 against 15 (+33.3 %)
    f = np.array([500.0, 1000.0, 2000.0])
    t = 10 * (0.5 + 0.5 * 2000 / f)
    rows = backtest_dvfs(_curve(f, t, [50.0, 80.0, 200.0]), ["fluid", "inverse-clock"], 2)
    err = rows.set_index("predictor")["time_error_pct"]
    assert err["fluid"] == pytest.approx(0.0, abs=1e-9)
    assert err["inverse-clock"] == pytest.approx(100 * (20 / 15 - 1))


def test_backtest_input_errors():
    curve = _curve([500, 1000, 2000], [4.0, 2.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ConfigError, match="known: "):
        backtest_dvfs(curve, ["adept"], 2)
    with pytest.raises(ConfigError, match="at least 2"):
        backtest_dvfs(curve, ["fluid"], 1)
    with pytest.raises(ConfigError, match="lack columns"):
        backtest_dvfs(curve.drop(columns="power_w"), ["fluid"], 2)
    # as many calibration clocks as measured ones: nothing to predict
    assert backtest_dvfs(curve, ["fluid"], 3).empty
    assert summarize_dvfs(backtest_dvfs(curve, ["fluid"], 3)).empty
    # composites name their frequency part
    assert set(backtest_dvfs(curve, ["adept+fluid"], 2).predictor) == {"adept+fluid"}


@pytest.mark.skipif(RTX8000 is None, reason="../shared/data/dvfs/rtx8000_dvfs.csv not available")
@pytest.mark.parametrize("n_clocks", [2, 3])
def test_issue_14_targets_on_rtx8000(n_clocks):
    raw = pd.read_csv(RTX8000)
    curves = pd.DataFrame(
        {
            "curve_id": "rtx8000/" + raw["benchmark"],
            "application": raw["benchmark"],
            "device": "Quadro RTX 8000",
            "freq_mhz": raw["core_mhz"],
            "time_s": raw["time_s"],
            "power_w": raw["power_w"],
            "source_id": "wang-chu-icpads2018",
        }
    )
    summary = summarize_dvfs(backtest_dvfs(curves, ["fluid", "inverse-clock"], n_clocks))
    s = summary.set_index("predictor")
    assert s.loc["fluid", "curves"] == 20
    # the fluid family's time error is no larger than T ~ 1/f anchored at Fmax
    assert s.loc["fluid", "time_error_mean_pct"] <= s.loc["inverse-clock", "time_error_mean_pct"]
    assert (
        s.loc["fluid", "time_error_median_pct"] <= s.loc["inverse-clock", "time_error_median_pct"]
    )
    # and the picked clock loses at most 5 % energy on average
    assert s.loc["fluid", "energy_loss_mean_pct"] <= 5.0
