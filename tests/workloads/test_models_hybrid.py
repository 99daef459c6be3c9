"""Hybrid MPI+OpenMP queueing model, M/G/1 waiting and the Pareto filter."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.models import (
    HybridApp,
    HybridPower,
    hybrid_evaluate,
    hybrid_message_rate,
    hybrid_pareto_configs,
    hybrid_power_figures,
    mg1_waiting_time,
    pareto_front,
)

APP = HybridApp(
    work_cycles=8e9,
    stall_cycles=8e9,
    mem_stall_cycles=4e9,
    kappa=0.1,
    messages=100.0,
    message_bytes=1e6,
    cpu_utilisation=0.8,
)
POWER = HybridPower(core_active_w=10.0, core_stall_w=6.0, mem_w=20.0, net_w=5.0, sys_idle_w=80.0)


def test_hand_computed_example():
    # n = 2, c = 4, f = Fmax = 2 GHz, B = 1 GB/s, 4 ports, background 120 msg/s
    # T_cpu = (8e9 + 8e9) / (2 * 4 * 2e9) = 1.0 s
    # m = 4e9 * (1 + 0.1 * 3) * 1 = 5.2e9 -> T_mem = 5.2e9 / (2 * 2e9) = 1.3 s
    # Y = 1e6 / 1e9 = 1e-3 s; eta Y = 0.1 s; (1 - U) T_cpu = 0.2 s -> T_s = 0.2 s
    # T0 = 1 + 0.2 + 1.3 = 2.5 s; own rate 100 / 2.5 = 40 msg/s per node
    # lambda = (2 * 40 + 120) / 4 = 50 msg/s; rho = 0.05
    # W = 50 * 1e-6 / (2 * 0.95) = 2.6315789e-5 s; T_w = 100 W = 2.6315789e-3 s
    # T = 2.5 + 0.0026315789 = 2.5026315789 s
    r = hybrid_evaluate(2, 4, 2.0, 2.0, APP, POWER, 1.0, switch_ports=4, background_msg_rate=120.0)
    w = 50 * 1e-6 / (2 * 0.95)
    t = 2.5 + 100 * w
    assert float(r.t_cpu_s) == pytest.approx(1.0)
    assert float(r.t_mem_s) == pytest.approx(1.3)
    assert float(r.t_net_service_s) == pytest.approx(0.2)
    assert float(r.msg_rate_per_node) == pytest.approx(40.0)
    assert float(r.rho) == pytest.approx(0.05)
    assert float(r.t_net_wait_s) == pytest.approx(100 * w)
    assert float(r.runtime_s) == pytest.approx(t)
    # energy per node: E_cpu = (10*1 + 6*1.3)*4 = 71.2; E_mem = 20*1.3 = 26;
    # E_net = 5*(T_w + 0.2); E_idle = 80*T; E = 2 * sum
    e_node = 71.2 + 26.0 + 5 * (100 * w + 0.2) + 80 * t
    assert float(r.e_cpu_j) == pytest.approx(71.2)
    assert float(r.e_mem_j) == pytest.approx(26.0)
    assert float(r.energy_j) == pytest.approx(2 * e_node)
    assert float(r.power_w) == pytest.approx(e_node / t)
    assert float(r.ucr) == pytest.approx(1.0 / t)
    assert not bool(r.saturated)


def test_frequency_dependence():
    # at half frequency: T_cpu doubles, T_mem unchanged (memory time is rigid), core power x^2
    full = hybrid_evaluate(2, 4, 2.0, 2.0, APP, POWER, 1.0)
    half = hybrid_evaluate(2, 4, 1.0, 2.0, APP, POWER, 1.0)
    assert float(half.t_cpu_s) == pytest.approx(2 * float(full.t_cpu_s))
    assert float(half.t_mem_s) == pytest.approx(float(full.t_mem_s))
    # E_cpu at x = 0.5: (10 * 0.25 * 2 + 6 * 0.25 * 1.3) * 4 = (5 + 1.95) * 4 = 27.8
    assert float(half.e_cpu_j) == pytest.approx(27.8)


def test_mg1_grows_without_bound_and_never_divides_by_zero():
    rho = 1.0 - np.logspace(-1, -12, 12)
    with np.errstate(all="raise"):
        w = mg1_waiting_time(rho, 1.0, 1.0)  # E[Y] = E[Y^2] = 1: W = rho / (2 (1 - rho))
        np.testing.assert_allclose(w, rho / (2 * (1 - rho)), rtol=1e-6)
        assert np.all(np.diff(w) > 0)
        assert w[-1] > 1e11
        beyond = mg1_waiting_time(np.array([1.0, 1.5, 1e9]), 1.0, 1.0)
    assert np.all(np.isinf(beyond))


def test_saturation_is_capped_and_flagged():
    # 4 ports, Y = 1 ms, own 80 msg/s: rho = (80 + bg) / 4 * 1e-3; the cap W = 50 Y is reached
    # at rho / (2 (1 - rho)) = 50, i.e. rho = 100/101 (bg ~ 3880); rho >= 1 from bg = 3920
    bgs = np.array([0.0, 1e3, 3.8e3, 3.95e3, 4e3, 1e5, 1e12])
    with np.errstate(all="raise"):
        r = hybrid_evaluate(
            2,
            4,
            2.0,
            2.0,
            APP,
            POWER,
            1.0,
            switch_ports=4,
            background_msg_rate=bgs,
            max_wait_factor=50.0,
        )
    assert np.all(np.isfinite(r.runtime_s)) and np.all(np.isfinite(r.energy_j))
    assert np.all(np.diff(r.runtime_s) >= 0)  # more traffic never speeds a job up
    cap = 100 * 50.0 * 1e-3  # eta * factor * Y = 5 s
    assert r.t_net_wait_s.max() == pytest.approx(cap)
    assert list(r.saturated) == [False, False, False, True, True, True, True]
    assert np.all(r.rho[-3:] >= 1.0)


def test_own_traffic_alone_is_stable():
    # rho of a job alone is at most eta Y / T0 < 1 for any n
    n = np.array([1, 2, 4, 16, 64, 256])
    r = hybrid_evaluate(n, 4, 2.0, 2.0, APP, POWER, 1.0, switch_ports=16)
    assert np.all(r.rho < 1.0) and not r.saturated.any()
    rate = hybrid_message_rate(n, 4, 2.0, 2.0, APP, 1.0)
    np.testing.assert_allclose(rate, r.msg_rate_per_node)


def test_power_figures_bound_node_power():
    hp = hybrid_power_figures(90.0, 140.0, 16)
    nodes = np.array([1, 4, 16])
    r = hybrid_evaluate(nodes, 16, 2.4, 2.4, APP, hp, 12.5)
    assert np.all(r.power_w >= 90.0) and np.all(r.power_w <= 90.0 + 140.0)


def _dominated_brute(t, e):
    keep = []
    for i in range(len(t)):
        dominated = any(
            (t[j] <= t[i] and e[j] <= e[i] and (t[j] < t[i] or e[j] < e[i])) for j in range(len(t))
        )
        if not dominated:
            keep.append(i)
    return keep


def test_pareto_front_by_hand_and_against_brute_force():
    # points (t, e): 0:(1,5) 1:(2,4) 2:(3,1) 3:(2,4) duplicate 4:(1,6) 5:(4,1) 6:(2.5,4)
    t = [1, 2, 3, 2, 1, 4, 2.5]
    e = [5, 4, 1, 4, 6, 1, 4]
    assert list(pareto_front(t, e)) == [0, 1, 2]
    rng = np.random.default_rng(1)
    for _ in range(20):
        k = int(rng.integers(1, 60))
        t = rng.integers(0, 15, k).astype(float)
        e = rng.integers(0, 15, k).astype(float)
        got = pareto_front(t, e)
        brute = _dominated_brute(t, e)
        # same set of (t, e) points (duplicates keep one index)
        assert sorted({(t[i], e[i]) for i in got}) == sorted({(t[i], e[i]) for i in brute})
        assert np.all(np.diff(t[got]) > 0) and np.all(np.diff(e[got]) < 0)
    assert pareto_front([np.nan, 1.0], [0.0, 2.0]).tolist() == [1]
    assert pareto_front([], []).size == 0


def test_hybrid_pareto_configs_cover_the_cloud():
    app = HybridApp(
        work_cycles=2.4e9 * 16 * 600,
        stall_cycles=2.4e9 * 16 * 100,
        mem_stall_cycles=2.4e9 * 200,
        kappa=0.2,
        messages=2e4,
        message_bytes=65536.0,
        cpu_utilisation=0.85,
    )
    hp = hybrid_power_figures(92.0, 137.0, 16)
    nodes, cores, freqs = [1, 2, 4, 8, 16, 32], [1, 2, 4, 8, 16], [1.2, 1.8, 2.4]
    front = hybrid_pareto_configs(app, hp, nodes, cores, freqs, 2.4, 12.5, switch_ports=16)
    assert len(front) >= 3
    assert np.all(np.diff(front["runtime_s"]) > 0) and np.all(np.diff(front["energy_j"]) < 0)
    # every configuration of the cloud is weakly dominated by a front point
    nn, cc, ff = (a.ravel() for a in np.meshgrid(nodes, cores, freqs, indexing="ij"))
    r = hybrid_evaluate(nn, cc, ff, 2.4, app, hp, 12.5, switch_ports=16)
    for t, e in zip(r.runtime_s, r.energy_j, strict=True):
        assert np.any(
            (front["runtime_s"] <= t * (1 + 1e-12)) & (front["energy_j"] <= e * (1 + 1e-12))
        )
    # MODELS 1.3's known shape: the fastest configuration is not the most frugal one
    assert front["nodes"].iloc[-1] < front["nodes"].iloc[0] or front["freq_ghz"].iloc[-1] < 2.4


# --------------------------------------------------------------------------- truth check (issue 16)
# A memory-bound program without network traffic, on a node of 16 cores
# whose Fluid constants are Pstatic = 90 W and Pdyn = 140 W at Fmax = 2 GHz.
MEM_APP = HybridApp(
    work_cycles=12e9,
    stall_cycles=4e9,
    mem_stall_cycles=2e9,
    kappa=0.5,
    messages=0.0,
    message_bytes=1e6,
    cpu_utilisation=1.0,
)


def test_power_figures_of_a_16_core_node_by_hand():
    p = hybrid_power_figures(90.0, 140.0, 16)
    # per core: 0.75 * 140 / 16 = 6.5625 W computing, 0.45 * 140 / 16 = 3.9375 W stalled
    assert float(p.core_active_w) == pytest.approx(6.5625)
    assert float(p.core_stall_w) == pytest.approx(3.9375)
    assert float(p.mem_w) == pytest.approx(21.0)  # 0.15 * 140
    assert float(p.net_w) == pytest.approx(14.0)  # 0.10 * 140
    assert float(p.sys_idle_w) == pytest.approx(90.0)


def test_node_power_with_fewer_cores_than_the_node_has_by_hand():
    """c = 4 of 16 cores: the static power (with the 12 idle cores in it) is
    charged for the whole runtime, only the 4 busy cores add core power."""
    p = hybrid_power_figures(90.0, 140.0, 16)
    r = hybrid_evaluate(1, 4, 2.0, 2.0, MEM_APP, p, 12.5)
    # T_cpu = 16e9 / (1 * 4 * 2e9) = 2 s; m = 2e9 (1 + 0.5 * 3) = 5e9 -> T_mem = 2.5 s
    # no messages, U = 1: T_s = max(0 * 2, 0) = 0; T = 4.5 s
    assert float(r.t_cpu_s) == pytest.approx(2.0)
    assert float(r.t_mem_s) == pytest.approx(2.5)
    assert float(r.runtime_s) == pytest.approx(4.5)
    # E_cpu = (6.5625 * 2 + 3.9375 * 2.5) * 4 = 91.875; E_mem = 21 * 2.5 = 52.5;
    # E_idle = 90 * 4.5 = 405 (static power of the whole node, idle cores included)
    assert float(r.e_cpu_j) == pytest.approx(91.875)
    assert float(r.e_mem_j) == pytest.approx(52.5)
    assert float(r.e_idle_j) == pytest.approx(405.0)
    assert float(r.energy_j) == pytest.approx(549.375)
    assert float(r.power_w) == pytest.approx(549.375 / 4.5)  # 122.08 W per node
    # never below the static power, never above Pstatic + Pdyn
    assert 90.0 < float(r.power_w) < 230.0


def test_memory_contention_makes_fewer_cores_faster_and_more_frugal_by_hand():
    """The same program on all 16 cores: m = 2e9 (1 + 0.5 * 15) = 17e9 stall
    cycles on one memory controller, T_mem = 8.5 s, T = 0.5 + 8.5 = 9 s."""
    p = hybrid_power_figures(90.0, 140.0, 16)
    full = hybrid_evaluate(1, 16, 2.0, 2.0, MEM_APP, p, 12.5)
    four = hybrid_evaluate(1, 4, 2.0, 2.0, MEM_APP, p, 12.5)
    assert float(full.t_mem_s) == pytest.approx(8.5)
    assert float(full.runtime_s) == pytest.approx(9.0)
    # E = (6.5625 * 0.5 + 3.9375 * 8.5) * 16 + 21 * 8.5 + 90 * 9 = 588 + 178.5 + 810
    assert float(full.energy_j) == pytest.approx(1576.5)
    assert float(four.runtime_s) < float(full.runtime_s)
    assert float(four.energy_j) < float(full.energy_j)
    # memory contention is per node: more nodes split the stall cycles, c sets the contention
    two_nodes = hybrid_evaluate(2, 16, 2.0, 2.0, MEM_APP, p, 12.5)
    assert float(two_nodes.t_mem_s) == pytest.approx(8.5 / 2)


def test_hybrid_mix_has_memory_bound_programs_that_prefer_fewer_cores():
    from simulator.platform import load_platform
    from workloads import Trace, assign_ground_truth

    platform = load_platform(
        __import__("pathlib").Path(__file__).parents[2] / "simulator/data/hybrid-128x16.toml"
    )
    rng = np.random.default_rng(3)
    jobs = __import__("pandas").DataFrame(
        {
            "job_id": np.arange(400),
            "submit_s": np.zeros(400),
            "runtime_s": rng.uniform(100, 5000, 400),
            "procs": rng.choice([16, 32, 64], 400),
            "time_req_s": np.full(400, 1e5),
            "user_id": np.arange(400),
        }
    )
    truth = assign_ground_truth(
        Trace(jobs=jobs), platform, preset="hybrid-mix", seed=1, grouping="user-size"
    )
    ntype = platform.node_types[0]
    hyb = np.flatnonzero(truth.hybrid_[truth.application])
    assert len(hyb) > 20
    n = truth.recorded_nodes[hyb]
    fmax = ntype.fmax_ghz
    t16, p16 = truth.evaluate(hyb, ntype, n, fmax, 16)
    best_t = np.full(len(hyb), np.inf)
    best_e = np.full(len(hyb), np.inf)
    for c in range(1, 16):
        t, p = truth.evaluate(hyb, ntype, n, fmax, c)
        best_t = np.minimum(best_t, t)
        best_e = np.minimum(best_e, t * p * n)
    faster = best_t < t16 * 0.999
    frugal = best_e < t16 * p16 * n * 0.999
    # some programs run faster on fewer cores, more are more frugal there, not all
    assert 0.05 < faster.mean() < 0.6
    assert faster.mean() <= frugal.mean() < 0.9


def test_scalar_form_equals_the_array_form():
    from workloads.models.hybrid import hybrid_evaluate_scalar

    rng = np.random.default_rng(0)
    power = hybrid_power_figures(90.0, 140.0, 16)
    for _ in range(300):
        app = HybridApp(
            work_cycles=rng.uniform(1e9, 1e12),
            stall_cycles=rng.uniform(0, 1e11),
            mem_stall_cycles=rng.uniform(0, 1e12),
            kappa=rng.uniform(0, 1),
            messages=rng.choice([0.0, rng.uniform(1, 1e5)]),
            message_bytes=rng.uniform(1e3, 1e7),
            cpu_utilisation=rng.uniform(0.5, 1),
        )
        n, c, f = int(rng.integers(1, 64)), int(rng.integers(1, 17)), rng.choice([1.2, 1.8, 2.4])
        ports = rng.choice([None, 16])
        bg = rng.choice([0.0, rng.uniform(0, 1e6)])
        ref = hybrid_evaluate(
            n, c, f, 2.4, app, power, 12.5, switch_ports=ports, background_msg_rate=bg
        )
        got = hybrid_evaluate_scalar(
            n,
            c,
            f,
            2.4,
            tuple(float(v) for v in vars(app).values()),
            (*(float(v) for v in list(vars(power).values())[:5]), power.p_coef),
            12.5,
            ports,
            bg,
        )
        want = (ref.runtime_s, ref.power_w, ref.saturated, ref.rho, ref.msg_rate_per_node)
        for g, w in zip(got, want):
            assert g == pytest.approx(float(w), rel=1e-12)


def test_truth_single_row_path_equals_the_batch_path():
    import pandas as pd

    from simulator.platform import load_platform
    from workloads import Trace, assign_ground_truth, get_preset

    platform = load_platform(
        __import__("pathlib").Path(__file__).parents[2] / "simulator/data/hybrid-128x16.toml"
    )
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(30),
            "submit_s": np.zeros(30),
            "runtime_s": np.linspace(100, 5000, 30),
            "procs": np.tile([16, 32, 64], 10),
            "time_req_s": np.full(30, 1e4),
            "user_id": np.arange(30),
        }
    )
    truth = assign_ground_truth(
        Trace(jobs=jobs), platform, preset=get_preset("hybrid-mix").with_options(hybrid_share=1.0)
    )
    nt = platform.node_types[0]
    idx = np.arange(30)
    n, f, c, bg = (
        np.tile([1, 3], 15),
        np.tile([1.2, 2.4, 1.8], 10),
        np.tile([4, 16, 7], 10),
        idx * 50.0,
    )
    batch = truth.evaluate_detail(idx, nt, n, f, c, background_msg_rate=bg)
    rates = truth.message_rate(idx, nt, n, f, c)
    for i in idx:
        one = truth.evaluate_detail([i], nt, [n[i]], [f[i]], [c[i]], background_msg_rate=[bg[i]])
        assert one.runtime_s[0] == pytest.approx(batch.runtime_s[i], rel=1e-12)
        assert one.power_w[0] == pytest.approx(batch.power_w[i], rel=1e-12)
        assert one.saturated[0] == batch.saturated[i]
        assert truth.message_rate([i], nt, [n[i]], [f[i]], [c[i]])[0] == pytest.approx(
            rates[i], rel=1e-12
        )
