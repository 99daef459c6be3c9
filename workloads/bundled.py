"""Traces bundled with the package, addressed as ``builtin:NAME``.

``builtin:kth-sp2`` is the cleaned KTH-SP2 log of the Parallel Workloads
Archive (Swedish Royal Institute of Technology, 28,476 jobs on 100 nodes,
1996-1997; header kept). Every function that reads a trace path accepts
these names.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path
from typing import Any

from energysched.errors import ConfigError

BUILTIN_PREFIX = "builtin:"

#: name -> file in ``workloads/data``
BUILTIN_TRACES: dict[str, str] = {"kth-sp2": "KTH-SP2-1996-2.1-cln.swf.gz"}


def builtin_trace_path(name: str) -> Path:
    """Path of a bundled trace (``"kth-sp2"`` or ``"builtin:kth-sp2"``)."""
    key = name[len(BUILTIN_PREFIX) :] if name.startswith(BUILTIN_PREFIX) else name
    if key not in BUILTIN_TRACES:
        raise ConfigError(
            "trace",
            f"unknown built-in trace {name!r}; known: {', '.join(BUILTIN_PREFIX + k for k in BUILTIN_TRACES)}",
        )
    return Path(str(files("workloads") / "data" / BUILTIN_TRACES[key]))


def resolve_trace_source(source: Any) -> Any:
    """``builtin:NAME`` -> the bundled file's path; anything else unchanged."""
    if isinstance(source, (str, os.PathLike)) and str(source).startswith(BUILTIN_PREFIX):
        return builtin_trace_path(str(source))
    return source
