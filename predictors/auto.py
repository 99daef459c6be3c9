"""Model selection for the node-count dimension: ``auto`` chooses per application among
Amdahl, a log-log power law and ADEPT by leave-one-out error; and the power-law baseline.

**Why.** Checked on measured strong-scaling curves (the corpus of
``energysched predictors validate``), no single shape wins: ADEPT's Downey model
explains curves that bend towards a plateau but, from 3-4 small sizes, often puts the
plateau where no observation supports it; a two-parameter power law
``tau(n) = c n^-b`` (a straight line in log-log axes) extrapolates smooth
strong-scaling curves best; Amdahl ``tau = a / n + b`` is right where a serial part
dominates. :func:`select_model` lets each application's own sizes decide.

**Selection** (:func:`select_model`). The runs are averaged per distinct node count
(geometric mean of the work-normalised times). With ``m`` distinct sizes:

* ``m < 3``: Amdahl (nothing to validate: every two-parameter fit of two points is
  exact); rows unreliable.
* otherwise each candidate the data allow -- Amdahl and the power law (``m >= 3``),
  ADEPT (``m >= min_adept_sizes``, default 4: ADEPT has three parameters) -- is
  scored by leave-one-out: each size in turn is left out, the model fitted to the
  others predicts it, the score is the mean absolute log error ``|ln(pred/actual)|``.
  Candidates are taken **in the order Amdahl, power law, ADEPT** and a later one
  replaces the choice only when its score is below ``margin`` (default 0.8) times the
  current choice's: with few data the simpler, earlier model is preferred.
  A later candidate's scoring stops as soon as its score is known to reach that bar
  (the outermost sizes are left out first; the errors are ``>= 0``, so the mean
  with the sizes not yet predicted counted as 0 is a lower bound of the score): it
  cannot replace the choice, and the choice and its score are those of the full
  scoring.

The chosen model is then fitted to every size. Its name and every candidate's score
are kept in :attr:`AutoModel.chosen` / :attr:`AutoModel.scores` (see
:meth:`AutoPredictor.chosen_models`; a stopped candidate's entry is its lower bound,
named in :attr:`AutoModel.bounded`) and logged at DEBUG level (logger
``predictors.auto``).

**Reliability.** A row is reliable when the application has ``>= 3`` sizes, the
chosen model's leave-one-out score is at most ``max_loo_error`` (default 0.10), the
two-parameter fits (Amdahl and power law, fitted to every size) agree with the chosen
model at the queried ``n`` within ``max_disagreement`` (default 0.15 in ``|ln|``,
about 16 %: :meth:`AutoModel.disagreement`) and ``n`` is at most
``max_extrapolation`` (default 4) times the largest observed size. The candidates
agree where the data are and part when extrapolating, the more the less the data say
about ``n``; on the bundled corpus (issue 14) the predictions they agree on were the
accurate ones. ``Prediction.uncertainty`` is ``exp(max(score, disagreement)) - 1``.

Frequency and power, per-job scaling and fallbacks are those of every
:class:`~predictors.baselines.PerApplicationPredictor` (runtime ``~ Fmax / f``, the
P-state full-load power); combine with a DVFS predictor (``auto+fluid``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from predictors.adept import array_median, fit_downey_params
from predictors.adept_envelope import inv_speedup
from predictors.baselines import (
    AmdahlModel,
    AppRuns,
    PerApplicationPredictor,
    ShapeTable,
    fit_amdahl,
)

log = logging.getLogger(__name__)

__all__ = [
    "CANDIDATES",
    "AutoModel",
    "AutoPredictor",
    "PowerLawModel",
    "PowerLawPredictor",
    "fit_power_law",
    "node_column_table",
    "refit_chosen",
    "select_model",
    "size_averages",
]

#: The candidate models of :func:`select_model`, in order of preference.
CANDIDATES = ("amdahl", "power-law", "adept")

#: Resolutions of ADEPT's 1-D and 2-D searches in the leave-one-out fits.
_LOO_N_1D = 1000
_LOO_N_2D = 100


@dataclass
class PowerLawModel:
    """``tau(n) = c * n ** -b`` (a straight line in log-log axes); ``b = 1``: perfect speedup."""

    c: float
    b: float
    distinct_nodes: int

    def tau(self, nodes: np.ndarray | float) -> np.ndarray:
        return self.c * np.power(np.maximum(np.asarray(nodes, dtype=np.float64), 1.0), -self.b)


def fit_power_law(nodes: np.ndarray, tau: np.ndarray) -> PowerLawModel:
    """Least squares of ``ln tau = ln c - b ln n`` over the runs (each run one point).

    With a single distinct node count the exponent is not identifiable: ``b = 1``
    (perfect speedup) and ``c`` the geometric mean of ``n * tau``.
    """
    nodes = np.asarray(nodes, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    ok = np.isfinite(tau) & (tau > 0) & np.isfinite(nodes) & (nodes >= 1)
    nodes, tau = nodes[ok], tau[ok]
    if len(tau) == 0:
        raise ValueError("no usable runs")
    x, y = np.log(nodes), np.log(tau)
    distinct = len(set(nodes.tolist()))
    if distinct < 2:
        return PowerLawModel(float(np.exp(np.mean(x + y))), 1.0, distinct)
    xm, ym = float(x.mean()), float(y.mean())
    slope = float(np.sum((x - xm) * (y - ym)) / np.sum((x - xm) ** 2))
    return PowerLawModel(float(np.exp(ym - slope * xm)), -slope, distinct)


@dataclass
class _DowneyShape:
    """A Downey fit as a shape: ``tau(n) = L / S(n)``."""

    A: float
    sigma: float
    L: float

    def tau(self, nodes: np.ndarray | float) -> np.ndarray:
        n = np.maximum(np.asarray(nodes, dtype=np.float64), 1.0)
        return self.L * inv_speedup(n, self.A, self.sigma)


def _fit_candidate(
    name: str, nodes: np.ndarray, tau: np.ndarray, target: float, **adept: Any
) -> Any:
    if name == "amdahl":
        return fit_amdahl(nodes, tau)
    if name == "power-law":
        return fit_power_law(nodes, tau)
    scale = array_median(tau)
    A, sigma, L = fit_downey_params(nodes, tau / scale, target, **adept)
    return _DowneyShape(A, sigma, L * scale)


def _tau_of(model: Any, nodes: np.ndarray | float) -> np.ndarray:
    if isinstance(model, AmdahlModel):
        n = np.maximum(np.asarray(nodes, dtype=np.float64), 1.0)
        return model.a / n + model.b
    return np.asarray(model.tau(nodes), dtype=np.float64)


def _loo_order(count: int) -> list[int]:
    """The order :func:`_loo_score` leaves the sizes out: the outermost first (0, last,
    1, last - 1, ...). A model fitted to the others extrapolates to them, where the
    errors are largest: a losing candidate's partial sum passes its bar soonest."""
    return sorted(range(count), key=lambda i: min(i, count - 1 - i))


def _loo_score(
    name: str,
    sizes: np.ndarray,
    tau: np.ndarray,
    target: float,
    stop_at: float = math.inf,
    **adept: Any,
) -> tuple[float, bool]:
    """Mean ``|ln(pred / actual)|`` of each size predicted by the model fitted to the others.

    Returns ``(score, complete)``. ``stop_at``: the scoring stops as soon as the score
    is known to be at least this, and returns that lower bound (``complete`` False):
    the same mean with the sizes not yet predicted counted as 0. The errors are kept
    in size order and the mean is always taken over all of them (NumPy's sum of a
    fixed length adds in a fixed order): correctly rounded addition and division are
    monotone and the errors are ``>= 0``, so the bound is at most the full score, and
    the full score (when not stopped) is the same number in every order of leaving
    out.
    """
    count = len(sizes)
    errs = np.zeros(count)
    every = np.arange(count)
    for done, i in enumerate(_loo_order(count), start=1):
        keep = every != i
        try:
            model = _fit_candidate(name, sizes[keep], tau[keep], float(sizes[i]), **adept)
            pred = float(_tau_of(model, sizes[i]))
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return math.inf, True
        if not (math.isfinite(pred) and pred > 0):
            return math.inf, True
        errs[i] = abs(math.log(pred / tau[i]))
        if done < count and stop_at < math.inf:
            bound = float(np.mean(errs))
            if bound >= stop_at:
                return bound, False
    return float(np.mean(errs)), True


@dataclass
class AutoModel:
    """The model ``auto`` chose for one application.

    ``chosen``: one of :data:`CANDIDATES`; ``model``: the fitted model
    (:class:`~predictors.baselines.AmdahlModel`, :class:`PowerLawModel` or a Downey
    shape with ``A``, ``sigma``, ``L``); ``scores``: leave-one-out score per scored
    candidate (mean ``|ln(pred/actual)|``), exact for the chosen candidate and for
    every candidate not in ``bounded``; ``bounded``: the candidates whose scoring
    stopped once their score was known to be too high to replace the choice (at
    least ``margin`` x the choice's score then): their entry in ``scores`` is a lower
    bound of their score (the mean with the sizes not yet predicted counted as 0,
    itself at least that bar); ``sizes``: the distinct node counts.
    """

    chosen: str
    model: Any
    scores: dict[str, float] = field(default_factory=dict)
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: the two-parameter candidates (Amdahl, power law) fitted to every size: the
    #: yardsticks of :meth:`disagreement`
    yardsticks: tuple[Any, ...] = ()
    #: the geometric mean time at each size (what the choice was made from)
    avg: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: the node count ADEPT's fit is weighted for
    target: float = math.nan
    #: the candidates whose entry in ``scores`` is a lower bound (see above)
    bounded: frozenset[str] = frozenset()

    @property
    def loo_error(self) -> float:
        """The chosen model's leave-one-out score (NaN when not scored)."""
        return self.scores.get(self.chosen, math.nan)

    @property
    def n_max(self) -> float:
        return float(self.sizes.max()) if self.sizes.size else math.nan

    def tau(self, nodes: np.ndarray | float) -> np.ndarray:
        return _tau_of(self.model, nodes)

    def disagreement(self, nodes: np.ndarray | float) -> np.ndarray:
        """Largest ``|ln(other / chosen)|`` at each ``n`` over the two-parameter fits
        (Amdahl, power law) of every size: they agree where the data are and part when
        extrapolating, the more the less the data say about ``n``. 0 without them."""
        n = np.atleast_1d(np.asarray(nodes, dtype=np.float64))
        base = self.tau(n)
        out = np.zeros(n.shape)
        with np.errstate(all="ignore"):
            for other in self.yardsticks:
                gap = np.abs(np.log(_tau_of(other, n) / base))
                out = np.where(np.isfinite(gap), np.maximum(out, gap), np.inf)
        return out


def select_model(
    nodes: np.ndarray,
    tau: np.ndarray,
    *,
    target: float | None = None,
    margin: float = 0.8,
    min_adept_sizes: int = 4,
    candidates: tuple[str, ...] = CANDIDATES,
    adept_kwargs: dict[str, Any] | None = None,
    max_sizes: int | None = 8,
    exact_scores: bool = False,
) -> AutoModel:
    """Choose and fit the node-count model of one application (module docstring).

    Args:
        nodes, tau: the runs' node counts and times (any unit; repeated sizes allowed,
            averaged geometrically).
        target: the node count ADEPT's fit is weighted for (default: the largest size).
        margin: a later candidate replaces the choice when its score is below
            ``margin`` x the choice's.
        min_adept_sizes: distinct sizes needed before ADEPT is a candidate.
        candidates: the candidates, in order of preference (a subset of :data:`CANDIDATES`).
        adept_kwargs: passed to :func:`~predictors.adept.fit_downey`.
        max_sizes: the leave-one-out (and ADEPT's final fit) use the sizes nearest
            the target, at most this many (None: all).
        exact_scores: score every candidate on every size; by default a candidate's
            scoring stops once its score is known to be too high to replace the choice
            (:attr:`AutoModel.bounded`; the same choice and chosen score).

    Raises:
        ValueError: no usable run, or an unknown candidate.
    """
    nodes = np.asarray(nodes, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    ok = np.isfinite(tau) & (tau > 0) & np.isfinite(nodes) & (nodes >= 1)
    nodes, tau = nodes[ok], tau[ok]
    if len(tau) == 0:
        _check_candidates(candidates)
        raise ValueError("no usable runs")
    sizes, avg = size_averages(nodes, tau)
    tgt = float(sizes.max()) if target is None else float(target)
    return _select(
        sizes,
        avg,
        tgt,
        margin=margin,
        min_adept_sizes=min_adept_sizes,
        candidates=candidates,
        adept_kwargs=dict(adept_kwargs or {}),
        max_sizes=max_sizes,
        exact_scores=exact_scores,
    )


def _check_candidates(candidates: tuple[str, ...]) -> None:
    unknown = sorted(set(candidates) - set(CANDIDATES))
    if unknown:
        raise ValueError(f"unknown candidate model(s) {unknown}; known: {list(CANDIDATES)}")


def _select(
    sizes: np.ndarray,
    avg: np.ndarray,
    tgt: float,
    *,
    margin: float,
    min_adept_sizes: int,
    candidates: tuple[str, ...],
    adept_kwargs: dict[str, Any],
    max_sizes: int | None,
    exact_scores: bool,
) -> AutoModel:
    """:func:`select_model` from the distinct sizes and their averages."""
    _check_candidates(candidates)
    kw = adept_kwargs
    if len(sizes) < 3:
        return AutoModel("amdahl", fit_amdahl(sizes, avg), {}, sizes, avg=avg, target=tgt)
    yardsticks = _yardsticks(sizes, avg)
    # the leave-one-out runs on the max_sizes sizes nearest the target (ADEPT's cost
    # grows with the square of the number of sizes; every candidate is scored on the
    # same points)
    sel_n, sel_t = _nearest(sizes, avg, tgt, max_sizes)
    # ADEPT's leave-one-out fits at a coarser search resolution (they only rank the
    # candidates; the chosen model is fitted at full resolution)
    loo_kw = {
        **kw,
        "n_1d": min(int(kw.get("n_1d", 5000)), _LOO_N_1D),
        "n_2d": min(int(kw.get("n_2d", 500)), _LOO_N_2D),
    }
    scores: dict[str, float] = {}
    bounded: set[str] = set()
    chosen: str | None = None
    for name in candidates:
        if name == "adept" and len(sel_n) < max(4, int(min_adept_sizes)):
            continue
        # a later candidate replaces the choice only below margin x the choice's score:
        # its scoring may stop once its score is known to be at least that
        bar = math.inf if chosen is None or exact_scores else margin * scores[chosen]
        score, complete = _loo_score(name, sel_n, sel_t, tgt, bar, **loo_kw)
        scores[name] = score
        if not complete:
            bounded.add(name)
        elif chosen is None or score < margin * scores[chosen]:
            chosen = name
    if chosen is None:  # no candidate allowed (e.g. candidates=("adept",) with 3 sizes)
        return AutoModel(
            "amdahl", yardsticks[0], scores, sizes, yardsticks, avg, tgt, frozenset(bounded)
        )
    model = AutoModel(chosen, None, scores, sizes, yardsticks, avg, tgt, frozenset(bounded))
    return _with_chosen_fit(model, max_sizes, kw)


def refit_chosen(
    model: AutoModel, max_sizes: int | None = 8, adept_kwargs: dict[str, Any] | None = None
) -> AutoModel:
    """``model`` with its chosen candidate fitted to its sizes and averages (ADEPT to the
    ``max_sizes`` nearest its target); the choice and the scores are kept."""
    with_yardsticks = replace(model, yardsticks=_yardsticks(model.sizes, model.avg))
    return _with_chosen_fit(with_yardsticks, max_sizes, dict(adept_kwargs or {}))


def _yardsticks(sizes: np.ndarray, avg: np.ndarray) -> tuple[AmdahlModel, PowerLawModel]:
    """Amdahl and the power law fitted to every size (:attr:`AutoModel.yardsticks`)."""
    return fit_amdahl(sizes, avg), fit_power_law(sizes, avg)


def _with_chosen_fit(model: AutoModel, max_sizes: int | None, kw: dict[str, Any]) -> AutoModel:
    """``model`` (its yardsticks fitted) with its chosen candidate fitted: ADEPT to the
    ``max_sizes`` sizes nearest the target; Amdahl and the power law to every size,
    which is their yardstick (the same fit of the same points)."""
    if model.chosen == "adept":
        sizes, avg = _nearest(model.sizes, model.avg, model.target, max_sizes)
        fitted = _fit_candidate("adept", sizes, avg, model.target, **kw)
    else:
        fitted = model.yardsticks[CANDIDATES.index(model.chosen)]
    return replace(model, model=fitted)


def size_averages(nodes: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sizes and the geometric mean of the times at each."""
    sizes, inv = np.unique(nodes, return_inverse=True)
    return sizes, np.exp(np.bincount(inv, weights=np.log(tau)) / np.bincount(inv))


def _nearest(
    sizes: np.ndarray, avg: np.ndarray, target: float, limit: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``limit`` sizes nearest ``target`` (ties to the smaller), in increasing order."""
    if limit is None or len(sizes) <= int(limit):
        return sizes, avg
    keep = np.sort(np.argsort(np.abs(sizes - target), kind="stable")[: int(limit)])
    return sizes[keep], avg[keep]


def node_column_table(
    pred: PerApplicationPredictor,
    tau_of_n: Any,
    reliable_of_n: Any,
    name: str,
    meta: tuple[Any, ...],
) -> ShapeTable | None:
    """The shape table of a predictor whose ``_shape`` is ``tau(n) * Fmax / f``, the
    node type's P-state power and a reliability that depends on ``n`` only (auto,
    power law): ``tau`` evaluated once per node count (a column) times the
    ``Fmax / f`` row, the power row and the reliability column broadcast to the
    table (read-only views). The same operations per cell as ``_shape`` on every
    cell (:meth:`PerApplicationPredictor._compute_table`), ``count`` times fewer
    evaluations of the model and no power or reliability table in memory.
    ``None`` for an unknown node type (then the plain table).

    ``tau_of_n(n)`` and ``reliable_of_n(n)`` take the node counts ``1..count``
    (float64) and return one value per count (``reliable_of_n`` may return a
    scalar).
    """
    info = pred.info_.get(name)
    if info is None:
        return None
    count, freqs = meta[0], meta[1]
    shape = (count, len(freqs))
    n = np.arange(1, count + 1, dtype=np.float64)
    with np.errstate(all="ignore"):
        tau = np.asarray(tau_of_n(n), dtype=np.float64)[:, None] * info.fmax_ghz / freqs
        reliable = np.asarray(reliable_of_n(n), dtype=bool)
    power = np.asarray(info.busy_power(freqs), dtype=np.float64)
    rel_col = reliable[:, None] if reliable.ndim else reliable
    return tau, np.broadcast_to(power, shape), np.broadcast_to(rel_col, shape), None


class PowerLawPredictor(PerApplicationPredictor):
    """Log-log power law ``tau(n) = c n^-b`` per application (least squares in log-log axes).

    Fitted on the application's work-normalised runs at ``Fmax`` (runs at
    ``f < Fmax`` moved there assuming ``time ~ Fmax / f``). Frequency: ``Fmax / f``;
    power: the P-state full-load power (combine with a DVFS predictor,
    ``power-law+fluid``). Rows are reliable once the application has runs at two or
    more node counts.
    """

    name = "power-law"
    _grid_ok = True

    def __init__(self) -> None:
        pass

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> PowerLawModel:
        return fit_power_law(runs["nodes"], _normalised_tau(self, runs, work))

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        fmax = self.info_.fmax(node_type, freq_ghz)
        tau = model.tau(nodes) * fmax / freq_ghz
        power = self.info_.busy_power(node_type, freq_ghz)
        return tau, power, np.full(len(nodes), model.distinct_nodes >= 2)

    def _compute_table(self, app, state, name, meta):
        """:func:`node_column_table` (same values as the plain table)."""
        if type(self)._shape is not PowerLawPredictor._shape:
            return super()._compute_table(app, state, name, meta)
        model = state.model
        got = node_column_table(self, model.tau, lambda n: model.distinct_nodes >= 2, name, meta)
        return super()._compute_table(app, state, name, meta) if got is None else got


def _normalised_tau(pred: PerApplicationPredictor, runs: AppRuns, work: np.ndarray) -> np.ndarray:
    """Each run's time per unit of work at ``Fmax`` (``time * f / Fmax / work``)."""
    names = np.where(pd.isna(runs["node_type"]), pred.info_.default, runs["node_type"]).astype(
        object
    )
    fmax = pred.info_.fmax(names, runs["freq_ghz"])
    return runs["time_s"] / work * runs["freq_ghz"] / fmax


class AutoPredictor(PerApplicationPredictor):
    """Per application, the best of Amdahl, a log-log power law and ADEPT by leave-one-out.

    See the module docstring (:mod:`predictors.auto`) for the selection rule and the
    reliability judgment. The chosen model per application:
    :meth:`chosen_models` (and DEBUG log records of logger ``predictors.auto``).

    Args:
        margin: a later (more complex) candidate must score below ``margin`` x the
            current choice to replace it.
        min_adept_sizes: distinct sizes needed before ADEPT is a candidate.
        max_loo_error: largest leave-one-out score (mean ``|ln|`` error) of a reliable row.
        max_extrapolation: a row is reliable only up to this many times the largest
            observed size.
        max_disagreement: largest :meth:`AutoModel.disagreement` (``|ln|``) of a
            reliable row.
        candidates: comma-separated candidate names, in order of preference.
        refit_tol: an application's choice is made again only when its set of sizes
            (or ADEPT's target) changes; when only its averaged times move, the chosen
            model is refitted, and not even that when none moved by more than this
            (relative; ADEPT's rule: smaller moves are measurement noise).
        max_sizes: the selection uses the sizes nearest the target, at most this many.
    """

    name = "auto"
    _grid_ok = True
    _lazy_refit = True  # applications are fitted independently: refit when next read
    _tables_follow_model = True  # _shape reads only the model: a kept model keeps its tables

    def _fit_global(self, observations: Any) -> None:
        self._models: dict[int, AutoModel] = {}

    def __init__(
        self,
        margin: float = 0.8,
        min_adept_sizes: int = 4,
        max_loo_error: float = 0.10,
        max_extrapolation: float = 4.0,
        max_disagreement: float = 0.15,
        candidates: str = ",".join(CANDIDATES),
        refit_tol: float = 0.02,
        max_sizes: int | None = 8,
    ) -> None:
        self.margin = margin
        self.min_adept_sizes = min_adept_sizes
        self.max_loo_error = max_loo_error
        self.max_extrapolation = max_extrapolation
        self.max_disagreement = max_disagreement
        self.refit_tol = refit_tol
        self.max_sizes = max_sizes
        self.candidates = candidates

    def _candidate_tuple(self) -> tuple[str, ...]:
        return tuple(c.strip() for c in str(self.candidates).split(",") if c.strip())

    def _fit_app(self, app: int, runs: AppRuns, work: np.ndarray) -> AutoModel:
        tau = np.asarray(_normalised_tau(self, runs, work), dtype=np.float64)
        nodes = np.asarray(runs["nodes"], dtype=np.float64)
        ok = np.isfinite(tau) & (tau > 0) & np.isfinite(nodes) & (nodes >= 1)
        if not ok.any():
            raise ValueError("no usable runs")
        req = np.asarray(runs["requested_nodes"], dtype=np.float64)
        req = req[np.isfinite(req) & (req >= 1)]
        # np.median's value, rounded half to even (as np.round)
        target = float(round(array_median(req))) if req.size else None
        sizes, avg = size_averages(nodes[ok], tau[ok])
        tgt = float(sizes.max()) if target is None else target
        old = self._models.get(app)
        if old is not None and np.array_equal(old.sizes, sizes) and old.target == tgt:
            if np.all(np.abs(avg - old.avg) <= self.refit_tol * old.avg):
                return old  # nothing moved beyond the noise: the same model
            # the same sizes: keep the choice, refit the chosen model
            kept = replace(old, model=None, avg=avg, yardsticks=())
            model = refit_chosen(kept, self.max_sizes)
            self._models[app] = model
            return model
        model = _select(
            sizes,
            avg,
            tgt,
            margin=self.margin,
            min_adept_sizes=self.min_adept_sizes,
            candidates=self._candidate_tuple(),
            adept_kwargs={},
            max_sizes=self.max_sizes,
            exact_scores=False,
        )
        self._models[app] = model
        if not log.isEnabledFor(logging.DEBUG):  # (the record's arguments are built here)
            return model
        log.debug(
            "auto: application %s -> %s (leave-one-out %s, sizes %s)",
            app,
            model.chosen,
            {
                k: f">={v:.4f}" if k in model.bounded else round(v, 4)
                for k, v in model.scores.items()
            },
            model.sizes.tolist(),
        )
        return model

    def chosen_models(self) -> dict[int, str]:
        """The model chosen per fitted application (``application -> name``)."""
        self._check_fitted()
        self._flush()
        return {app: s.model.chosen for app, s in self.state_.items() if s is not None}

    def _reliable(self, model: AutoModel, nodes: np.ndarray) -> np.ndarray:
        n = np.asarray(nodes, dtype=np.float64)
        if not (len(model.sizes) >= 3 and model.loo_error <= self.max_loo_error):
            return np.zeros(len(n), dtype=bool)  # (a NaN score compares False)
        return (n <= self.max_extrapolation * model.n_max) & (
            model.disagreement(n) <= self.max_disagreement
        )

    def _uncertainty(self, app: int, model: Any, nodes: np.ndarray) -> np.ndarray | None:
        err = model.loo_error
        if err != err:
            return None
        return np.expm1(np.maximum(err, model.disagreement(nodes)))

    def _shape(self, app, model, node_type, nodes, freq_ghz):
        fmax = self.info_.fmax(node_type, freq_ghz)
        tau = model.tau(nodes) * fmax / freq_ghz
        power = self.info_.busy_power(node_type, freq_ghz)
        return tau, power, self._reliable(model, nodes)

    def _compute_table(self, app, state, name, meta):
        """:func:`node_column_table` (same values as the plain table)."""
        if type(self)._shape is not AutoPredictor._shape:
            return super()._compute_table(app, state, name, meta)
        model = state.model
        got = node_column_table(self, model.tau, lambda n: self._reliable(model, n), name, meta)
        return super()._compute_table(app, state, name, meta) if got is None else got
