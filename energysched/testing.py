"""Conformance checks for plug-in authors, and a small ground truth for tests.

The policy checks run the engine, so they live here, above the simulator
(policies never import the simulator). :func:`check_predictor` is the
predictors' own check (:mod:`predictors.testing`), repeated here so that one
import serves both kinds of plug-in.

Use in your own tests::

    from energysched.testing import check_policy
    from mypackage import MyPolicy

    def test_contract():
        check_policy(MyPolicy)          # a class, a factory, an instance or a registry name

:func:`check_policy` runs the policy through the engine on small built-in
scenarios (:func:`scenarios`) and raises :class:`AssertionError` naming every
failed check (``check_policy[<scenario>:<check>]: ...``). Checks:

``runs``            the replay finishes; a :class:`~energysched.errors.PolicyError`
                    (a decision beyond a limit) is reported with its message.
``ends_once``       every job ends exactly once (completed, killed or rejected),
                    started jobs start after their submission and end after
                    their start.
``not_stuck``       no job is rejected for being "never started by the
                    policy" (only jobs larger than the platform may be rejected).
``capacity``        at no instant do running jobs use more nodes than a node
                    type has.
``power_cap``       the run's power cap is never exceeded (only for policies
                    whose tags declare ``honours_power_cap``, as every
                    :class:`~policies.backfilling.QueuePolicy` does).
``determinism``     two fresh instances give identical jobs tables.
``chooser_hooks``   for policies with a ``chooser``: the same jobs table when
                    the chooser's optional speed-ups are ignored
                    (``decision_epoch = None``, ``decisions`` and
                    ``changed_decisions`` answering ``None``), i.e. they only
                    save work.
``observe_rows``    for policies whose tags declare ``observe_rows``: the same jobs
                    table when ``observe`` is handed DataFrames instead of
                    :class:`~workloads.runs.RunRows` / ``RunBatch`` (the tag
                    only saves work).
``params``          ``params()`` is a JSON-serialisable dict and ``name`` a non-empty str.

Scenarios: ``basic`` (no power management), ``power-managed`` (idle nodes
switched off after 60 s, one kept on), ``capped`` (a platform power cap at
75 % of the peak; every job requests at most half the nodes, so its rigid
configuration fits on an idle platform), ``long-queue`` (400 jobs arriving
about a second apart: the queue grows past the 256 jobs from which EASY
backfilling reads it through an index). All use :class:`SimpleTruth`, so
learning policies get measurements. A policy that sets an engine setting itself
(``run_config_overrides``: the ``-off`` policies' idle timeout) replays every
scenario with its own value of that setting.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from energysched.errors import PolicyError
from policies.base import get_policy_tags
from predictors.testing import check_predictor
from workloads.models.downey import downey_speedup
from workloads.models.fluid import fluid_power, fluid_runtime_factor

__all__ = [
    "Scenario",
    "SimpleTruth",
    "check_policy",
    "check_predictor",
    "scenario_trace",
    "scenarios",
]


class SimpleTruth:
    """A small Downey x Fluid ground truth (docs/background/models.md) for hand-built traces.

    Per job ``i``: one-node work ``L[i]`` (s at ``Fmax``), Downey ``A[i]``,
    ``sigma[i]``, Fluid ``alpha[i]``, and per-node power
    ``pstatic[i] + pdyn[i] * x**2`` (W) with ``x = f / Fmax``. Runtime:
    ``L / S(n) * ((1 - alpha) + alpha / x)``. Implements the
    :class:`workloads.truth.GroundTruth` protocol; :meth:`measure` adds
    relative Gaussian noise ``noise`` (0 allowed) and fills the runs-table
    columns (counters are rough functions of ``alpha``).
    """

    def __init__(
        self,
        application: Any,
        work_s: Any,
        A: Any,
        sigma: Any,
        alpha: Any,
        pstatic_w: Any = 110.0,
        pdyn_w: Any = 119.0,
        noise: float = 0.0,
    ) -> None:
        self.application = np.asarray(application, dtype=np.int64)
        n = len(self.application)

        def arr(v: Any) -> np.ndarray:
            return np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()

        self.work_s = arr(work_s)
        self.A = arr(A)
        self.sigma = arr(sigma)
        self.alpha = arr(alpha)
        self.pstatic_w = arr(pstatic_w)
        self.pdyn_w = arr(pdyn_w)
        self.noise = float(noise)

    def evaluate(
        self,
        job_index: np.ndarray,
        node_type: Any,
        nodes: np.ndarray,
        freq_ghz: np.ndarray,
        cores: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """True ``(runtime_s, power_w per node)``."""
        i = np.asarray(job_index, dtype=np.int64)
        x = np.asarray(freq_ghz, dtype=float) / float(node_type.fmax_ghz)
        s = downey_speedup(np.asarray(nodes, dtype=float), self.A[i], self.sigma[i])
        runtime = self.work_s[i] / s * fluid_runtime_factor(x, self.alpha[i])
        power = fluid_power(x, self.pstatic_w[i], self.pdyn_w[i])
        return runtime, power

    def measure(
        self,
        job_index: np.ndarray,
        node_type: Any,
        nodes: np.ndarray,
        freq_ghz: np.ndarray,
        cores: np.ndarray | None,
        runtime_s: np.ndarray,
        power_w: np.ndarray,
        rng: np.random.Generator,
    ) -> pd.DataFrame:
        """Noisy measurements of finished runs (a runs table)."""
        i = np.asarray(job_index, dtype=np.int64)
        k = len(i)
        nodes = np.asarray(nodes, dtype=np.int64)
        e1 = 1 + self.noise * rng.standard_normal(k) if self.noise else np.ones(k)
        e2 = 1 + self.noise * rng.standard_normal(k) if self.noise else np.ones(k)
        t = np.asarray(runtime_s, dtype=float) * e1
        p = np.asarray(power_w, dtype=float) * e2
        a = self.alpha[i]
        return pd.DataFrame(
            {
                "application": self.application[i],
                "node_type": np.full(k, node_type.name, dtype=object),
                "nodes": nodes,
                "cores": np.full(k, node_type.cores_per_node, dtype=np.int64)
                if cores is None
                else np.asarray(cores, dtype=np.int64),
                "freq_ghz": np.asarray(freq_ghz, dtype=float),
                "time_s": t,
                "power_w": p,
                "energy_j": t * p * nodes,
                "ctr_instructions_per_s": 1e9 * a * np.asarray(freq_ghz, dtype=float),
                "ctr_llc_miss_ratio": 0.5 * (1 - a),
                "ctr_mem_bandwidth_gbs": 20.0 * (1 - a),
                "ctr_stall_ratio": 0.6 * (1 - a),
                "rapl_power_w": 0.6 * p,
                "instructions": self.work_s[i] * 1e9,
            }
        )


def scenario_trace(
    n_jobs: int = 60,
    nodes: int = 16,
    seed: int = 7,
    max_procs: int | None = None,
    mean_interarrival_s: float = 300.0,
) -> tuple[pd.DataFrame, SimpleTruth]:
    """A small synthetic trace (jobs table) for ``nodes`` single-core nodes and its truth.

    Four applications with different speedup and DVFS behaviour; requested
    times over-estimate the runtimes by 1.2 to 3x; bursty arrivals (exponential
    gaps of ``mean_interarrival_s`` on average) so that jobs queue.
    Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng(seed)
    app = rng.integers(0, 4, n_jobs)
    A = np.array([2.0, 8.0, 32.0, 4.0])[app]
    sigma = np.array([0.5, 1.0, 0.2, 2.0])[app]
    alpha = np.array([0.2, 0.9, 0.6, 0.05])[app]
    procs = np.minimum(rng.choice([1, 2, 4, 8, 16], n_jobs), min(nodes, max_procs or nodes))
    runtime = np.round(rng.uniform(100, 3000, n_jobs))
    submit = np.cumsum(rng.exponential(mean_interarrival_s, n_jobs)).round()
    req = np.round(runtime * rng.uniform(1.2, 3.0, n_jobs))
    # work calibrated so the recorded runtime is reproduced at the recorded size and Fmax
    L = runtime * downey_speedup(procs.astype(float), A, sigma)
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(1, n_jobs + 1),
            "submit_s": submit,
            "runtime_s": runtime,
            "procs": procs,
            "time_req_s": req,
            "user_id": app + 1,
        }
    )
    return jobs, SimpleTruth(app, L, A, sigma, alpha)


@dataclass
class Scenario:
    """One replay of :func:`check_policy`."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    n_jobs: int = 60
    nodes: int = 16
    max_procs: int = 16
    mean_interarrival_s: float = 300.0


def scenarios() -> list[Scenario]:
    """The built-in scenarios (see the module docstring)."""
    from simulator.platform import homogeneous_platform

    peak = homogeneous_platform(16).node_types[0].max_power_w * 16
    return [
        Scenario("basic"),
        Scenario("power-managed", {"idle_timeout_s": 60.0, "reserve_nodes": 1}),
        # every rigid job (<= 8 of 16 nodes) fits under the cap on an idle machine
        Scenario("capped", {"power_cap_w": 0.75 * peak}, max_procs=8),
        Scenario("long-queue", n_jobs=400, mean_interarrival_s=1.0),
    ]


def _instantiate(policy_or_factory: Any, params: dict[str, Any]) -> Callable[[], Any]:
    from policies.base import Policy
    from policies.registry import get_policy

    if isinstance(policy_or_factory, Policy):
        template = copy.deepcopy(policy_or_factory)
        return lambda: copy.deepcopy(template)
    if isinstance(policy_or_factory, str):
        return lambda: get_policy(policy_or_factory, **params)
    return lambda: policy_or_factory(**params)


def _capacity_ok(jobs: pd.DataFrame, counts: dict[str, int]) -> str | None:
    ran = jobs["status"].isin(["completed", "killed"]).to_numpy()
    for name, count in counts.items():
        m = ran & (jobs["node_type"].to_numpy() == name)
        if not m.any():
            continue
        starts = jobs["start_s"].to_numpy()[m]
        ends = jobs["end_s"].to_numpy()[m]
        nodes = jobs["nodes"].to_numpy()[m]
        t = np.concatenate([starts, ends])
        d = np.concatenate([nodes, -nodes])
        order = np.lexsort((d, t))  # ends (negative) before starts at equal times
        used = np.cumsum(d[order])
        if used.max() > count:
            k = int(np.argmax(used))
            return (
                f"{int(used.max())} nodes of type {name!r} busy at t={t[order][k]:g}s (> {count})"
            )
    return None


def _without_chooser_hooks(policy: Any) -> Any:
    """``policy`` with its chooser's optional speed-ups switched off after setup
    (``None`` when it has no chooser)."""
    chooser = getattr(policy, "chooser", None)
    if chooser is None or not hasattr(policy, "setup"):
        return None
    setup = policy.setup

    def plain_setup(*args: Any, **kwargs: Any) -> None:
        setup(*args, **kwargs)
        chooser.decision_epoch = None
        chooser.decisions = lambda jobs: None
        chooser.changed_decisions = lambda: None

    policy.setup = plain_setup
    return policy


def _with_frame_hand_over(policy: Any) -> Any:
    """``policy`` declaring ``observe_rows = False`` (``None`` when it declares it
    already): the engine then hands ``observe`` DataFrames only."""
    tags = get_policy_tags(policy)
    if not tags.observe_rows:
        return None
    tags.observe_rows = False
    policy.__energysched_tags__ = lambda: tags
    return policy


def _same_schedule(
    check: str, replay: Callable[[], Any], jobs: pd.DataFrame, what: str
) -> str | None:
    """``None`` when ``replay()`` (a variant of the policy) gives the jobs table
    ``jobs``; else the problem, named after ``check``. ``what`` says how the
    variant differs."""
    try:
        other = replay()
    except PolicyError as exc:
        return f"{check}: with {what}, the replay fails: {exc}"
    if not other.jobs.equals(jobs):
        return f"{check}: the jobs table changes with {what}"
    return None


def check_policy(
    policy_or_factory: Any,
    *,
    params: dict[str, Any] | None = None,
    scenario_list: list[Scenario] | None = None,
    raise_on_failure: bool = True,
) -> dict[str, list[str]]:
    """Run the conformance checks (module docstring); returns ``{scenario: [failures]}``.

    Args:
        policy_or_factory: a :class:`~policies.base.Policy` instance (deep-copied
            for each run), a class or factory called with ``params``, or a
            registry name/dotted path.
        params: keyword parameters for the factory.
        scenario_list: scenarios to run (default :func:`scenarios`).
        raise_on_failure: raise :class:`AssertionError` listing every failure.
    """
    from simulator.config import RunConfig, policy_settings
    from simulator.engine import simulate
    from simulator.platform import homogeneous_platform

    make = _instantiate(policy_or_factory, dict(params or {}))
    failures: dict[str, list[str]] = {}
    for sc in scenario_list or scenarios():
        problems: list[str] = []
        failures[sc.name] = problems
        jobs_df, truth = scenario_trace(
            sc.n_jobs, sc.nodes, max_procs=sc.max_procs, mean_interarrival_s=sc.mean_interarrival_s
        )
        platform = homogeneous_platform(sc.nodes)
        # the scenario's engine settings, but for those the policy sets itself
        # (a power-off policy keeps its own idle timeout)
        own = policy_settings(make())
        config = RunConfig(**{k: v for k, v in sc.config.items() if k not in own})
        results = []
        for _ in range(2):
            policy = make()
            try:
                results.append(simulate(jobs_df, platform, policy, config, truth))
            except PolicyError as exc:
                problems.append(f"runs: {exc}")
                break
        if not results:
            continue
        policy = make()
        name = getattr(policy, "name", None)
        if not isinstance(name, str) or not name:
            problems.append(f"params: policy name must be a non-empty str, got {name!r}")
        try:
            p = policy.params()
            if not isinstance(p, dict):
                problems.append(f"params: params() returned {type(p).__name__}, not a dict")
            json.dumps(p)
        except (TypeError, ValueError) as exc:
            problems.append(f"params: params() is not JSON-serialisable ({exc})")
        res = results[0]
        jobs = res.jobs
        status = jobs["status"].to_numpy()
        bad = ~np.isin(status, ["completed", "killed", "rejected"])
        if bad.any() or len(jobs) != sc.n_jobs:
            problems.append(
                f"ends_once: {int(bad.sum())} of {len(jobs)} jobs did not end (expected {sc.n_jobs})"
            )
        ran = np.isin(status, ["completed", "killed"])
        st, en, sub = (jobs[c].to_numpy() for c in ("start_s", "end_s", "submit_s"))
        if ran.any() and (np.any(st[ran] < sub[ran]) or np.any(en[ran] < st[ran])):
            problems.append(
                "ends_once: a job starts before its submission or ends before its start"
            )
        reasons = jobs.loc[status == "rejected", "reason"].astype(str)
        stuck = reasons.str.contains("never started").sum()
        if stuck:
            problems.append(f"not_stuck: {stuck} jobs were never started by the policy")
        cap_problem = _capacity_ok(jobs, {t.name: t.count for t in platform.node_types})
        if cap_problem:
            problems.append(f"capacity: {cap_problem}")
        if get_policy_tags(policy).honours_power_cap and math.isfinite(config.power_cap_w):
            peak = float(res.power["power_w"].max()) if len(res.power) else 0.0
            if res.summary.get("power_cap_violations", 0) or peak > config.power_cap_w * (1 + 1e-9):
                problems.append(
                    f"power_cap: peak {peak:.1f} W exceeds the cap {config.power_cap_w:.1f} W"
                )
        if len(results) == 2 and not results[0].jobs.equals(results[1].jobs):
            problems.append("determinism: two fresh runs gave different jobs tables")
        for check, variant, what in (
            (
                "chooser_hooks",
                _without_chooser_hooks(make()),
                "the chooser's decision_epoch / decisions / changed_decisions ignored",
            ),
            (
                "observe_rows",
                _with_frame_hand_over(make()),
                "DataFrames handed to observe() instead of the row hand-overs the policy "
                "declares it accepts",
            ),
        ):
            if variant is not None:
                replay = partial(simulate, jobs_df, platform, variant, config, truth)
                problem = _same_schedule(check, replay, res.jobs, what)
                if problem:
                    problems.append(problem)
    failed = [
        f"check_policy[{sc}:{msg.split(':', 1)[0]}]: {msg}"
        for sc, ms in failures.items()
        for msg in ms
    ]
    if failed and raise_on_failure:
        raise AssertionError("\n".join(failed))
    return failures
