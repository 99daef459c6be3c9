"""Make the user's folders importable for ``module:Class`` plug-ins.

``energysched run --policy my_policies:Cls`` should find ``my_policies.py``
in the current folder, and ``energysched experiment run exp.toml`` a module
saved next to ``exp.toml``, as ``python script.py`` would. The console script
does not put either folder on ``sys.path``, so the CLI does it here, once per
command, rather than the registries on every lookup.

The folders are *appended* to ``sys.path``: a user's file called
``policies.py`` does not shadow the installed ``policies`` package. Worker
processes (the local pool and a local Dask cluster, both started with
``spawn``) inherit the parent's ``sys.path``; workers of a remote Dask
scheduler need the module installed or on their own ``PYTHONPATH``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)


def make_importable(folder: str | Path) -> None:
    """Append ``folder`` (resolved) to ``sys.path`` unless it is already there."""
    path = str(Path(folder).resolve())
    if path not in sys.path:
        sys.path.append(path)
        log.debug("plug-in folder %s added to the import path", path)
