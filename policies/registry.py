"""Policy registry: built-ins by name, plug-ins by entry point or dotted path.

``get_policy(spec, **params)`` resolves ``spec`` as

1. a built-in name (``fcfs``, ``easy``, ``conservative``, ``easy-min-energy``,
   ...; see :mod:`policies.factories` and :func:`list_policies`);
2. an entry point in the group ``energysched.policies``;
3. ``package.module:Class`` (or ``package.module:factory``).

``params`` are passed to the factory. An unknown name raises
:class:`~energysched.errors.ConfigError` listing the known names.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from energysched.errors import ConfigError
from policies.base import Policy
from policies.factories import BUILTIN_FACTORIES

ENTRY_POINT_GROUP = "energysched.policies"

#: Built-in policy names and their factories (see :mod:`policies.factories`).
BUILTIN_POLICIES: dict[str, Callable[..., Policy]] = dict(BUILTIN_FACTORIES)


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _load_dotted(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            "policy", f"cannot import module {module_name!r} for {spec!r}: {exc}"
        ) from exc
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        raise ConfigError("policy", f"module {module_name!r} has no attribute {attr!r}") from exc
    return obj


def resolve_policy_factory(spec: str) -> Callable[..., Any]:
    """The class or factory that ``spec`` names."""
    if spec in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[spec]
    eps = _entry_points()
    if spec in eps:
        return eps[spec].load()
    if ":" in spec:
        return _load_dotted(spec)
    known = ", ".join(sorted(set(BUILTIN_POLICIES) | set(eps)))
    raise ConfigError(
        "policy", f"unknown policy {spec!r}; known: {known} (or give package.module:Class)"
    )


def get_policy(spec: str | Policy, **params: Any) -> Policy:
    """A policy instance from a name, entry point or dotted path (see module doc)."""
    if isinstance(spec, Policy):
        return spec
    factory = resolve_policy_factory(spec)
    try:
        policy = factory(**params)
    except TypeError as exc:
        raise ConfigError(f"policy.{spec}", f"bad parameters {sorted(params)}: {exc}") from exc
    if not isinstance(policy, Policy):
        raise ConfigError(
            "policy", f"{spec!r} produced {type(policy).__name__}, not a policies.base.Policy"
        )
    return policy


def list_policies() -> list[dict[str, Any]]:
    """Built-in and plug-in policies with their parameters."""
    rows = []
    for name, factory in BUILTIN_POLICIES.items():
        rows.append(_describe(name, factory, "builtin"))
    for name, ep in _entry_points().items():
        try:
            rows.append(_describe(name, ep.load(), f"entry point {ep.value}"))
        except Exception as exc:  # a broken plug-in must not break the listing
            rows.append(
                {
                    "name": name,
                    "source": f"entry point {ep.value}",
                    "doc": f"failed to load: {exc}",
                    "params": {},
                }
            )
    return rows


def _describe(name: str, factory: Callable[..., Any], source: str) -> dict[str, Any]:
    doc = (inspect.getdoc(factory) or "").split("\n")[0]
    params: dict[str, Any] = {}
    try:
        for p in inspect.signature(factory).parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            params[p.name] = None if p.default is inspect.Parameter.empty else p.default
    except (TypeError, ValueError):
        pass
    return {"name": name, "source": source, "doc": doc, "params": params}
