"""A node-count predictor combined with a frequency predictor (e.g. ADEPT x fluid).

``time(n, f) = time_node(n, Fmax) * time_freq(n, f) / time_freq(n, Fmax)``:
the node predictor answers at the top frequency, the frequency predictor
supplies the relative slow-down at ``f`` (for the fluid model
``(1 - alpha) + alpha Fmax/f``, independent of ``n``). Power per node comes
from the frequency predictor; energy ``= time * power * n``. A row is reliable
when both parts are.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import pandas as pd

from predictors.base import (
    GridShape,
    Observations,
    Prediction,
    Predictor,
    Queries,
    RunBatch,
    grid_cell,
)
from predictors.baselines import (
    _MISSING,
    PerApplicationPredictor,
    PlatformInfo,
    _run_blocks,
    and_flags,
    fallback_cell_time,
    frozen_array,
    scaled_ratio,
    scaled_ratio_column,
    scaled_ratio_max,
    scaled_ratio_row,
)

_isfinite = math.isfinite


def _fresh(p: Predictor) -> Predictor:
    """An unfitted copy with the same hyper-parameters (sub-predictors are never fitted in place)."""
    return type(p)(**p.get_params())


class CompositePredictor(Predictor):
    """Node-count predictor x frequency predictor (see the module docstring).

    Args:
        node_predictor: predicts the node dimension at ``Fmax`` (e.g. ADEPT, Amdahl, LBM).
        freq_predictor: predicts the frequency dimension and power (e.g. fluid).
    """

    name = "composite"

    def __init__(
        self, node_predictor: Predictor | None = None, freq_predictor: Predictor | None = None
    ) -> None:
        self.node_predictor = node_predictor
        self.freq_predictor = freq_predictor

    @property
    def learns_from_runs(self) -> bool:
        return bool(
            getattr(self.node_predictor, "learns_from_runs", True)
            or getattr(self.freq_predictor, "learns_from_runs", True)
        )

    @property
    def accepts_run_batch(self) -> bool:  # type: ignore[override]
        """Whether :meth:`update` may be given a RunBatch (both fitted parts accept one)."""
        return bool(
            type(self).update is CompositePredictor.update
            and getattr(self.__dict__.get("node_"), "accepts_run_batch", False)
            and getattr(self.__dict__.get("freq_"), "accepts_run_batch", False)
        )

    def fit(self, observations: Observations) -> CompositePredictor:
        if self.node_predictor is None or self.freq_predictor is None:
            raise ValueError("CompositePredictor needs node_predictor and freq_predictor")
        self.node_ = _fresh(self.node_predictor).fit(observations)
        self.freq_ = _fresh(self.freq_predictor).fit(observations)
        self.info_ = PlatformInfo(observations.platform, observations.runs, observations.benchmarks)
        self.observations_ = observations
        # (node_type, frequencies) -> node type name, for the grid_shape fast path
        self._shape_names: dict[tuple[Any, bytes], str] = {}
        self._fallback_plans: dict[Any, Any] = {}  # _fallback_plan
        # whether the parts' platform facts are the same (update shares the runs' facts)
        self._same_facts: bool | None = None
        return self

    def update(self, new_runs: pd.DataFrame | RunBatch) -> CompositePredictor:
        """Pass the new runs to both parts (each refits only what it needs); parts that
        are :class:`~predictors.baselines.PerApplicationPredictor` share one split of
        the runs per application and, when their platform facts are the same, one
        store per application (twin stores: one append for both parts; see
        :meth:`~predictors.baselines.PerApplicationPredictor._append_blocks`)."""
        self._check_fitted()
        node, freq = self.node_, self.freq_
        if len(new_runs) and self._plain(node, freq)[0]:
            assert isinstance(node, PerApplicationPredictor)
            assert isinstance(freq, PerApplicationPredictor)
            node._check_fitted()
            freq._check_fitted()
            blocks = _run_blocks(new_runs)
            same = self.__dict__.get("_same_facts")
            if same is None:
                same = self._same_facts = _same_platform_facts(node.info_, freq.info_)
            if same:  # one append per block: the parts' stores are twins
                node._append_blocks(blocks, twin=freq)
            else:
                node._append_blocks(blocks)
                freq._append_blocks(blocks)
            apps = [app for app, _, _ in blocks]
            node._blocks_added(new_runs, apps)
            freq._blocks_added(new_runs, apps)
            return self
        node.update(new_runs)
        freq.update(new_runs)
        return self

    def predict(self, queries: Queries) -> Prediction:
        self._check_fitted()
        n = len(queries)
        names = self.info_.names(queries)
        fmax = self.info_.fmax(names, queries.freq_ghz)
        at_max = _with_freq(queries, fmax)
        node = self.node_.predict(at_max)
        both = self.freq_.predict(_concat(queries, at_max))
        t_f, t_max = both.time_s[:n], both.time_s[n:]
        factor = np.where(
            (t_max > 0) & np.isfinite(t_f / t_max), t_f / t_max, fmax / queries.freq_ghz
        )
        time = node.time_s * factor
        power = both.power_w[:n]
        reliable = node.reliable & both.reliable[:n]
        unc = node.uncertainty
        return Prediction(time, power, time * power * queries.nodes, reliable, unc)

    def predict_grid(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`predict` of one job on the grid ``sizes x freqs`` (see
        :meth:`predictors.baselines.PerApplicationPredictor.predict_grid`);
        ``None`` when a part has no grid fast path.

        One configuration of an application that neither part has a model for
        (a rigid decision for a new application) is answered in plain Python
        from the parts' fallbacks (:meth:`_fallback_one`, same values)."""
        self._check_fitted()
        if len(sizes) == 1 and len(freqs) == 1:
            got = self._fallback_one(
                application, node_type, sizes[0], freqs, requested_nodes, requested_time_s
            )
            if got is not None:
                time, power, energy = got
                return (
                    np.array([[time]]),
                    np.array([[power]]),
                    np.array([[energy]]),
                    np.zeros((1, 1), dtype=bool),
                )
        return self._predict_grid(
            application, node_type, sizes, freqs, requested_nodes, requested_time_s
        )

    def predict_one(
        self,
        application: int,
        node_type: str | None,
        nodes: int,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[float, float, float, bool] | None:
        """:meth:`predict_grid` of the one-cell grid ``[nodes] x freqs`` (``freqs``: one
        P-state) as Python values ``(time_s, power_w, energy_j, reliable)``; ``None``
        when :meth:`predict_grid` is. A chooser's rigid decisions: an application that
        neither part has a model for is answered without arrays (:meth:`_fallback_one`)
        unless a subclass answers :meth:`predict_grid` its own way."""
        self._check_fitted()
        grid_fn = self.predict_grid
        if type(self).predict_grid is CompositePredictor.predict_grid:
            if len(freqs) == 1:
                got = self._fallback_one(
                    application, node_type, nodes, freqs, requested_nodes, requested_time_s
                )
                if got is not None:
                    return (*got, False)
            grid_fn = self._predict_grid  # (predict_grid without the one-cell path above)
        return grid_cell(
            grid_fn(
                application, node_type, np.array([nodes]), freqs, requested_nodes, requested_time_s
            )
        )

    def _predict_grid(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`predict_grid` from the parts' grids."""
        node_grid = getattr(self.node_, "predict_grid", None)
        freq_grid = getattr(self.freq_, "predict_grid", None)
        if node_grid is None or freq_grid is None:
            return None
        name = self.info_.default if node_type is None else str(node_type)
        info = self.info_.get(name)
        if info is None:
            return None
        top = info.freqs_ghz[-1:]
        node = node_grid(application, name, sizes, top, requested_nodes, requested_time_s)
        if node is None:
            return None
        both = freq_grid(application, name, sizes, freqs, requested_nodes, requested_time_s)
        if both is None:
            return None
        fmax = float(top[0])
        if freqs[-1] == fmax:  # the Fmax column of the grid is the same computation
            t_max = both[0][:, -1:]
        else:
            at_max = freq_grid(application, name, sizes, top, requested_nodes, requested_time_s)
            if at_max is None:
                return None
            t_max = at_max[0]
        t_f = both[0]
        with np.errstate(all="ignore"):
            ratio = t_f / t_max
            factor = np.where((t_max > 0) & np.isfinite(ratio), ratio, fmax / freqs)
        time = node[0] * factor
        power = both[1]
        reliable = node[3] & both[3]
        return time, power, time * power * sizes[:, None], reliable

    def _fallback_one(
        self,
        application: int,
        node_type: str | None,
        nodes: Any,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[float, float, float] | None:
        """:meth:`predict_grid` of the one-cell grid ``[nodes] x freqs`` as ``(time_s,
        power_w, energy_j)`` when both parts (plain
        :class:`~predictors.baselines.PerApplicationPredictor` grids) answer it with
        their fallback: the same operations on Python floats, in the same order
        (node part first, each part's deferred refit first). ``None``: ask the
        general path (a part has a model, or the fast path does not apply).

        What does not depend on the job (the node type's facts in each part, at the
        job's P-state and at ``Fmax``) is kept per node type and P-state
        (:meth:`_fallback_plan`); a job costs the parts' model checks
        (:meth:`~predictors.baselines.PerApplicationPredictor._has_model`) and the
        fallback times (:func:`~predictors.baselines.fallback_cell_time`)."""
        node, freq = self.node_, self.freq_
        if not self._plain(node, freq)[1]:
            return None
        assert isinstance(node, PerApplicationPredictor)
        assert isinstance(freq, PerApplicationPredictor)
        plan = self._fallback_plan(node_type, freqs)
        if plan is None:
            return None
        n = int(nodes)
        if n != nodes:
            return None
        node_facts, freq_facts, max_facts, fmax_over_f = plan
        app = int(application)
        # each part as its _fallback_one: node count in range, no model after its refit
        if not 1 <= n <= node_facts[0] or node._has_model(app):
            return None
        if not 1 <= n <= freq_facts[0] or freq._has_model(app):
            return None
        rt, rn = float(requested_time_s), float(requested_nodes)
        t_node = fallback_cell_time(rt, rn, n, node_facts[1])
        t_f = fallback_cell_time(rt, rn, n, freq_facts[1])
        power = freq_facts[2]
        if max_facts is None:  # f is Fmax: the Fmax column of the grid is the same computation
            t_max = t_f
        else:
            if not 1 <= n <= max_facts[0]:
                return None
            t_max = fallback_cell_time(rt, rn, n, max_facts[1])
        # np.where((t_max > 0) & np.isfinite(t_f / t_max), t_f / t_max, fmax / f)
        factor = fmax_over_f
        if t_max > 0:
            ratio = t_f / t_max
            if math.isfinite(ratio):
                factor = ratio
        time = t_node * factor
        return time, power, time * power * n

    def _fallback_plan(self, node_type: str | None, freqs: np.ndarray) -> tuple[Any, ...] | None:
        """What :meth:`_fallback_one` reads besides the job, kept per node type and
        P-state: ``(node part's facts at Fmax, frequency part's facts at f, its facts at
        Fmax or None when f is Fmax, Fmax / f)`` (facts:
        :meth:`~predictors.baselines.PerApplicationPredictor._one_cell_facts`);
        ``None`` when :meth:`_fallback_one` never answers there (an unknown node type,
        a part without a fallback answer at these frequencies, ``f`` = 0)."""
        plans = self._fallback_plans  # (made by fit, which _fallback_one's parts need)
        key = (node_type, freqs.tobytes())
        got = plans.get(key, _MISSING)
        if got is not _MISSING:
            return got
        got = None
        node: PerApplicationPredictor = self.node_  # type: ignore[assignment]
        freq: PerApplicationPredictor = self.freq_  # type: ignore[assignment]
        name = self.info_.default if node_type is None else str(node_type)
        info = self.info_.get(name)
        if info is not None:
            top = info.freqs_ghz[-1:]
            fmax, f = float(top[0]), float(freqs[0])
            node_facts = node._one_cell_facts(name, top)
            freq_facts = freq._one_cell_facts(name, freqs)
            max_facts = None if f == fmax else freq._one_cell_facts(name, top)
            if (
                node_facts is not None
                and freq_facts is not None
                and (f == fmax or max_facts is not None)
                and f != 0.0  # (numpy would divide by zero)
            ):
                got = (node_facts, freq_facts, max_facts, fmax / f)
        if len(plans) >= 256:  # bounded (a handful of node types and P-states)
            plans.clear()
        plans[key] = got
        return got

    def grid_shape(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[GridShape, float] | None:
        """:meth:`predict_grid` as a cached shape and the job's scale (see
        :meth:`predictors.baselines.PerApplicationPredictor.grid_shape`).

        Shape: the node part's shape at ``Fmax`` times the frequency part's
        relative slow-down ``t(n, f) / t(n, Fmax)`` (scale-free); power and
        reliability as in :meth:`predict_grid`; the scale is the node part's.
        ``None`` when a part has no shape for the job.

        When both parts are :class:`~predictors.baselines.PerApplicationPredictor`
        (their own ``grid_shape``), the answer for an application, node type,
        sizes and frequencies is kept with the node part's tables and reused
        while both parts' tables are unchanged (:meth:`_shape_hit`): a repeated
        question costs the two parts' deferred refits (as before), two checks
        and the job's scales.
        """
        names = self.__dict__.get("_shape_names")
        if names is not None:
            fkey = freqs.tobytes()
            name = names.get((node_type, fkey))
            if name is not None:
                got = self._shape_hit(
                    application,
                    node_type,
                    name,
                    sizes,
                    freqs,
                    fkey,
                    requested_nodes,
                    requested_time_s,
                )
                if got is not False:
                    return got  # type: ignore[return-value]
        return self._grid_shape(
            application, node_type, sizes, freqs, requested_nodes, requested_time_s
        )

    def _shape_hit(
        self,
        application: int,
        node_type: str | None,
        name: str,
        sizes: np.ndarray,
        freqs: np.ndarray,
        fkey: bytes,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[GridShape, float] | bool | None:
        """:meth:`grid_shape` from a kept answer (see there); ``False`` when there is
        none or the node part's tables changed since (then the general path answers).

        The same steps as the general path, in the same order, on what the kept
        answer holds (both parts' shapes, tables and grid facts): the node part's
        deferred refit and its tables still current
        (:meth:`~predictors.baselines.PerApplicationPredictor._current_tables`),
        its scale for the job
        (:meth:`~predictors.baselines.PerApplicationPredictor._job_scale`) and
        whether its shape is usable, then the same for the frequency part (whose
        tables must be the kept ones). When only the frequency part's tables
        changed (the fluid part is refitted at every update of the application),
        the general path goes on from its frequency step
        (:meth:`_grid_shape_freq`) with the node part's entry and scale found here,
        which its node step would find again (the same kept shape in the same
        tables: the answer's node shape is that of its node tables). The kept
        answers of one application, node type name and frequencies are a short
        list told apart by the sizes: the same array object when the caller
        passes a read-only array it owns (the chooser's candidate sizes, one array
        per node type; see :func:`~predictors.baselines.frozen_array`), else the
        sizes' bytes (compared, not hashed: the sizes are usually every node
        count of the type, 44 KB on CEA-Curie)."""
        node: PerApplicationPredictor = self.node_  # type: ignore[assignment]
        freq: PerApplicationPredictor = self.freq_  # type: ignore[assignment]
        if not (node._grid_ok and freq._grid_ok):
            return False
        app = int(application)
        cur = node._current_tables(app)  # after the node part's deferred refit
        if cur is None:
            return False
        nstate, ntables = cur
        kept = ntables.get(("composite", name, fkey))
        if kept is None:
            return False
        for hit in kept:
            if hit[0] is sizes:  # the same read-only array: the same sizes (frozen_array)
                break
        else:
            skey = sizes.tobytes()
            for hit in kept:
                if hit[1] == skey:
                    break
            else:
                return False
        ftup: tuple[Any, Any, dict[Any, Any]]
        _, skey, nshape, nref, nmeta, ftup, fshape, fref, fmeta, shape = hit
        rt, rn = float(requested_time_s), float(requested_nodes)
        scale = node._job_scale(app, nstate, ntables, name, nmeta, nref, rt, rn)
        if not (scale > 0 and _isfinite(scale * nshape.time_max)):
            return None  # the node part has no shape for this job
        # frequency part: the same checks, and its tables must be the kept ones
        cur = freq._current_tables(app)
        if cur is None or cur[1] is not ftup[2]:
            node_entry = (nshape, nref, nmeta, ntables, scale)
            return self._grid_shape_freq(
                node_type, name, sizes, skey, freqs, fkey, rt, rn, app, node_entry
            )
        fscale = freq._job_scale(app, cur[0], ftup[2], name, fmeta, fref, rt, rn)
        if not (fscale > 0 and _isfinite(fscale * fshape.time_max)):
            return None  # the frequency part has no shape for this job
        if not _isfinite(scale * shape.time_max):  # scale > 0 already
            return None
        return shape, scale

    def _grid_shape(
        self,
        application: int,
        node_type: str | None,
        sizes: np.ndarray,
        freqs: np.ndarray,
        requested_nodes: float,
        requested_time_s: float,
    ) -> tuple[GridShape, float] | None:
        """:meth:`grid_shape`'s general path (keeps the answer for the fast one)."""
        self._check_fitted()
        node_fn = getattr(self.node_, "grid_shape", None)
        freq_fn = getattr(self.freq_, "grid_shape", None)
        if node_fn is None or freq_fn is None:
            return None
        name = self.info_.default if node_type is None else str(node_type)
        info = self.info_.get(name)
        if info is None or freqs[-1] != info.freqs_ghz[-1]:
            return None
        top = info.freqs_ghz[-1:]
        node_p = self.node_
        if not self._plain(node_p, self.freq_)[2]:
            node = node_fn(application, name, sizes, top, requested_nodes, requested_time_s)
            if node is None:
                return None
            freq = freq_fn(application, name, sizes, freqs, requested_nodes, requested_time_s)
            if freq is None:
                return None
            return self._combine(node, freq[0], freqs)
        # both parts are PerApplicationPredictors: their grid_shape, step by step
        assert isinstance(node_p, PerApplicationPredictor)
        rt, rn = float(requested_time_s), float(requested_nodes)
        skey = node_p._sizes_bytes(sizes)  # one bytes object: hashed once for the keys
        ne = node_p._shape_entry(application, name, sizes, top, skey)
        if ne is None:
            return None
        nshape, nref, nmeta, _, app, nstate, ntables = ne
        scale = node_p._job_scale(app, nstate, ntables, name, nmeta, nref, rt, rn)
        if not nshape.usable(scale):
            return None
        node_entry = (nshape, nref, nmeta, ntables, scale)
        return self._grid_shape_freq(
            node_type, name, sizes, skey, freqs, freqs.tobytes(), rt, rn, app, node_entry
        )

    def _grid_shape_freq(
        self,
        node_type: str | None,
        name: str,
        sizes: np.ndarray,
        skey: bytes,
        freqs: np.ndarray,
        fkey: bytes,
        rt: float,
        rn: float,
        app: int,
        node_entry: tuple[GridShape, Any, tuple[Any, ...], dict[Any, Any], float],
    ) -> tuple[GridShape, float] | None:
        """:meth:`_grid_shape` of two plain parts from the frequency part's step on,
        given the node part's entry and the job's scale (its shape usable with it):
        the frequency part's shape and scale, the combined shape, and the answer kept
        with the node part's tables for :meth:`_shape_hit`. ``skey``, ``fkey``: the
        sizes' and frequencies' bytes."""
        nshape, nref, nmeta, ntables, scale = node_entry
        node_p: PerApplicationPredictor = self.node_  # type: ignore[assignment]
        freq_p: PerApplicationPredictor = self.freq_  # type: ignore[assignment]
        fe = freq_p._shape_entry(app, name, sizes, freqs, skey)
        if fe is None:
            return None
        fshape, fref, fmeta, _, _, fstate, ftables = fe
        fscale = freq_p._job_scale(app, fstate, ftables, name, fmeta, fref, rt, rn)
        if not fshape.usable(fscale):
            return None
        shape = self._combined(nshape, fshape, freqs, fkey)
        ntup, ftup = node_p._app_tables.get(app), freq_p._app_tables.get(app)
        if ntup is not None and ntup[2] is ntables and ftup is not None and ftup[2] is ftables:
            same = sizes if frozen_array(sizes) else None  # recognised by identity
            hit = (same, skey, nshape, nref, nmeta, ftup, fshape, fref, fmeta, shape)
            kept = ntables.get(("composite", name, fkey))
            # the node part's tables now hold the frequency part's shape (which its
            # own budget may drop; the combined shape holds no table of its own):
            # count it in the node part's budget of table cells
            # (PerApplicationPredictor.table_cells_budget), less the shapes of the
            # answers it replaces (node tables kept over a refit that keeps the
            # model see several frequency shapes in turn)
            cells = fshape.time.size
            if kept is None:
                ntables[("composite", name, fkey)] = [hit]
            else:  # a few size sets at most: the answer for these sizes replaced
                left = []
                for h in kept:
                    if h[1] == skey:
                        cells -= h[6].time.size
                    else:
                        left.append(h)
                for h in left[:-7]:
                    cells -= h[6].time.size
                kept[:] = left[-7:]
                kept.append(hit)
            self._shape_names[(node_type, fkey)] = name
            node_p._count_cells(app, cells)
        if not shape.usable(scale):
            return None
        return shape, scale

    def _plain(self, node: Any, freq: Any) -> tuple[bool, bool, bool]:
        """Whether both parts learn, answer ``predict_grid`` and answer ``grid_shape``
        with :class:`~predictors.baselines.PerApplicationPredictor`'s own methods
        (:func:`_plain_updates`, :func:`_plain_grids`, :func:`_plain_shapes`), kept
        for these two part objects (their classes do not change)."""
        got = self.__dict__.get("_plain_parts")
        if got is None or got[0] is not node or got[1] is not freq:
            flags = (
                _plain_updates(node) and _plain_updates(freq),
                _plain_grids(node) and _plain_grids(freq),
                _plain_shapes(node) and _plain_shapes(freq),
            )
            got = self._plain_parts = (node, freq, flags)
        return cast(tuple[bool, bool, bool], got[2])

    @staticmethod
    def _combined(
        node_shape: GridShape, freq_shape: GridShape, freqs: np.ndarray, fkey: bytes | None = None
    ) -> GridShape:
        """The composite shape of two parts' shapes (kept in the node shape's memo);
        ``fkey``: ``freqs.tobytes()`` when the caller has it."""
        key = ("composite", freqs.tobytes() if fkey is None else fkey)
        got = node_shape.memo.get(key)
        if got is None or got[0] is not freq_shape:
            reliable = and_flags(node_shape.reliable, freq_shape.reliable)
            shape = RatioShape(node_shape.time, freq_shape.time, freq_shape.power_w, reliable)
            got = node_shape.memo[key] = (freq_shape, shape)
        return cast(GridShape, got[1])

    def _combine(
        self, node: tuple[GridShape, float], freq_shape: GridShape, freqs: np.ndarray
    ) -> tuple[GridShape, float] | None:
        node_shape, scale = node
        shape = self._combined(node_shape, freq_shape, freqs)
        if not shape.usable(scale):
            return None
        return shape, scale


class RatioShape(GridShape):
    """A composite's :class:`~predictors.base.GridShape`: ``time = scale * (table /
    table[:, -1:])`` (:func:`~predictors.baselines.scaled_ratio` of the node part's
    time at ``Fmax`` and the frequency part's time table), made when :attr:`time` is
    read and not kept. A chooser reads a column and a row of it
    (:meth:`time_column`, :meth:`time_row`: a size rule reads the ``Fmax`` column,
    a frequency rule the chosen size's row), computed alone with the same values,
    so the table is not made on the usual path (CEA-Curie: 5,544 node counts x 5
    clocks per shape) and the shape holds nothing but its parts' arrays.
    ``time_max`` is computed without the table
    (:func:`~predictors.baselines.scaled_ratio_max`); both parts' shapes are usable,
    so every cell of ``scale`` and ``table`` is finite and positive."""

    __slots__ = ("_scale", "_table")

    def __init__(
        self, scale: np.ndarray, table: np.ndarray, power_w: np.ndarray, reliable: np.ndarray
    ) -> None:
        self._scale = scale
        self._table = table
        super().__init__(None, power_w, reliable, scaled_ratio_max(scale, table))  # type: ignore[arg-type]

    @property
    def time(self) -> np.ndarray:
        return scaled_ratio(self._scale, self._table)

    @time.setter
    def time(self, value: np.ndarray | None) -> None:  # (GridShape.__init__'s; not kept)
        pass

    def time_column(self, j: int) -> np.ndarray:
        table = self._table
        if j == table.shape[1] - 1 and self._scale.shape[1] == 1:
            # the last column's ratios are x / x = 1 exactly (x finite and positive),
            # and s * 1 = s: the column is the scale
            return self._scale[:, 0]
        return scaled_ratio_column(self._scale, table, j)

    def time_row(self, i: int) -> np.ndarray:
        return scaled_ratio_row(self._scale, self._table, i)


def _same_platform_facts(a: PlatformInfo, b: PlatformInfo) -> bool:
    """Whether two parts' platform facts answer :meth:`_AppStore.facts
    <predictors.baselines._AppStore.facts>` alike: the same default node type and
    the same node types with the same frequencies (then the same top frequencies)."""
    if a.default != b.default or a.types.keys() != b.types.keys():
        return False
    for name, t in a.types.items():
        u = b.types[name]
        if t.freqs_ghz.shape != u.freqs_ghz.shape or t.freqs_ghz.tobytes() != u.freqs_ghz.tobytes():
            return False
    return True


def _plain_updates(p: Any) -> bool:
    """Whether ``p`` learns with :class:`PerApplicationPredictor`'s own ``update``."""
    return (
        isinstance(p, PerApplicationPredictor)
        and type(p).update is PerApplicationPredictor.update
        and type(p)._add_blocks is PerApplicationPredictor._add_blocks
        and type(p)._append_blocks is PerApplicationPredictor._append_blocks
        and type(p)._blocks_added is PerApplicationPredictor._blocks_added
    )


def _plain_grids(p: Any) -> bool:
    """Whether ``p`` answers ``predict_grid`` with :class:`PerApplicationPredictor`'s own."""
    return (
        isinstance(p, PerApplicationPredictor)
        and type(p).predict_grid is PerApplicationPredictor.predict_grid
    )


def _plain_shapes(p: Any) -> bool:
    """Whether ``p`` answers ``grid_shape`` with :class:`PerApplicationPredictor`'s own
    (and its own helpers, which the composite's kept answers repeat inline)."""
    cls = type(p)
    base = PerApplicationPredictor
    return (
        isinstance(p, base)
        and cls.grid_shape is base.grid_shape
        and cls._shape_entry is base._shape_entry
        and cls._current_tables is base._current_tables
        and cls._grid_tables is base._grid_tables
        and cls._job_scale is base._job_scale
    )


def _with_freq(queries: Queries, freq: np.ndarray) -> Queries:
    kw: dict[str, Any] = {name: getattr(queries, name) for name in _FIELDS}
    kw["freq_ghz"] = freq
    return Queries(**kw)


def _concat(a: Queries, b: Queries) -> Queries:
    kw: dict[str, Any] = {}
    for name in _FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        kw[name] = (
            None if x is None or y is None else np.concatenate([np.asarray(x), np.asarray(y)])
        )
    return Queries(**kw)


_FIELDS = (
    "application",
    "nodes",
    "freq_ghz",
    "node_type",
    "cores",
    "requested_nodes",
    "requested_time_s",
    "job_index",
)

__all__ = ["CompositePredictor"]
