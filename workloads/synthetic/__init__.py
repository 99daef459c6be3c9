"""Synthetic workload generators: Lublin-Feitelson (2003) and Downey (1997).

``generate(model, n_jobs, nodes, seed=..., **params)`` returns a
:class:`~workloads.schema.Trace` with the SWF columns, ready for
:func:`workloads.write_swf`. Every random draw comes from
``numpy.random.default_rng(seed)``: the same arguments give the same trace,
byte for byte once written.

Models:

* ``"lublin"``: rigid jobs of Lublin & Feitelson, "The workload on parallel
  supercomputers: modeling the characteristics of rigid jobs", JPDC 63(11),
  2003 (:mod:`workloads.synthetic.lublin`, :class:`LublinParams`).
* ``"downey"``: moldable jobs of Downey, "A parallel workload model and its
  implications for processor allocation", HPDC 1997
  (:mod:`workloads.synthetic.downey97`, :class:`DowneyParams`).

``params`` may be a whole parameter object (``params=LublinParams(...)``) or
fields of the model's parameter class (``classes="batch"``, ``load=0.9``).

Requested times (user runtime estimates): a model without them would let the
engine plan with exact runtimes (an oracle). Every model's ``requests``
field chooses them: ``"tsafrir2005"`` (Tsafrir, Etsion & Feitelson,
"Modeling User Runtime Estimates", JSSPP 2005; :mod:`workloads.synthetic.tsafrir05`;
the default of ``"lublin"``), ``"uniform"`` (Downey's own overestimate
factor, the default of ``"downey"``) or ``"none"``.
"""

from __future__ import annotations

from typing import Any

from energysched.errors import ConfigError
from workloads.schema import Trace
from workloads.synthetic._common import check_positive_int, resolve_params
from workloads.synthetic.downey97 import DowneyParams, generate_downey
from workloads.synthetic.lublin import (
    LUBLIN_BATCH,
    LUBLIN_COMBINED,
    LUBLIN_INTERACTIVE,
    LublinClassParams,
    LublinParams,
    daily_cycle_weights,
    generate_lublin,
)
from workloads.synthetic.tsafrir05 import RequestDraw, request_histogram, tsafrir05_requests

__all__ = [
    "LUBLIN_BATCH",
    "LUBLIN_COMBINED",
    "LUBLIN_INTERACTIVE",
    "MODELS",
    "DowneyParams",
    "LublinClassParams",
    "LublinParams",
    "RequestDraw",
    "daily_cycle_weights",
    "generate",
    "generate_downey",
    "generate_lublin",
    "request_histogram",
    "tsafrir05_requests",
]

#: Known model names -> (generator, parameter class).
MODELS: dict[str, tuple[Any, type]] = {
    "lublin": (generate_lublin, LublinParams),
    "downey": (generate_downey, DowneyParams),
}


def generate(model: str, n_jobs: int, nodes: int, *, seed: int = 0, **params: Any) -> Trace:
    """Generate ``n_jobs`` jobs of a synthetic workload model for ``nodes`` processors.

    Args:
        model: ``"lublin"`` or ``"downey"`` (case-insensitive).
        n_jobs: number of jobs (>= 1).
        nodes: machine size (>= 1); no job is larger.
        seed: seed of ``numpy.random.default_rng``.
        **params: ``params=<LublinParams | DowneyParams>`` and/or fields of the
            model's parameter class, overriding the defaults.

    Raises:
        ConfigError: unknown model (the message lists the known ones),
            ``n_jobs``/``nodes`` < 1 (key names the argument), unknown or
            invalid parameter.
    """
    key = model.lower() if isinstance(model, str) else None
    if key not in MODELS:
        raise ConfigError("model", f"unknown workload model {model!r}; known: {', '.join(MODELS)}")
    n_jobs = check_positive_int("n_jobs", n_jobs)
    nodes = check_positive_int("nodes", nodes)
    generator, kind = MODELS[key]
    base = params.pop("params", None)
    resolved = resolve_params(kind, base, params, model=key)
    return generator(n_jobs, nodes, seed=seed, params=resolved)
