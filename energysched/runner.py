"""One run, composed: trace -> cleaning -> ground truth -> platform -> policy -> simulate.

:func:`run_spec` is what ``energysched run`` and every sweep run call, so a
run from the command line and the same run inside an experiment give the
same numbers.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from energysched.errors import ConfigError, EnergySchedError
from simulator.config import RunConfig, policy_settings
from simulator.engine import simulate
from simulator.platform import Platform, load_platform, platform_from_trace
from simulator.results import RunResult

__all__ = [
    "RunSpec",
    "build_platform",
    "check_feasible",
    "load_trace",
    "run_spec",
]

log = logging.getLogger(__name__)

#: The ground truth of a run unless told otherwise (``workloads.presets.DEFAULT_PRESET``):
#: every policy of a comparison runs the same jobs, rigid ones included.
DEFAULT_TRUTH = "npb-mix"


@dataclass
class RunSpec:
    """Everything one run needs.

    Attributes:
        trace: a path to an SWF file (``.swf``/``.swf.gz``), ``"builtin:kth-sp2"``
            for the bundled KTH-SP2 trace, or a :class:`workloads.Trace`.
        platform: ``"trace"`` (homogeneous platform from the trace header), a
            platform TOML path, or a :class:`simulator.platform.Platform`.
        policy: policy name, entry point or ``module:Class``.
        policy_params: keyword parameters of the policy factory.
        predictor: predictor spec for predictor-driven policies (``None``: none).
        predictor_params: hyper-parameters of the predictor; when given the
            predictor is built with ``predictors.registry.get_predictor`` and
            handed to the policy as an object.
        truth_preset: ground-truth preset, the same for every policy of a
            comparison (default ``npb-mix``, :data:`DEFAULT_TRUTH`; ``None``: no
            ground truth, runtimes are the trace's, see :mod:`simulator.engine`).
        seed: seed of the run (ground-truth draw, measurement noise).
        noise: measurement noise of the ground truth (relative, e.g. 0.02).
        config: engine settings.
        max_jobs: replay only the first ``max_jobs`` jobs after cleaning.
        skip_bad_lines: skip and count malformed trace lines instead of failing.
    """

    trace: Any
    platform: Any = "trace"
    policy: str = "easy"
    policy_params: dict[str, Any] = field(default_factory=dict)
    predictor: str | None = None
    predictor_params: dict[str, Any] = field(default_factory=dict)
    truth_preset: str | None = DEFAULT_TRUTH
    seed: int = 0
    noise: float = 0.02
    config: RunConfig = field(default_factory=RunConfig)
    max_jobs: int | None = None
    skip_bad_lines: bool = False


def load_trace(
    source: Any, *, max_jobs: int | None = None, skip_bad_lines: bool = False
) -> tuple[Any, Any]:
    """Read and clean a trace; returns ``(trace, cleaning_report)``.

    ``skip_bad_lines``: skip (and count in ``trace.bad_lines``) malformed job
    lines instead of raising :class:`~energysched.errors.TraceFormatError`.
    """
    from workloads.cleaning import clean_trace
    from workloads.schema import Trace
    from workloads.swf import read_swf

    if isinstance(source, Trace):
        trace = source
    else:
        trace = read_swf(source, skip_bad_lines=skip_bad_lines)  # also resolves builtin:NAME
    cleaned, report = clean_trace(trace)
    if max_jobs is not None and len(cleaned.jobs) > max_jobs:
        cleaned = dataclasses.replace(
            cleaned, jobs=cleaned.jobs.iloc[:max_jobs].reset_index(drop=True)
        )
    return cleaned, report


def build_platform(source: Any, trace: Any) -> Platform:
    """``"trace"``, a TOML path, or a Platform."""
    if isinstance(source, Platform):
        return source
    if source is None or source == "trace":
        return platform_from_trace(trace)
    return load_platform(source)


def _load_plugin(kind: str, spec: Any, build: Any) -> Any:
    """``build()``, with an error raised by plug-in code (at import or construction)
    turned into a one-line :class:`ConfigError` naming the plug-in."""
    try:
        return build()
    except EnergySchedError:
        raise
    except Exception as exc:  # the plug-in's own code raised
        raise ConfigError(
            kind,
            f"{kind} {spec!r} could not be loaded: {type(exc).__name__}: {exc}"
            " (fix the plug-in module or choose another)",
        ) from exc


def idle_power_floor_w(platform: Platform, config: RunConfig) -> float:
    """The least power the platform can draw under ``config``: every node idle,
    or, with power management, every node off but the reserved ones."""
    total = 0.0
    for t in platform.node_types:
        if config.idle_timeout_s is None:
            total += t.count * t.idle_power_w
        else:
            kept_on = min(t.count, config.reserve_nodes)
            total += kept_on * t.idle_power_w + (t.count - kept_on) * t.off_power_w
    return total


def check_feasible(platform: Platform, config: RunConfig) -> None:
    """Refuse, before the replay, a run that cannot start any job.

    Raises:
        ConfigError: the power cap is below what the machine draws doing
            nothing (:func:`idle_power_floor_w`): every job would be rejected.
    """
    floor_w = idle_power_floor_w(platform, config)
    if config.power_cap_w < floor_w:
        hint = (
            "raise the cap"
            if config.idle_timeout_s is not None
            else "raise the cap, or switch idle nodes off (--idle-timeout)"
        )
        raise ConfigError(
            "power_cap_w",
            f"power cap {config.power_cap_w:,.0f} W is below the {floor_w:,.0f} W the platform "
            f"{platform.name!r} draws with no job running; no job could ever start: {hint}",
        )


def run_spec(spec: RunSpec) -> RunResult:
    """Execute one run (see :class:`RunSpec`).

    Raises:
        ConfigError: a plug-in that fails to load, or an impossible
            configuration (see :func:`check_feasible`), before the replay.
    """
    from policies.registry import get_policy

    trace, report = load_trace(
        spec.trace, max_jobs=spec.max_jobs, skip_bad_lines=spec.skip_bad_lines
    )
    platform = build_platform(spec.platform, trace)
    truth = None
    observations = None
    if spec.truth_preset is not None:
        from workloads.applications import assign_ground_truth

        truth = assign_ground_truth(
            trace, platform, preset=spec.truth_preset, seed=spec.seed, noise=spec.noise
        )
    params = dict(spec.policy_params)
    if spec.predictor is not None:
        if spec.predictor_params:
            from predictors.registry import get_predictor

            params["predictor"] = _load_plugin(
                "predictor",
                spec.predictor,
                lambda: get_predictor(spec.predictor, **spec.predictor_params),
            )
        else:
            params["predictor"] = spec.predictor
    policy = _load_plugin("policy", spec.policy, lambda: get_policy(spec.policy, **params))
    check_feasible(platform, spec.config.with_policy_settings(policy_settings(policy), spec.policy))
    if getattr(policy, "learns", False) or spec.predictor is not None:
        try:
            from predictors.base import Observations
            from workloads.benchmark_suite import measure_benchmark_suite

            observations = Observations(
                benchmarks=measure_benchmark_suite(platform, seed=spec.seed), platform=platform
            )
        except ImportError:  # pragma: no cover - benchmark suite not installed
            observations = None
    log.info("run: %d jobs, policy %s, platform %s", len(trace.jobs), spec.policy, platform.name)
    result = simulate(trace, platform, policy, spec.config, truth, observations=observations)
    result.meta["cleaning"] = {
        "jobs_in": report.jobs_in,
        "jobs_out": report.jobs_out,
        "dropped": dict(report.dropped),
        "bad_lines_skipped": int(getattr(trace, "bad_lines", 0)),
    }
    result.meta["cleaning_summary"] = report.summary()
    result.meta["trace_source"] = (
        str(spec.trace) if not hasattr(spec.trace, "jobs") else getattr(spec.trace, "name", None)
    )
    result.meta["truth_preset"] = spec.truth_preset
    result.summary["ground_truth"] = spec.truth_preset if spec.truth_preset is not None else "none"
    result.meta["predictor"] = spec.predictor
    result.meta["predictor_params"] = dict(spec.predictor_params)
    result.meta["seed"] = spec.seed
    result.meta["noise"] = spec.noise
    return result
