"""Built-in policies: one factory per name, each a :class:`~policies.backfilling.QueuePolicy`.

Every factory takes keyword parameters only (strings from the command line
are converted to the type of the parameter's default) and a ``predictor``
(registry spec such as ``"adept+fluid"``, ``"oracle"``, ``"module:Class"``,
or a :class:`~predictors.base.Predictor`).

=========================  ==========================================================
name                       decision
=========================  ==========================================================
``fcfs``                   rigid, no backfilling
``easy``                   rigid, EASY backfilling
``easy++``                 rigid, EASY planned with user-history job lengths
                           (Tsafrir, Etsion & Feitelson 2007)
``conservative``           rigid, conservative backfilling
``easy-min-time``          size: minimum predicted runtime
``easy-min-energy``        size: minimum predicted energy
``easy-min-edp``           size: minimum predicted energy-delay product
``easy-min-energy-slack``  size: minimum energy with runtime <= (1 + slack) x rigid
``easy-efficiency``        size: largest with predicted efficiency >= ``efficiency``
``easy-load-adaptive``     size: fastest within an equipartition share of the type
``easy-energy-freq``       requested size, energy-optimal frequency
``easy-slack-freq``        requested size, lowest frequency within the slack
``easy-deadline-freq``     requested size, lowest frequency meeting the deadline
``easy-energy-size-freq``  minimum-energy size, then energy-optimal frequency
``easy-slack-size-freq``   minimum-energy size within the slack, then lowest
                           frequency keeping the total within the slack
``easy-pareto-deadline``   joint (n, c, f): minimum energy meeting the deadline
``easy-pareto-budget``     joint (n, c, f): minimum runtime within the energy budget
                           (both: sizes within ``size_range`` of the request, every
                           core count, ``hybrid`` predictor by default)
``easy-energy-bsld``       per batch: lowest-energy clock whose predicted bounded
                           slowdown (wait so far included) stays under a threshold;
                           top clock while the queue is long (:mod:`policies.service`)
``easy-energy-bsld-off``   the same, idle nodes off after 600 s
``easy-util-freq``         per batch: lowest-energy clock within the BSLD threshold
                           only while utilisation is under a threshold
``easy-util-freq-off``     the same, idle nodes off after 600 s
=========================  ==========================================================

The rigid ones (``fcfs``, ``easy``, ``conservative``) use no predictor by
default; given one they keep the rigid configuration but plan with predicted
runtimes (reservations from predictions). The others default to
``predictor="auto+fluid"`` (the Pareto ones to ``"hybrid"``; ``auto+fluid`` validates better than ``adept+fluid``
on measured curves, see ``energysched predictors validate``). Every factory
accepts ``backfill`` (``"none"``,
``"easy"``, ``"conservative"``), ``order`` (:data:`policies.ordering.ORDERINGS`)
the power parameters ``idle_timeout_s``, ``reserve_nodes``,
``power_cap_w``, ``power_margin`` and ``job_length`` (the job-length
predictor of reservations and predictions, :mod:`predictors.job_length`:
``requested`` for ``fcfs``, ``easy`` and ``conservative``, ``user-history``
for ``easy++``, :data:`DEFAULT_JOB_LENGTH` (``request-history``, the most accurate on
the shared traces) for the predictor-driven ones); the rule parameters are
those of
:class:`~policies.choosers.PredictiveChooser` that its rules read
(:func:`~policies.choosers.rule_params_in_effect`; ``energysched policies list``
shows them). A rule parameter a policy's rules never read (``slack`` for
``easy-energy-freq``, ``size_range`` unless ``sizes = "range"``, any rule
parameter of a rigid policy without a predictor, ``sizes`` of a service-aware
policy that is not moldable) is refused with a :class:`ConfigError`, not
ignored: a sweep over it would replay the same schedule.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from energysched.errors import ConfigError
from policies.backfilling import QueuePolicy
from policies.choosers import PredictiveChooser, RigidChooser, rule_params_in_effect

#: The job-length predictor of the predictor-driven built-ins (the value of
#: :data:`predictors.job_length.DEFAULT_JOB_LENGTH`, kept here so that importing
#: the policies does not import the predictors; a test checks they agree).
DEFAULT_JOB_LENGTH = "request-history"

DEFAULT_PREDICTOR = "auto+fluid"

_RULE_PARAMS: dict[str, Any] = {
    "sizes": "all",
    "size_range": 2.0,
    "cores": "all",
    "slack": 0.1,
    "efficiency": 0.5,
    "deadline_factor": 1.0,
    "budget_factor": 1.0,
    "min_runs": 3,
    "require_reliable": False,
    "safety_factor": 1.0,
    "explore_runs": 2,
    "refit_growth": 0.5,
}
#: the rule parameters of the built-in policies (a policy takes those its rules read)
RULE_PARAMETERS: frozenset[str] = frozenset(_RULE_PARAMS)
_COMMON_PARAMS: dict[str, Any] = {
    "order": "fcfs",
    "idle_timeout_s": None,
    "reserve_nodes": None,
    "power_cap_w": None,
    "power_margin": 0.0,
    "job_length": "requested",
}
_PARAM_TYPES: dict[str, type] = {
    "size_range": float,
    "slack": float,
    "efficiency": float,
    "deadline_factor": float,
    "budget_factor": float,
    "min_runs": int,
    "require_reliable": bool,
    "safety_factor": float,
    "explore_runs": int,
    "refit_growth": float,
    "idle_timeout_s": float,
    "reserve_nodes": int,
    "power_cap_w": float,
    "power_margin": float,
}


def _coerce(key: str, value: Any, types: dict[str, type] | None = None) -> Any:
    """Convert command-line strings to the parameter's type (``types``, default
    :data:`_PARAM_TYPES`)."""
    kind = (_PARAM_TYPES if types is None else types).get(key)
    if kind is None or not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() in ("none", "null", ""):
        return None
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(key, f"expected true or false, got {value!r}")
    try:
        return int(text) if kind is int else float(text)
    except ValueError:
        raise ConfigError(key, f"expected {kind.__name__}, got {value!r}") from None


def build_policy(
    *,
    name: str,
    predictor: Any = None,
    size: str = "rigid",
    freq: str = "fmax",
    joint: str | None = None,
    backfill: str = "easy",
    **params: Any,
) -> QueuePolicy:
    """A :class:`QueuePolicy` from rule names and parameters (the built-ins' common factory).

    ``predictor=None`` with the rigid rules gives the plain rigid chooser
    (planned with requested times); any other combination uses a
    :class:`PredictiveChooser`.
    """
    params = {k: _coerce(k, v) for k, v in params.items()}
    unknown = sorted(set(params) - set(_RULE_PARAMS) - set(_COMMON_PARAMS))
    if unknown:
        raise TypeError(f"unknown parameter(s) {', '.join(unknown)} of policy {name!r}")
    rule = {k: params[k] for k in _RULE_PARAMS if k in params}
    common = {k: params[k] for k in _COMMON_PARAMS if k in params}
    if predictor is None and size == "rigid" and freq == "fmax" and joint is None:
        chooser: Any = RigidChooser()
    else:
        chooser = PredictiveChooser(
            predictor=predictor if predictor is not None else DEFAULT_PREDICTOR,
            size=size,
            freq=freq,
            joint=joint,
            **rule,
        )
    return QueuePolicy(backfill=backfill, chooser=chooser, name=name, **common)


#: Defaults that differ from :data:`_RULE_PARAMS` per policy. The Pareto
#: policies search the whole (n, c, f) space their predictor models, bounded
#: by the job's size range (at most ``size_range`` x its requested nodes: no
#: job takes the whole machine unless asked to), with the ``hybrid``
#: predictor, up to 4 calibration runs per application after its first run,
#: and only the configurations the predictor answers reliably (no
#: prediction, no candidate).
_PARETO_DEFAULTS: dict[str, Any] = {
    "predictor": "hybrid",
    "sizes": "range",
    "cores": "all",
    "explore_runs": 4,
    "min_runs": 1,
    "require_reliable": True,
}
_DEFAULT_OVERRIDES: dict[str, dict[str, Any]] = {
    "easy-pareto-deadline": _PARETO_DEFAULTS,
    "easy-pareto-budget": _PARETO_DEFAULTS,
}


def _make_factory(
    name: str, doc: str, *, predictor: Any, backfill: str = "easy", **fixed: Any
) -> Callable[..., QueuePolicy]:
    """A documented keyword-only factory with the given rules fixed (a common
    parameter among ``fixed`` becomes that factory's default instead). It takes
    the rule parameters its rules read (:func:`~policies.choosers.rule_params_in_effect`)
    and refuses the others (:func:`_refuse_inert`)."""
    own = {k: fixed.pop(k) for k in list(fixed) if k in _COMMON_PARAMS}
    rules = (fixed.get("size", "rigid"), fixed.get("freq", "fmax"), fixed.get("joint"))
    in_effect = rule_params_in_effect(*rules, sizes="range")
    defaults = {
        "predictor": predictor,
        "backfill": backfill,
        **_COMMON_PARAMS,
        **own,
        **{k: v for k, v in _RULE_PARAMS.items() if k in in_effect},
    }
    defaults.update(_DEFAULT_OVERRIDES.get(name, {}))
    parameters = [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v) for k, v in defaults.items()
    ]
    signature = inspect.Signature(parameters)
    rigid = rules == ("rigid", "fmax", None)

    def factory(**kwargs: Any) -> QueuePolicy:
        _refuse_inert(name, kwargs, defaults)
        bound = signature.bind(**kwargs)  # TypeError on unknown parameters
        values = dict(defaults)
        values.update(bound.arguments)
        rule_given = sorted(k for k in bound.arguments if k in RULE_PARAMETERS)
        if rigid and values["predictor"] is None and rule_given:
            raise ConfigError(
                f"policy.{name}",
                f"{', '.join(rule_given)} {'acts' if len(rule_given) == 1 else 'act'} only "
                "with a predictor (planned with its predictions); give a predictor or drop "
                f"{'it' if len(rule_given) == 1 else 'them'}",
            )
        _refuse_idle_size_range(name, bound.arguments, values.get("sizes", "all"))
        return build_policy(name=name, **fixed, **values)

    factory.__name__ = name.replace("-", "_")
    factory.__qualname__ = factory.__name__
    factory.__doc__ = doc
    factory.__signature__ = signature  # type: ignore[attr-defined]
    return factory


def inert_parameters_message(name: str, inert: list[str]) -> str:
    """Why the rule parameters ``inert`` are refused by built-in policy ``name``
    (its rules never read them), naming the built-in policies that read each."""
    readers = {
        k: [
            n
            for n, f in BUILTIN_FACTORIES.items()
            if k in inspect.signature(f).parameters and n != name
        ]
        for k in inert
    }
    said = "; ".join(f"{k}: {', '.join(r) or 'no built-in policy'}" for k, r in readers.items())
    one = len(inert) == 1
    return (
        f"{', '.join(inert)} {'changes' if one else 'change'} nothing under {name}'s rules "
        f"(the built-in policies that read {'it' if one else 'them'}: {said}); drop "
        f"{'it' if one else 'them'} or choose one of those policies"
    )


def _refuse_inert(name: str, kwargs: dict[str, Any], accepted: dict[str, Any]) -> None:
    """A :class:`ConfigError` for a rule parameter that ``name``'s rules never read
    (it would change nothing): :func:`inert_parameters_message`."""
    inert = sorted(k for k in kwargs if k in RULE_PARAMETERS and k not in accepted)
    if inert:
        raise ConfigError(f"policy.{name}", inert_parameters_message(name, inert))


def _refuse_idle_size_range(name: str, given: Any, sizes: str) -> None:
    """A :class:`ConfigError` for a ``size_range`` given while ``sizes`` is not
    ``"range"`` (the only candidate set it bounds)."""
    if "size_range" in given and sizes != "range":
        raise ConfigError(
            f"policy.{name}", f"size_range applies to sizes = 'range' only (sizes is {sizes!r})"
        )


_TABLE: list[tuple[str, str, Any, dict[str, Any]]] = [
    ("fcfs", "Rigid first-come-first-served without backfilling.", None, {"backfill": "none"}),
    ("easy", "Rigid EASY backfilling (predicted reservations when given a predictor).", None, {}),
    (
        "easy++",
        "Rigid EASY++ (Tsafrir, Etsion & Feitelson 2007): EASY planned with user-history job lengths.",
        None,
        {"job_length": "user-history"},
    ),
    (
        "conservative",
        "Rigid conservative backfilling: every job holds a reservation.",
        None,
        {"backfill": "conservative"},
    ),
    (
        "easy-min-time",
        "EASY; size with the minimum predicted runtime.",
        DEFAULT_PREDICTOR,
        {"size": "min-time"},
    ),
    (
        "easy-min-energy",
        "EASY; size with the minimum predicted energy.",
        DEFAULT_PREDICTOR,
        {"size": "min-energy"},
    ),
    (
        "easy-min-edp",
        "EASY; size with the minimum predicted energy-delay product.",
        DEFAULT_PREDICTOR,
        {"size": "min-edp"},
    ),
    (
        "easy-min-energy-slack",
        "EASY; minimum-energy size whose predicted runtime is within (1 + slack) x the requested size's.",
        DEFAULT_PREDICTOR,
        {"size": "min-energy-slack"},
    ),
    (
        "easy-efficiency",
        "EASY; largest size with predicted parallel efficiency >= efficiency.",
        DEFAULT_PREDICTOR,
        {"size": "efficiency"},
    ),
    (
        "easy-load-adaptive",
        "EASY; fastest size within an equipartition share (wide when idle, narrow when the queue is long).",
        DEFAULT_PREDICTOR,
        {"size": "load-adaptive"},
    ),
    (
        "easy-energy-freq",
        "EASY; requested size at the energy-optimal frequency.",
        DEFAULT_PREDICTOR,
        {"freq": "energy-optimal"},
    ),
    (
        "easy-slack-freq",
        "EASY; requested size at the lowest frequency within (1 + slack) x the top-frequency runtime.",
        DEFAULT_PREDICTOR,
        {"freq": "slack"},
    ),
    (
        "easy-deadline-freq",
        "EASY; requested size at the lowest frequency meeting the deadline (deadline_factor x requested time).",
        DEFAULT_PREDICTOR,
        {"freq": "deadline"},
    ),
    (
        "easy-energy-size-freq",
        "EASY; minimum-energy size, then the energy-optimal frequency.",
        DEFAULT_PREDICTOR,
        {"size": "min-energy", "freq": "energy-optimal"},
    ),
    (
        "easy-slack-size-freq",
        "EASY; minimum-energy size and lowest frequency, the runtime staying within the slack.",
        DEFAULT_PREDICTOR,
        {"size": "min-energy-slack", "freq": "slack"},
    ),
    (
        "easy-pareto-deadline",
        "EASY; (n, c, f) with minimum predicted energy meeting the deadline (Pareto front).",
        DEFAULT_PREDICTOR,
        {"joint": "pareto-deadline"},
    ),
    (
        "easy-pareto-budget",
        "EASY; (n, c, f) with minimum predicted runtime within the energy budget (Pareto front).",
        DEFAULT_PREDICTOR,
        {"joint": "pareto-budget"},
    ),
]

#: name -> factory of every built-in policy.
BUILTIN_FACTORIES: dict[str, Callable[..., QueuePolicy]] = {}
for _name, _doc, _pred, _fixed in _TABLE:
    _fixed = dict(_fixed)
    if _pred is not None:  # predictor-driven: the most accurate job lengths
        _fixed.setdefault("job_length", DEFAULT_JOB_LENGTH)
    _backfill = _fixed.pop("backfill", "easy")
    BUILTIN_FACTORIES[_name] = _make_factory(
        _name, _doc, predictor=_pred, backfill=_backfill, **_fixed
    )

fcfs_policy = BUILTIN_FACTORIES["fcfs"]
easy_policy = BUILTIN_FACTORIES["easy"]
conservative_policy = BUILTIN_FACTORIES["conservative"]


# --------------------------------------------------------------------------- service-aware
# (policies.service: per-batch clock choice bounded by the predicted bounded slowdown and
# gated by the queue length or the utilisation; Etinski et al. 2010)

#: idle timeout (s) of the ``-off`` variants: the demo experiment's ``easy-poweroff``.
SERVICE_IDLE_TIMEOUT_S = 600.0

_SERVICE_PARAMS: dict[str, Any] = {
    "bsld_threshold": 2.0,
    "queue_threshold": None,
    "util_threshold": None,
    "tau_s": 10.0,
    "moldable": False,
    "plan_with": "prediction",
    "max_stretch": 1.1,
    "busy_rule": "rigid",
    "max_shrink": math.inf,
}
_SERVICE_TYPES: dict[str, type] = {
    "max_stretch": float,
    "max_shrink": float,
    "bsld_threshold": float,
    "queue_threshold": int,
    "util_threshold": float,
    "tau_s": float,
    "moldable": bool,
}
_ALL_TYPES = {**_PARAM_TYPES, **_SERVICE_TYPES}
_SERVICE_RULE_PARAMS = {
    k: v
    for k, v in _RULE_PARAMS.items()
    if k in ("sizes", "size_range", "min_runs", "require_reliable", "safety_factor")
    or k in ("explore_runs", "refit_growth")
}


def _service_factory(name: str, doc: str, **defaults_override: Any) -> Callable[..., QueuePolicy]:
    """A keyword-only factory of a :class:`~policies.service.ServiceAwareChooser` policy."""
    from policies.service import ServiceAwareChooser

    defaults: dict[str, Any] = {
        "predictor": DEFAULT_PREDICTOR,
        "backfill": "easy",
        **_COMMON_PARAMS,
        **_SERVICE_RULE_PARAMS,
        **_SERVICE_PARAMS,
        "job_length": DEFAULT_JOB_LENGTH,  # predictor-driven: the most accurate job lengths
    }
    defaults.update(defaults_override)
    parameters = [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v) for k, v in defaults.items()
    ]
    signature = inspect.Signature(parameters)

    def factory(**kwargs: Any) -> QueuePolicy:
        _refuse_inert(name, kwargs, defaults)
        bound = signature.bind(**kwargs)  # TypeError on unknown parameters
        values = dict(defaults)
        values.update(bound.arguments)
        values = {k: _coerce(k, v, _ALL_TYPES) for k, v in values.items()}
        sizes_given = sorted(k for k in ("sizes", "size_range") if k in bound.arguments)
        if sizes_given and not values["moldable"]:
            raise ConfigError(
                f"policy.{name}",
                f"{', '.join(sizes_given)} {'applies' if len(sizes_given) == 1 else 'apply'} "
                "to moldable = true only (the candidate sizes)",
            )
        _refuse_idle_size_range(name, bound.arguments, values["sizes"])
        predictor = values.pop("predictor")
        backfill = values.pop("backfill")
        common = {k: values.pop(k) for k in _COMMON_PARAMS}
        chooser = ServiceAwareChooser(
            predictor=predictor if predictor is not None else DEFAULT_PREDICTOR, **values
        )
        return QueuePolicy(backfill=backfill, chooser=chooser, name=name, **common)

    factory.__name__ = name.replace("-", "_")
    factory.__qualname__ = factory.__name__
    factory.__doc__ = doc
    factory.__signature__ = signature  # type: ignore[attr-defined]
    return factory


_SERVICE_TABLE: list[tuple[str, str, dict[str, Any]]] = [
    (
        "easy-energy-bsld",
        "EASY; per job the lowest-energy clock whose predicted bounded slowdown (wait so far "
        "included) stays <= bsld_threshold and whose predicted runtime stays <= max_stretch "
        "x the top clock's; top clock while more than queue_threshold jobs wait (Etinski et "
        "al., IPDPSW 2010).",
        {"queue_threshold": 4},
    ),
    (
        "easy-energy-bsld-off",
        "The whole service-aware policy: easy-energy-bsld that also chooses each job's node "
        "count (moldable=true, no stretch cap: a smaller count is often the frugal one), plans "
        "with safety_factor 1.5 x the predicted runtime, lowers clocks while at most "
        "queue_threshold (4) jobs wait and, while more wait, only shrinks a job at the top "
        "clock when that is predicted to use fewer node-seconds (busy_rule=shrink), never "
        "below a quarter of the requested nodes (max_shrink=4: a wrong prediction stretches a "
        "job at most 4x), and switches idle nodes off after idle_timeout_s (600 s). Like every "
        "service-aware policy it limits a moved job to its request moved by the worst case, so "
        "no prediction kills a job early.",
        {
            "queue_threshold": 4,
            "busy_rule": "shrink",
            "idle_timeout_s": SERVICE_IDLE_TIMEOUT_S,
            "moldable": True,
            "safety_factor": 1.5,
            "max_stretch": math.inf,
            "max_shrink": 4.0,
        },
    ),
    (
        "easy-util-freq",
        "EASY; the lowest-energy clock within bsld_threshold only while busy nodes are below "
        "util_threshold of the nodes, else the top clock (Etinski et al., CSRD 2010, UPAS).",
        {"util_threshold": 0.8},
    ),
    (
        "easy-util-freq-off",
        "easy-util-freq with idle nodes switched off after idle_timeout_s (600 s).",
        {"util_threshold": 0.8, "idle_timeout_s": SERVICE_IDLE_TIMEOUT_S},
    ),
]

for _name, _doc, _over in _SERVICE_TABLE:
    BUILTIN_FACTORIES[_name] = _service_factory(_name, _doc, **_over)
