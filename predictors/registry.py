"""Predictors by name: built-ins, entry points, dotted paths, and ``X+Y`` composites.

``get_predictor(spec, **params)`` resolves, in order:

1. ``"X+Y"``: :class:`~predictors.composite.CompositePredictor` of node-count
   predictor ``X`` and frequency predictor ``Y`` (each resolved by these
   rules); parameters are routed by prefix: ``node__name=...`` to ``X``,
   ``freq__name=...`` to ``Y``;
2. a built-in name (:data:`BUILTINS`; each is imported lazily by dotted path,
   so a built-in whose module is missing only fails when asked for);
3. an entry point of group ``energysched.predictors`` (the plug-in's
   ``pyproject.toml``: ``[project.entry-points."energysched.predictors"]
   mine = "mypkg.module:MyPredictor"``);
4. ``"package.module:Class"``.

Anything else raises :class:`~energysched.errors.ConfigError` listing the
known names. Parameters not accepted by the class's ``__init__`` raise
``ConfigError`` too.
"""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import entry_points
from typing import Any

from energysched.errors import ConfigError
from predictors.base import Predictor

#: Entry-point group of third-party predictors.
ENTRY_POINT_GROUP = "energysched.predictors"

#: The default predictor of predictor-driven policies.
DEFAULT_PREDICTOR = "auto+fluid"

#: Built-in name -> (``module:Class``, default parameters).
BUILTINS: dict[str, tuple[str, dict[str, Any]]] = {
    "lbm": ("predictors.lbm:LbmPredictor", {}),
    "adept": ("predictors.adept:AdeptPredictor", {}),
    "dvfs-naive": ("predictors.dvfs:NaiveDvfsPredictor", {}),
    "dvfs-node-type": ("predictors.dvfs:NodeTypeDvfsPredictor", {}),
    "dvfs-per-app": ("predictors.dvfs:PerAppDvfsPredictor", {}),
    "fluid": ("predictors.dvfs:FluidPredictor", {}),
    "online-node-type": ("predictors.dvfs:OnlineDvfsPredictor", {"per_node_type": True}),
    "online-generic": ("predictors.dvfs:OnlineDvfsPredictor", {"per_node_type": False}),
    "oracle": ("predictors.baselines:OraclePredictor", {}),
    "requested": ("predictors.baselines:RequestedPredictor", {}),
    "amdahl": ("predictors.baselines:AmdahlPredictor", {}),
    "hybrid": ("predictors.hybrid:HybridPredictor", {}),
    "power-law": ("predictors.auto:PowerLawPredictor", {}),
    "auto": ("predictors.auto:AutoPredictor", {}),
}

#: Named composites listed by :func:`list_predictors` (any ``X+Y`` works).
COMPOSITES: tuple[str, ...] = (
    "adept+fluid",
    "adept+online-node-type",
    "auto+fluid",
    "amdahl+fluid",
    "lbm+fluid",
)


def _import(path: str) -> Any:
    if ":" not in path:
        raise ConfigError("predictor", f"{path!r} is not a dotted path 'package.module:Class'")
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError("predictor", f"cannot import module {module_name!r} ({exc})") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ConfigError(
                "predictor", f"module {module_name!r} has no attribute {attr!r}"
            ) from exc
    return obj


def _entry_points() -> dict[str, Any]:
    try:
        return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    except Exception:
        return {}


def known_names() -> list[str]:
    """Built-in names, named composites and entry-point names."""
    return [*BUILTINS, *COMPOSITES, *sorted(set(_entry_points()) - set(BUILTINS))]


def _instantiate(cls: Any, params: dict[str, Any], label: str) -> Predictor:
    if isinstance(cls, Predictor):
        if params:
            raise ConfigError(f"predictor.{label}", "an instance takes no parameters")
        return cls
    if not callable(cls):
        raise ConfigError(
            "predictor", f"{label!r} resolves to {cls!r}, which is not a predictor class"
        )
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        sig = None
    if sig is not None and not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()
    ):
        unknown = sorted(set(params) - set(sig.parameters))
        if unknown:
            accepted = ", ".join(sig.parameters) or "none"
            raise ConfigError(
                f"predictor.{label}.{unknown[0]}", f"unknown parameter; accepted: {accepted}"
            )
    obj = cls(**params)
    if not isinstance(obj, Predictor):
        raise ConfigError(
            "predictor", f"{label!r} built a {type(obj).__name__}, not a predictors.base.Predictor"
        )
    return obj


def get_predictor(spec: str, **params: Any) -> Predictor:
    """A new (unfitted) predictor from a name, entry point, dotted path or ``X+Y`` composite.

    Example: ``get_predictor("lbm", solver="nnls")``, ``get_predictor("adept+fluid")``,
    ``get_predictor("oracle", truth=truth)``, ``get_predictor("mypkg.mod:MyPredictor")``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(
            "predictor",
            f"expected a predictor name, got {spec!r}; known: {', '.join(known_names())}",
        )
    spec = spec.strip()
    if "+" in spec:
        left, _, right = spec.partition("+")
        node_params = {k[6:]: v for k, v in params.items() if k.startswith("node__")}
        freq_params = {k[6:]: v for k, v in params.items() if k.startswith("freq__")}
        stray = sorted(k for k in params if not k.startswith(("node__", "freq__")))
        if stray:
            raise ConfigError(
                f"predictor.{spec}.{stray[0]}",
                "composite parameters need a prefix: node__<name> or freq__<name>",
            )
        from predictors.composite import CompositePredictor

        return CompositePredictor(
            get_predictor(left, **node_params), get_predictor(right, **freq_params)
        )
    if spec in BUILTINS:
        path, defaults = BUILTINS[spec]
        try:
            cls = _import(path)
        except ConfigError as exc:
            raise ConfigError(
                "predictor", f"built-in predictor {spec!r} is not available: {exc.reason}"
            ) from exc
        return _instantiate(cls, {**defaults, **params}, spec)
    eps = _entry_points()
    if spec in eps:
        try:
            cls = eps[spec].load()
        except Exception as exc:
            raise ConfigError("predictor", f"entry point {spec!r} failed to load: {exc!r}") from exc
        return _instantiate(cls, params, spec)
    if ":" in spec:
        return _instantiate(_import(spec), params, spec)
    raise ConfigError("predictor", f"unknown predictor {spec!r}; known: {', '.join(known_names())}")


def _describe(name: str, cls: Any, defaults: dict[str, Any], source: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    try:
        for p in inspect.signature(cls).parameters.values():
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            params[p.name] = p.default if p.default is not inspect.Parameter.empty else None
    except (TypeError, ValueError):
        pass
    params.update(defaults)
    doc = (inspect.getdoc(cls) or "").strip().splitlines()
    return {
        "name": name,
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "params": params,
        "doc": doc[0] if doc else "",
        "source": source,
    }


def list_predictors() -> list[dict[str, Any]]:
    """One dict per known predictor: ``name``, ``class``, ``params`` (defaults), ``doc``, ``source``.

    ``source`` is ``"builtin"``, ``"composite"`` or ``"entry-point"``. A
    built-in whose module cannot be imported yet is listed with
    ``doc = "(not available: ...)"``.
    """
    out: list[dict[str, Any]] = []
    for name, (path, defaults) in BUILTINS.items():
        try:
            out.append(_describe(name, _import(path), defaults, "builtin"))
        except ConfigError as exc:
            out.append(
                {
                    "name": name,
                    "class": path,
                    "params": dict(defaults),
                    "doc": f"(not available: {exc.reason})",
                    "source": "builtin",
                }
            )
    for name in COMPOSITES:
        left, _, right = name.partition("+")
        out.append(
            {
                "name": name,
                "class": "predictors.composite:CompositePredictor",
                "params": {"node_predictor": left, "freq_predictor": right},
                "doc": f"{left} for the node count x {right} for the frequency"
                + (" (default for policies)" if name == DEFAULT_PREDICTOR else ""),
                "source": "composite",
            }
        )
    for name, ep in sorted(_entry_points().items()):
        if name in BUILTINS:
            continue
        try:
            out.append(_describe(name, ep.load(), {}, "entry-point"))
        except Exception as exc:
            out.append(
                {
                    "name": name,
                    "class": ep.value,
                    "params": {},
                    "doc": f"(failed to load: {exc!r})",
                    "source": "entry-point",
                }
            )
    return out


__all__ = [
    "BUILTINS",
    "COMPOSITES",
    "DEFAULT_PREDICTOR",
    "ENTRY_POINT_GROUP",
    "get_predictor",
    "known_names",
    "list_predictors",
]
