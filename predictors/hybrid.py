"""The ``hybrid`` predictor: runtime and power at ``(n, c, f)`` learned from a few runs.

It calibrates, per application, the hybrid MPI+OpenMP model of
:mod:`workloads.models.hybrid` from measured runs, as that model's own
measurement-based calibration does (a baseline run, then runs that vary one
dimension each), and plugs into the Pareto policies as their ``(n, c, f)``
predictor (``models_cores = True``). Nothing of the ground truth is read:
only finished runs (with their noise) and the platform description.

Time model (per unit of work ``W``, the run's ``instructions``; ``x = f / Fmax``
of the node type, ``c`` threads per node):

* **hybrid** (docs/background/models.md, section 1.3): ``tau = a / (n c x) + m / n + k (c - 1) / n + s``
  -- compute cycles spread over ``n c`` threads at ``f``; memory stall time
  ``m (1 + (k / m) (c - 1)) / n`` that grows with the threads of a node and
  does not depend on ``f``; a per-node message time ``s``;
* **Amdahl x Fluid** (Downey's first piece with the Fluid DVFS law, the
  default ground truth of a trace job): ``tau = (a' / (n c) + b') ((1 -
  alpha) + alpha / x)``, written linearly as ``p1 / (n c x) + p2 / (n c) +
  p3 / x + p4``.

Both are linear in four non-negative coefficients, fitted by non-negative
least squares on relative errors (``scipy.optimize.nnls``); the model with
the smaller relative residual is kept (the hybrid one on a tie). Columns
whose dimension the runs do not vary are left out (their coefficient is 0):
with one frequency only the ``1 / x`` terms stay (fully CPU-bound), with
one core count only the ``1 / (n c)`` terms (compute spread over the
threads, no memory contention), with one node count only the terms that
shrink with ``n`` (perfect speedup).

Power per node: ``P = s0 Pidle + s1 Pdyn g(n, c, x)`` with ``Pidle`` the node
type's lowest idle power, ``Pdyn`` its full-load power at ``Fmax`` minus
``Pidle``, and ``g`` the share of the dynamic power the configuration draws:
for the hybrid model the time-weighted mix of :func:`hybrid_power_figures`'
active, stalled, memory and network figures over the predicted time
components, for Amdahl x Fluid ``x**2 c / cores``. ``(s0, s1)`` are fitted
per application by least squares on relative errors, pulled towards
``(1, 1)`` by ``prior_weight``.

Per-job scale (as :mod:`predictors.baselines`): a job with requested time
``R`` and size ``req`` gets ``time = R rho tau(n, c, f) / tau(req, cores,
Fmax)``, ``rho`` the application's geometric mean of ``W tau(req_j, cores,
Fmax) / R_j``; without a request, the median work times ``tau``.

Uncertainty: ``min(1, min_uncertainty + 3 x`` the relative RMS residual of
the application's time fit ``)`` on modelled rows, NaN on fallback rows.

Reliability: a row is reliable when its application has a model and the
row stays along the dimensions its runs varied (``f < Fmax`` needs a run at
a lower frequency, ``c < cores`` a run on fewer cores, a node count not run
yet needs runs at two node counts). Policies with ``require_reliable`` drop
the other rows (no prediction, no candidate).

Exploration (:meth:`HybridPredictor.exploration`): the calibration runs the
predictor asks a policy for, in order, until its runs cover them: requested
size at the lowest frequency; half the cores per node; another node count
(half the requested size, or 2 nodes for a one-node job); a quarter of the
cores at the lowest frequency (so that the two time models differ).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from energysched.errors import ConfigError
from predictors.base import (
    Observations,
    PendingRunsMixin,
    Prediction,
    Predictor,
    Queries,
)
from predictors.baselines import AppRuns, geometric_mean, run_work, split_runs

log = logging.getLogger(__name__)

__all__ = ["HybridModel", "HybridPredictor"]

#: Split of a node's dynamic power in the hybrid model (per core computing,
#: per core stalled, memory, network), as :func:`workloads.models.hybrid.hybrid_power_figures`.
_ACTIVE, _STALL, _MEM, _NET = 0.75, 0.45, 0.15, 0.10


@dataclass
class _TypeFacts:
    name: str
    cores: int
    fmax: float
    freqs: np.ndarray
    idle_w: float
    dyn_w: float


@dataclass
class HybridModel:
    """Fitted state of one application.

    Attributes:
        kind: ``"hybrid"`` or ``"amdahl-fluid"`` (the time model kept).
        coef: the four time coefficients (see the module docstring).
        power_scale: ``(s0, s1)`` of the power model.
        rho: request ratio (NaN when no run has a requested time).
        median_work: median ``W`` of the runs.
        varied: which dimensions the runs varied (``nodes``, ``cores``, ``freq``).
        nodes_seen: node counts of the runs.
        residual: relative RMS residual of the time fit.
    """

    kind: str
    coef: np.ndarray
    power_scale: tuple[float, float]
    rho: float
    median_work: float
    varied: frozenset[str]
    nodes_seen: frozenset[int]
    residual: float


def _design(kind: str, n: np.ndarray, c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Time columns of the model ``kind`` (rows: configurations)."""
    if kind == "hybrid":
        return np.column_stack([1.0 / (n * c * x), 1.0 / n, (c - 1.0) / n, np.ones_like(n)])
    return np.column_stack([1.0 / (n * c * x), 1.0 / (n * c), 1.0 / x, np.ones_like(n)])


def _keep_columns(kind: str, varied: frozenset[str]) -> np.ndarray:
    """Columns identifiable from runs that varied ``varied`` (others are fixed at 0)."""
    keep = np.ones(4, dtype=bool)
    if kind == "hybrid":
        if "freq" not in varied:  # compute and memory both 1/n at one frequency: CPU-bound
            keep[1] = False
        if "cores" not in varied:
            keep[2] = False
        if "nodes" not in varied:
            keep[3] = False
    else:
        if "freq" not in varied:
            keep[1] = keep[3] = False
        if "nodes" not in varied and "cores" not in varied:
            keep[2] = keep[3] = False
    return keep


class HybridPredictor(PendingRunsMixin, Predictor):
    """Per-application hybrid (or Amdahl x Fluid) model of ``(n, c, f)``; see the module docstring.

    Args:
        prior_weight: pull of the power scales towards ``(1, 1)`` (relative
            weight of one pseudo-run each; 0 disables).
        min_uncertainty: the relative ``uncertainty`` of every modelled row is
            ``min(1, min_uncertainty + 3 x`` the application's relative RMS
            residual ``)`` (the Pareto policies widen moved time limits by it).
    """

    name = "hybrid"
    min_observations = 1
    accepts_run_batch = True
    #: predictions depend on the cores per node of a query
    models_cores = True

    def __init__(self, prior_weight: float = 0.1, min_uncertainty: float = 0.15) -> None:
        self.prior_weight = prior_weight
        self.min_uncertainty = min_uncertainty

    # ------------------------------------------------------------------ fitting
    def fit(self, observations: Observations) -> HybridPredictor:
        if not self.prior_weight >= 0:
            raise ConfigError("hybrid.prior_weight", f"must be >= 0, got {self.prior_weight!r}")
        self._obs = observations
        self._pending: list[pd.DataFrame] = []
        self.platform_ = observations.platform
        self.types_ = self._type_facts(observations.platform)
        self.models_: dict[int, HybridModel | None] = {}
        self.runs_: dict[int, AppRuns] = {}
        for app, runs in split_runs(observations.runs).items():
            self.runs_[int(app)] = runs
            self.models_[int(app)] = self._fit_app(runs)
        return self

    def update(self, new_runs: Any) -> HybridPredictor:
        """Add finished runs (a DataFrame or a RunBatch) and refit their applications only."""
        self._check_fitted()
        if len(new_runs) == 0:
            return self
        self._pending.append(new_runs)
        for app, runs in split_runs(new_runs).items():
            a = int(app)
            old = self.runs_.get(a)
            if old is not None:
                runs = {k: np.concatenate([old[k], v]) for k, v in runs.items()}
            self.runs_[a] = runs
            self.models_[a] = self._fit_app(runs)
        return self

    @staticmethod
    def _type_facts(platform: Any) -> dict[str, _TypeFacts]:
        facts: dict[str, _TypeFacts] = {}
        if platform is None:
            return facts
        for t in platform.node_types:
            pstates = sorted(t.pstates, key=lambda p: p.freq_ghz)
            idle = float(pstates[0].idle_power_w)
            busy = float(pstates[-1].busy_power_w)
            facts[str(t.name)] = _TypeFacts(
                name=str(t.name),
                cores=int(t.cores_per_node),
                fmax=float(pstates[-1].freq_ghz),
                freqs=np.array([p.freq_ghz for p in pstates], dtype=float),
                idle_w=idle,
                dyn_w=max(busy - idle, 0.0),
            )
        return facts

    def _facts_of(self, names: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per row: cores per node, Fmax, idle power, dynamic power of the row's node type."""
        k = len(names)
        cores, fmax, idle, dyn = (np.full(k, np.nan) for _ in range(4))
        if not self.types_:
            return np.ones(k), fmax, np.full(k, 100.0), np.full(k, 100.0)
        default = next(iter(self.types_.values()))
        for name in set(names.tolist()) if k else ():
            t = self.types_.get(str(name), default) if name is not None else default
            m = names == name
            cores[m], fmax[m], idle[m], dyn[m] = t.cores, t.fmax, t.idle_w, t.dyn_w
        return cores, fmax, idle, dyn

    def _names(self, node_type: Any, k: int) -> np.ndarray:
        if node_type is None:
            first = next(iter(self.types_), None)
            return np.full(k, first, dtype=object)
        names = np.asarray(node_type, dtype=object)
        # the first type's name (None without types), as the object array np.where makes of it
        fill = np.asarray(next(iter(self.types_), None), dtype=object)
        return np.where(pd.isna(names), fill, names)

    def _fit_app(self, runs: AppRuns) -> HybridModel | None:
        t = runs["time_s"]
        ok = np.isfinite(t) & (t > 0)
        if not ok.any():
            return None
        runs = {k: v[ok] for k, v in runs.items()}
        t = runs["time_s"]
        names = self._names(runs["node_type"], len(t))
        cores_t, fmax, idle, dyn = self._facts_of(names)
        n = runs["nodes"]
        f = runs["freq_ghz"]
        fmax = np.where(np.isfinite(fmax), fmax, np.nanmax(f))
        c = runs["cores"]
        c = np.where(np.isfinite(c) & (c > 0), c, cores_t)
        x = f / fmax
        work = run_work(runs)
        tau = t / work
        varied = frozenset(
            name
            for name, v in (("nodes", n), ("cores", c), ("freq", np.round(x, 9)))
            if len(np.unique(v)) > 1
        )
        best: tuple[float, str, np.ndarray] | None = None
        for kind in ("hybrid", "amdahl-fluid"):
            keep = _keep_columns(kind, varied)
            design = _design(kind, n, c, x)[:, keep] / tau[:, None]
            coef_k, _ = nnls(design, np.ones(len(tau)))
            coef = np.zeros(4)
            coef[keep] = coef_k
            pred = _design(kind, n, c, x) @ coef
            if not np.all(pred > 0):
                continue
            resid = float(np.sqrt(np.mean((pred / tau - 1.0) ** 2)))
            if best is None or resid < best[0] * (1.0 - 1e-6):
                best = (resid, kind, coef)
        if best is None:
            return None
        resid, kind, coef = best
        # power scales
        g = self._dyn_share(kind, coef, n, c, x, cores_t)
        power = runs["power_w"]
        pok = np.isfinite(power) & (power > 0)
        s0, s1 = 1.0, 1.0
        if pok.any():
            a = np.column_stack([idle[pok], dyn[pok] * g[pok]]) / power[pok, None]
            b = np.ones(int(pok.sum()))
            w = self.prior_weight
            if w > 0:
                a = np.vstack([a, [[w, 0.0], [0.0, w]]])
                b = np.concatenate([b, [w, w]])
            sol, *_ = np.linalg.lstsq(a, b, rcond=None)
            s0, s1 = float(max(sol[0], 0.0)), float(max(sol[1], 0.0))
        # per-job scale
        req_t = runs["requested_time_s"]
        req_n = runs["requested_nodes"]
        use = np.isfinite(req_t) & (req_t > 0) & np.isfinite(req_n) & (req_n >= 1)
        rho = math.nan
        if use.any():
            tau_ref = _design(kind, req_n[use], cores_t[use], np.ones(int(use.sum()))) @ coef
            rho = geometric_mean(work[use] * tau_ref / req_t[use])
        return HybridModel(
            kind=kind,
            coef=coef,
            power_scale=(s0, s1),
            rho=rho,
            median_work=float(np.median(work)),
            varied=varied,
            nodes_seen=frozenset(int(v) for v in n.tolist()),
            residual=resid,
        )

    @staticmethod
    def _dyn_share(
        kind: str, coef: np.ndarray, n: np.ndarray, c: np.ndarray, x: np.ndarray, cores: np.ndarray
    ) -> np.ndarray:
        """Share ``g`` of the node's dynamic power drawn at each configuration."""
        if kind != "hybrid":
            return x * x * c / cores
        t_cpu = coef[0] / (n * c * x)
        t_mem = (coef[1] + coef[2] * (c - 1.0)) / n
        t_net = np.full_like(n, coef[3])
        total = t_cpu + t_mem + t_net
        xp = x * x
        per_core = c / cores
        mix = (_ACTIVE * xp * per_core * t_cpu + (_STALL * xp * per_core + _MEM) * t_mem) + (
            _NET * t_net
        )
        return np.where(total > 0, mix / np.where(total > 0, total, 1.0), 0.0)

    # ------------------------------------------------------------------ predicting
    def predict(self, queries: Queries) -> Prediction:
        self._check_fitted()
        k = len(queries)
        time, power = np.full(k, np.nan), np.full(k, np.nan)
        reliable = np.zeros(k, dtype=bool)
        uncertainty = np.full(k, np.nan)
        modelled = np.zeros(k, dtype=bool)
        if k:
            self._predict_modelled(queries, time, power, reliable, uncertainty, modelled)
        if not modelled.all():  # the other rows: the fallback, row by row the same
            fb = self.fallback(queries, self.platform_)
            time[~modelled] = fb.time_s[~modelled]
            power[~modelled] = fb.power_w[~modelled]
        energy = time * power * queries.nodes.astype(float)
        return Prediction(time, power, energy, reliable, uncertainty)

    def _predict_modelled(
        self,
        queries: Queries,
        time: np.ndarray,
        power: np.ndarray,
        reliable: np.ndarray,
        uncertainty: np.ndarray,
        modelled: np.ndarray,
    ) -> None:
        """Fill the rows of applications with a model whose prediction is usable
        (finite and positive time and power); mark them in ``modelled``."""
        k = len(queries)
        names = self._names(queries.node_type, k)
        cores_t, fmax, idle, dyn = self._facts_of(names)
        fmax = np.where(np.isfinite(fmax), fmax, queries.freq_ghz)
        n = queries.nodes.astype(float)
        c = cores_t.copy() if queries.cores is None else np.asarray(queries.cores, dtype=float)
        c = np.where(np.isfinite(c) & (c > 0), c, cores_t)
        x = queries.freq_ghz / fmax
        req_t = (
            np.asarray(queries.requested_time_s, dtype=float)
            if queries.requested_time_s is not None
            else np.full(k, np.nan)
        )
        req_n = (
            np.asarray(queries.requested_nodes, dtype=float)
            if queries.requested_nodes is not None
            else np.full(k, np.nan)
        )
        apps = queries.application
        _, inverse = np.unique(apps, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.flatnonzero(np.diff(inverse[order])) + 1
        for idx in np.split(order, bounds):
            model = self.models_.get(int(apps[idx[0]]))
            if model is None:
                continue
            ni, ci, xi, cti = n[idx], c[idx], x[idx], cores_t[idx]
            with np.errstate(all="ignore"):
                tau = _design(model.kind, ni, ci, xi) @ model.coef
                rt, rn = req_t[idx], req_n[idx]
                use = np.isfinite(rt) & (rt > 0) & np.isfinite(rn) & (rn >= 1)
                use &= math.isfinite(model.rho)
                scale = np.full(len(idx), model.median_work)
                if use.any():
                    tau_ref = (
                        _design(model.kind, rn[use], cti[use], np.ones(int(use.sum()))) @ model.coef
                    )
                    scale[use] = rt[use] * model.rho / tau_ref
                t = tau * scale
                g = self._dyn_share(model.kind, model.coef, ni, ci, xi, cti)
                s0, s1 = model.power_scale
                pw = s0 * idle[idx] + s1 * dyn[idx] * g
            good = np.isfinite(t) & (t > 0) & np.isfinite(pw) & (pw > 0)
            rel = np.ones(len(idx), dtype=bool)
            if "freq" not in model.varied:
                rel &= xi >= 1.0 - 1e-9
            if "cores" not in model.varied:
                rel &= ci >= cti
            if "nodes" not in model.varied:
                rel &= np.isin(ni, list(model.nodes_seen))
            sel = idx[good]
            time[sel] = t[good]
            power[sel] = pw[good]
            reliable[sel] = rel[good]
            uncertainty[sel] = min(1.0, self.min_uncertainty + 3.0 * model.residual)
            modelled[sel] = True

    # ------------------------------------------------------------------ exploration
    def exploration(
        self,
        application: int,
        node_type: str,
        requested_nodes: int,
        count: int,
        cores_per_node: int,
        freqs_ghz: Any,
        pending: list[tuple[int, int, float]] | None = None,
    ) -> tuple[int, int, float] | None:
        """The next calibration run ``(n, c, f)`` this application needs, or ``None``.

        In order (module docstring): lowest frequency; half the cores; another
        node count; a quarter of the cores at the lowest frequency. A step is
        done when a run (or a ``pending`` one, started and not yet observed)
        covers it. ``None`` while the application has no run yet (its first
        job runs as requested) and once every step is done.
        """
        self._check_fitted()
        model = self.models_.get(int(application))
        if model is None:
            return None
        freqs = np.sort(np.asarray(freqs_ghz, dtype=float))
        fmin, fmax = float(freqs[0]), float(freqs[-1])
        req = max(1, min(int(requested_nodes), int(count)))
        full = int(cores_per_node)
        runs = self.runs_.get(int(application))
        seen = list(pending or [])
        if runs is not None:
            rc = runs["cores"]
            rc = np.where(np.isfinite(rc) & (rc > 0), rc, full)
            seen += list(
                zip(
                    runs["nodes"].astype(int).tolist(),
                    rc.astype(int).tolist(),
                    runs["freq_ghz"].tolist(),
                )
            )
        low_f = any(f < fmax - 1e-9 for _, _, f in seen)
        half_c = any(c < full for _, c, _ in seen)
        two_n = len({n for n, _, _ in seen}) > 1
        both = any(c < full and f < fmax - 1e-9 for _, c, f in seen)
        other_n = req // 2 if req >= 2 else min(2, int(count))
        steps = [
            (low_f or fmin >= fmax, (req, full, fmin)),
            (half_c or full < 2, (req, max(1, full // 2), fmax)),
            (two_n or other_n == req, (other_n, full, fmax)),
            (both or full < 2 or fmin >= fmax, (req, max(1, full // 4), fmin)),
        ]
        for done, cfg in steps:
            if not done:
                return cfg
        return None
