"""Experiment files: a TOML description of a sweep, validated with pydantic.

An experiment file names traces, platforms, a ground-truth preset, policies
(with parameters), predictors, seeds, engine settings and the metrics the
report shows. :func:`load_experiment` reads and validates it; every mistake
raises :class:`ExperimentFileError` (a :class:`~energysched.errors.ConfigError`)
whose message names the file and the dotted key, e.g.
``exp.toml: policies[2].params.slack: unknown parameter ...``.

The full format is documented in ``docs/reference/experiment-file.md``.

Seeds
    ``seeds.replicates = n`` with ``seeds.base = B`` gives replicate ``i`` the
    seed ``SeedSequence(B).spawn(n)[i].generate_state(1)[0]`` (a 32-bit
    integer); ``seeds.list = [...]`` uses the given seeds verbatim. Every
    policy and predictor of one replicate gets the *same* seed (common random
    numbers): the ground-truth draw and the measurement noise are identical
    across the policies being compared, so differences come from the policies
    alone. A synthetic trace is the *same* workload for every seed (generated
    with the first seed) unless its entry sets ``workload_seed = "per-seed"``
    (or an integer), so that seeds vary only the truth and the noise.
"""

from __future__ import annotations

import inspect
import logging
import sys
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from energysched.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

log = logging.getLogger(__name__)

#: Summary metrics a run reports (``simulator.metrics.summarize``) plus the
#: per-run predictor errors the results store derives from the jobs table.
KNOWN_METRICS: tuple[str, ...] = (
    "makespan_s",
    "energy_j",
    "energy_kwh",
    "energy_busy_j",
    "energy_idle_j",
    "energy_off_j",
    "energy_switching_j",
    "energy_per_job_j",
    "mean_power_w",
    "peak_power_w",
    "mean_wait_s",
    "p95_wait_s",
    "max_wait_s",
    "mean_bsld",
    "utilisation",
    "edp_js",
    "jobs_completed",
    "jobs_killed",
    "jobs_rejected",
    "power_cap_violations",
    "mape_runtime",
    "mape_energy",
    "oracle_energy_regret",
    "oracle_makespan_regret",
)

#: Metrics shown when the experiment file gives none.
DEFAULT_METRICS: tuple[str, ...] = (
    "energy_kwh",
    "makespan_s",
    "mean_wait_s",
    "p95_wait_s",
    "mean_bsld",
    "utilisation",
    "energy_busy_j",
    "energy_idle_j",
    "energy_off_j",
    "energy_switching_j",
    "edp_js",
    "jobs_killed",
    "mape_runtime",
    "mape_energy",
    "oracle_energy_regret",
    "oracle_makespan_regret",
)

_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+\-]*$"


class ExperimentFileError(ConfigError):
    """One or more mistakes in an experiment file.

    ``key`` is the first offending key; ``errors`` holds every ``(key, message)``.
    """

    def __init__(self, errors: list[tuple[str, str]], *, source: str | None = None) -> None:
        self.errors = errors
        key, first = errors[0]
        if len(errors) == 1:
            message = first
        else:
            rest = "\n".join(f"  {k}: {m}" for k, m in errors[1:])
            message = f"{first}\n  ({len(errors) - 1} more)\n{rest}"
        super().__init__(key, message, source=source)


class _Strict(BaseModel):
    # strict: "200" is not an integer, true is not a number, 1 is not a boolean
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True, strict=True)


class SyntheticSpec(_Strict):
    """Settings of a synthetic workload (see :func:`workloads.synthetic.generate`).

    ``params`` are fields of the model's parameter class, among them
    ``requests`` (``"tsafrir2005"``, Lublin's default; ``"uniform"``,
    Downey's; ``"none"``: no requested times, the engine then plans with
    exact runtimes), ``max_request_s`` and ``max_request_share``.
    """

    model: str
    n_jobs: int = Field(gt=0)
    nodes: int = Field(gt=0)
    seed: int | None = Field(default=None, ge=0)
    params: dict[str, Any] = Field(default_factory=dict)


class TraceSpec(_Strict):
    """One trace: an SWF path, ``builtin:kth-sp2``, or a synthetic generator."""

    name: str = Field(pattern=_NAME_PATTERN)
    source: str | None = None
    synthetic: SyntheticSpec | None = None
    max_jobs: int | None = Field(default=None, gt=0)
    #: Seed of a synthetic workload: an integer, ``"per-seed"`` (a new workload
    #: for every seed of the sweep), or unset (one workload for every seed,
    #: generated with the first seed), so that seeds vary only truth and noise.
    workload_seed: int | Literal["per-seed"] | None = Field(default=None)
    #: Skip (and count in the run's ``bad_lines``) malformed job lines of an
    #: SWF file instead of failing its runs (``--skip-bad-lines`` of ``run``).
    skip_bad_lines: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> TraceSpec:
        if (self.source is None) == (self.synthetic is None):
            raise ValueError("give exactly one of 'source' (a path or builtin:NAME) or 'synthetic'")
        if self.skip_bad_lines and self.synthetic is not None:
            raise ValueError("'skip_bad_lines' applies to SWF files ('source') only")
        if self.workload_seed is not None:
            if self.synthetic is None:
                raise ValueError("'workload_seed' applies to synthetic traces only")
            if self.synthetic.seed is not None:
                raise ValueError("give either 'workload_seed' or 'synthetic.seed', not both")
            if isinstance(self.workload_seed, int) and self.workload_seed < 0:
                raise ValueError("'workload_seed' must be >= 0")
        return self

    def synthetic_seed(self, seeds: list[int], seed: int) -> int | None:
        """The generator seed of this (synthetic) trace in the run with ``seed``."""
        if self.synthetic is None:
            return None
        if self.synthetic.seed is not None:
            return self.synthetic.seed
        if self.workload_seed == "per-seed":
            return seed
        if self.workload_seed is not None:
            return int(self.workload_seed)
        return seeds[0]


class PlatformSpec(_Strict):
    """A platform: ``"trace"`` (homogeneous, from the trace header), a TOML path,
    or a bundled platform (``builtin:hybrid-128x16``)."""

    name: str = Field(default="trace", pattern=_NAME_PATTERN)
    source: str = "trace"


#: The ground truth of every run when an experiment names none
#: (``workloads.presets.DEFAULT_PRESET``): every policy of a sweep, rigid ones
#: included, runs the same jobs. ``ground_truth = "none"`` opts out (the traces'
#: recorded runtimes for every policy).
DEFAULT_TRUTH_PRESET = "npb-mix"


class GroundTruthSpec(_Strict):
    """Hidden application models (:func:`workloads.applications.assign_ground_truth`)."""

    preset: str
    noise: float = Field(default=0.02, ge=0, lt=1)


class PredictorSpec(_Strict):
    """A predictor: a label, a registry spec and hyper-parameters."""

    name: str = Field(pattern=_NAME_PATTERN)
    spec: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def resolved_spec(self) -> str:
        return self.spec or self.name


class PolicySpec(_Strict):
    """A policy: a label, a registry spec, parameters, predictors, engine overrides."""

    name: str = Field(pattern=_NAME_PATTERN)
    policy: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    predictors: list[str] | Literal["all"] = Field(default_factory=list)
    engine: dict[str, Any] = Field(default_factory=dict)
    baseline: bool = False

    @property
    def resolved_spec(self) -> str:
        return self.policy or self.name


class SeedSpec(_Strict):
    """Seeds: ``replicates`` derived from ``base``, or an explicit ``list``."""

    base: int = Field(default=0, ge=0)
    replicates: int = Field(default=1, gt=0, le=10_000)
    explicit: list[int] | None = Field(default=None, alias="list")

    @field_validator("explicit")
    @classmethod
    def _nonneg(cls, value: list[int] | None) -> list[int] | None:
        if value is not None:
            if not value:
                raise ValueError("must not be empty")
            if any(v < 0 for v in value):
                raise ValueError("seeds must be >= 0")
            if len(set(value)) != len(value):
                raise ValueError("seeds must be distinct")
        return value

    def values(self) -> list[int]:
        """The seed of every replicate (see module docstring)."""
        if self.explicit is not None:
            return [int(v) for v in self.explicit]
        children = np.random.SeedSequence(self.base).spawn(self.replicates)
        return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children]


class ExperimentSpec(_Strict):
    """A whole experiment file (see ``docs/reference/experiment-file.md``)."""

    name: str = Field(default="experiment", pattern=_NAME_PATTERN)
    description: str = ""
    traces: list[TraceSpec] = Field(min_length=1)
    platforms: list[PlatformSpec] = Field(default_factory=lambda: [PlatformSpec()])
    ground_truth: GroundTruthSpec | None = Field(
        default_factory=lambda: GroundTruthSpec(preset=DEFAULT_TRUTH_PRESET)
    )
    policies: list[PolicySpec] = Field(min_length=1)
    predictors: list[PredictorSpec] = Field(default_factory=list)
    seeds: SeedSpec = Field(default_factory=SeedSpec)
    engine: dict[str, Any] = Field(default_factory=dict)
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))

    @model_validator(mode="before")
    @classmethod
    def _platform_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and "platform" in data:
            data = dict(data)
            if "platforms" in data:
                raise ValueError("give either 'platform' or 'platforms', not both")
            value = data.pop("platform")
            data["platforms"] = [{"source": value} if isinstance(value, str) else value]
        return data

    @field_validator("ground_truth", mode="before")
    @classmethod
    def _ground_truth_word(cls, value: Any) -> Any:
        # ground_truth = "none" opts out (TOML has no null); a preset name alone is a shorthand
        if isinstance(value, str):
            return None if value.strip().lower() == "none" else {"preset": value}
        return value

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: list[str]) -> list[str]:
        return value

    def baseline_policy(self) -> str:
        """Label of the rigid baseline: the policy marked ``baseline``, else ``easy``, else ``fcfs``, else the first."""
        for p in self.policies:
            if p.baseline:
                return p.name
        for wanted in ("easy", "fcfs"):
            for p in self.policies:
                if p.resolved_spec == wanted and not p.predictors:
                    return p.name
        return self.policies[0].name


def _loc_to_key(loc: tuple[Any, ...]) -> str:
    key = ""
    for part in loc:
        if isinstance(part, int):
            key += f"[{part}]"
        else:
            # pydantic reports the failing member of a union/literal as an extra loc part
            if str(part).startswith(("literal[", "list[", "function-")):
                continue
            key += ("." if key else "") + str(part)
    return key or "(file)"


def _pydantic_errors(exc: ValidationError) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for err in exc.errors():
        key = _loc_to_key(tuple(err["loc"]))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (typo?)"
        elif err["type"] == "missing":
            msg = "required key is missing"
        msg = msg.removeprefix("Value error, ")
        seen.setdefault(key, msg)
    return list(seen.items())


def parse_experiment(
    data: dict[str, Any],
    *,
    source: str | None = None,
    base_dir: str | Path = ".",
    check: bool = True,
) -> ExperimentSpec:
    """Validate a decoded experiment mapping; paths are resolved against ``base_dir``.

    With ``check`` (default) names are also checked against the registries
    (policies, predictors, presets, trace files, platform files, parameters).
    """
    try:
        spec = ExperimentSpec.model_validate(data)
    except ValidationError as exc:
        raise ExperimentFileError(_pydantic_errors(exc), source=source) from None
    _resolve_paths(spec, Path(base_dir))
    errors = _semantic_errors(spec) if check else []
    if errors:
        raise ExperimentFileError(errors, source=source)
    return spec


def load_experiment(path: str | Path, *, check: bool = True) -> ExperimentSpec:
    """Read, validate and resolve an experiment TOML file.

    Raises:
        ExperimentFileError: the message names the file and the key of every mistake.
    """
    p = Path(path)
    from simulator.config import read_config_text

    text = read_config_text(p, what="experiment file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentFileError([("(toml syntax)", str(exc))], source=str(p)) from None
    return parse_experiment(data, source=str(p), base_dir=p.resolve().parent, check=check)


def _resolve_path(value: str, base_dir: Path) -> str:
    if value == "trace" or value.startswith("builtin:"):
        return value
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    return str(path)


def _resolve_paths(spec: ExperimentSpec, base_dir: Path) -> None:
    for t in spec.traces:
        if t.source is not None:
            t.source = _resolve_path(t.source, base_dir)
    for p in spec.platforms:
        p.source = _resolve_path(p.source, base_dir)


def _duplicates(names: list[str], key: str) -> list[tuple[str, str]]:
    errors = []
    seen: set[str] = set()
    for i, n in enumerate(names):
        if n in seen:
            errors.append((f"{key}[{i}].name", f"duplicate name {n!r}; names must be unique"))
        seen.add(n)
    return errors


def _semantic_errors(spec: ExperimentSpec) -> list[tuple[str, str]]:
    """Checks that need the registries: every error as ``(key, message)``."""
    errors: list[tuple[str, str]] = []
    errors += _duplicates([t.name for t in spec.traces], "traces")
    errors += _duplicates([p.name for p in spec.platforms], "platforms")
    errors += _duplicates([p.name for p in spec.policies], "policies")
    errors += _duplicates([p.name for p in spec.predictors], "predictors")
    errors += _check_traces(spec)
    errors += _check_platforms(spec)
    errors += _check_ground_truth(spec)
    errors += _check_engine(spec.engine, "engine")
    errors += _check_predictors(spec)
    errors += _check_policies(spec)
    for i, m in enumerate(spec.metrics):
        if m not in KNOWN_METRICS:
            errors.append(
                (f"metrics[{i}]", f"unknown metric {m!r}; known: {', '.join(KNOWN_METRICS)}")
            )
    if sum(p.baseline for p in spec.policies) > 1:
        i = [k for k, p in enumerate(spec.policies) if p.baseline][1]
        errors.append((f"policies[{i}].baseline", "only one policy can be the baseline"))
    return errors


def _check_traces(spec: ExperimentSpec) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    for i, t in enumerate(spec.traces):
        if t.source is not None:
            if t.source.startswith("builtin:"):
                from workloads.bundled import BUILTIN_TRACES

                name = t.source.split(":", 1)[1]
                if name not in BUILTIN_TRACES:
                    errors.append(
                        (
                            f"traces[{i}].source",
                            f"unknown built-in trace {name!r}; known: {', '.join('builtin:' + k for k in BUILTIN_TRACES)}",
                        )
                    )
            elif not Path(t.source).is_file():
                errors.append((f"traces[{i}].source", f"trace file not found: {t.source}"))
        else:
            assert t.synthetic is not None
            errors += _check_synthetic(t.synthetic, f"traces[{i}].synthetic")
    return errors


def _check_synthetic(s: SyntheticSpec, key: str) -> list[tuple[str, str]]:
    try:
        from workloads.synthetic import MODELS
    except ImportError:  # pragma: no cover - generators not installed
        return [(f"{key}.model", "synthetic workload generators are not available")]
    if s.model.lower() not in MODELS:
        return [(f"{key}.model", f"unknown workload model {s.model!r}; known: {', '.join(MODELS)}")]
    _, params_cls = MODELS[s.model.lower()]
    fields = _param_names(params_cls)
    errors = []
    for name in s.params:
        if fields is not None and name not in fields:
            errors.append(
                (
                    f"{key}.params.{name}",
                    f"unknown parameter of model {s.model!r}; known: {', '.join(sorted(fields))}",
                )
            )
    if not errors:
        from workloads.synthetic import generate

        try:  # a tiny draw validates the parameter values
            generate(s.model.lower(), 2, s.nodes, seed=0, **s.params)
        except ConfigError as exc:
            errors.append(
                (
                    f"{key}.params.{exc.key}"
                    if exc.key not in ("model", "n_jobs", "nodes")
                    else f"{key}.{exc.key}",
                    exc.reason,
                )
            )
        except (TypeError, ValueError) as exc:
            errors.append((f"{key}.params", str(exc)))
    return errors


def _param_names(obj: Any) -> set[str] | None:
    import dataclasses

    if dataclasses.is_dataclass(obj):
        return {f.name for f in dataclasses.fields(obj)}
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL,)}


def _check_platforms(spec: ExperimentSpec) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    for i, p in enumerate(spec.platforms):
        if p.source == "trace":
            continue
        from simulator.platform import BUILTIN_PREFIX, load_platform

        if not p.source.startswith(BUILTIN_PREFIX) and not Path(p.source).is_file():
            errors.append((f"platforms[{i}].source", f"platform file not found: {p.source}"))
            continue

        try:
            load_platform(p.source)
        except ConfigError as exc:
            errors.append((f"platforms[{i}].source", f"{p.source}: {exc.key}: {exc.reason}"))
    return errors


def _check_ground_truth(spec: ExperimentSpec) -> list[tuple[str, str]]:
    if spec.ground_truth is None:
        return []
    try:
        from workloads.presets import list_presets
    except ImportError:  # pragma: no cover - ground-truth models not installed
        return [
            ("ground_truth.preset", "ground-truth models (workloads.presets) are not available")
        ]
    presets = list_presets()
    if spec.ground_truth.preset not in presets:
        return [
            (
                "ground_truth.preset",
                f"unknown preset {spec.ground_truth.preset!r}; known: {', '.join(presets)}",
            )
        ]
    return []


def _engine_conflicts(
    spec: ExperimentSpec, p: PolicySpec, key: str, policy: Any
) -> list[tuple[str, str]]:
    """The engine settings (``[engine]``, then the policy's ``engine``) that the
    policy sets to another value itself (its idle timeout, reserved nodes, power
    cap: :meth:`simulator.config.RunConfig.with_policy_settings`)."""
    from simulator.config import RunConfig, policy_settings

    overrides = policy_settings(policy)
    merged = {**spec.engine, **p.engine}
    if not overrides or not merged:
        return []
    try:
        config = RunConfig.from_settings(merged)
    except (ConfigError, TypeError):  # reported by _check_engine
        return []
    try:
        config.with_policy_settings(overrides, p.resolved_spec)
    except ConfigError as exc:
        where = f"{key}.engine.{exc.key}" if exc.key in p.engine else f"engine.{exc.key}"
        return [(where, exc.reason)]
    return []


def _check_engine(engine: dict[str, Any], key: str) -> list[tuple[str, str]]:
    import dataclasses

    from simulator.config import RunConfig

    known = {f.name for f in dataclasses.fields(RunConfig)}
    errors = [
        (
            f"{key}.{k}",
            f"unknown engine setting; known: {', '.join(sorted(known - {'seed', 'progress'}))}",
        )
        for k in engine
        if k not in known
    ]
    for k in ("seed", "progress"):
        if k in engine:
            errors.append((f"{key}.{k}", "set by the sweep; remove it (seeds go in [seeds])"))
    if errors:
        return errors
    # Unvalidated user values: RunConfig itself reports wrong types and values.
    try:
        RunConfig.from_settings(engine)
    except ConfigError as exc:
        errors.append((f"{key}.{exc.key}", exc.reason))
    except TypeError as exc:
        errors.append((key, str(exc)))
    return errors


def _check_predictors(spec: ExperimentSpec) -> list[tuple[str, str]]:
    if not spec.predictors:
        return []
    try:
        from predictors.registry import get_predictor
    except ImportError:
        return [
            (
                "predictors",
                "predictor registry (predictors.registry) is not available in this installation",
            )
        ]
    errors: list[tuple[str, str]] = []
    for i, p in enumerate(spec.predictors):
        name_key = f"predictors[{i}].{'spec' if p.spec else 'name'}"
        try:
            predictor = get_predictor(p.resolved_spec, **p.params)
        except ConfigError as exc:
            key = (
                name_key
                if exc.key in ("predictor", "spec", "name")
                else f"predictors[{i}].params.{exc.key}"
            )
            errors.append((key, exc.reason))
            continue
        except TypeError as exc:
            errors.append((f"predictors[{i}].params", str(exc)))
            continue
        except Exception as exc:  # a plug-in raising at import or construction
            errors.append((name_key, _plugin_failure("predictor", p.resolved_spec, exc)))
            continue
        errors += _check_predictor_fit(spec, predictor, i, p)
    return errors


def _default_preset() -> str:
    try:
        from workloads.presets import DEFAULT_PRESET
    except ImportError:  # pragma: no cover - ground-truth models not installed
        return "..."
    return str(DEFAULT_PRESET)


def _plugin_failure(kind: str, name: str, exc: BaseException) -> str:
    return (
        f"{kind} {name!r} could not be loaded: {type(exc).__name__}: {exc}"
        " (fix the plug-in module or choose another)"
    )


def _check_predictor_fit(
    spec: ExperimentSpec, predictor: Any, index: int, p: PredictorSpec
) -> list[tuple[str, str]]:
    """Fit ``predictor`` on a tiny benchmark set: parameter values checked only at
    fit time (``solver = "magic"``) and an oracle without a ground truth are
    caught here, not at run time."""
    from energysched.errors import NotFittedError

    try:
        from predictors.base import Observations
        from simulator.platform import homogeneous_platform
        from workloads.benchmark_suite import measure_benchmark_suite
    except ImportError:  # pragma: no cover - partial installation
        return []
    platform = homogeneous_platform(4, 4)
    try:
        predictor.fit(
            Observations(benchmarks=measure_benchmark_suite(platform, seed=0), platform=platform)
        )
    except ConfigError as exc:
        if exc.key.endswith(".truth"):
            if spec.ground_truth is None:
                return [
                    (
                        f"predictors[{index}].{'spec' if p.spec else 'name'}",
                        f"predictor {p.resolved_spec!r} reads the ground truth, and the experiment "
                        f'has none: add [ground_truth] preset = "{_default_preset()}" '
                        "or remove this predictor",
                    )
                ]
            return []
        sub = exc.key.split(".")[-1]
        key = f"predictors[{index}].params.{sub}" if sub in p.params else f"predictors[{index}]"
        return [(key, exc.reason)]
    except NotFittedError:
        return []
    except Exception as exc:
        return [
            (
                f"predictors[{index}]",
                f"fitting on the benchmark suite failed: {type(exc).__name__}: {exc}",
            )
        ]
    return []


def _check_policies(spec: ExperimentSpec) -> list[tuple[str, str]]:
    from policies.factories import RULE_PARAMETERS, inert_parameters_message
    from policies.registry import BUILTIN_POLICIES, get_policy, resolve_policy_factory

    known_predictors = {p.name for p in spec.predictors}
    errors: list[tuple[str, str]] = []
    for i, p in enumerate(spec.policies):
        key = f"policies[{i}]"
        try:
            factory = resolve_policy_factory(p.resolved_spec)
        except ConfigError as exc:
            errors.append((f"{key}.{'policy' if p.policy else 'name'}", exc.reason))
            continue
        except Exception as exc:  # a plug-in raising at import
            errors.append(
                (
                    f"{key}.{'policy' if p.policy else 'name'}",
                    _plugin_failure("policy", p.resolved_spec, exc),
                )
            )
            continue
        names = _param_names(factory)
        bad = False
        if names is not None:
            for param in p.params:
                if param not in names or param == "predictor":
                    hint = (
                        "set predictors with the 'predictors' key"
                        if param == "predictor"
                        else f"known: {', '.join(sorted(n for n in names if n != 'predictor')) or '(none)'}"
                    )
                    reason = f"unknown parameter of policy {p.resolved_spec!r}; {hint}"
                    if param in RULE_PARAMETERS and p.resolved_spec in BUILTIN_POLICIES:
                        reason = inert_parameters_message(p.resolved_spec, [param])
                    errors.append((f"{key}.params.{param}", reason))
                    bad = True
            if p.predictors and "predictor" not in names:
                errors.append(
                    (f"{key}.predictors", f"policy {p.resolved_spec!r} takes no predictor")
                )
                bad = True
        wanted = list(known_predictors) if p.predictors == "all" else p.predictors
        for j, name in enumerate(p.predictors if isinstance(p.predictors, list) else []):
            if name not in known_predictors:
                errors.append(
                    (
                        f"{key}.predictors[{j}]",
                        f"unknown predictor {name!r}; declared: {', '.join(sorted(known_predictors)) or '(none; add [[predictors]])'}",
                    )
                )
                bad = True
        errors += _check_engine(p.engine, f"{key}.engine")
        if bad:
            continue
        try:  # constructing the policy validates parameter values
            extra = {}
            if wanted:
                pred = next(q for q in spec.predictors if q.name == wanted[0])
                extra["predictor"] = pred.resolved_spec
            policy = get_policy(p.resolved_spec, **p.params, **extra)
            errors += _engine_conflicts(spec, p, key, policy)
        except ConfigError as exc:
            sub = exc.key.split(".")[-1]
            target = f"{key}.params.{sub}" if sub in p.params else f"{key}.params"
            errors.append((target, exc.reason))
        except (TypeError, ValueError) as exc:
            errors.append((f"{key}.params", str(exc)))
        except Exception as exc:  # the plug-in's constructor raised
            errors.append((f"{key}.params", _plugin_failure("policy", p.resolved_spec, exc)))
    return errors
