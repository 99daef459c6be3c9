"""The environment of a benchmark's fresh child process: the code measured first on
its ``PYTHONPATH``, pyarrow optionally unimportable, compiled modules optionally kept.

Shared by ``bench_replay.py``, ``bench_sweep.py`` and ``sweep_phases.py``. It
imports nothing heavy, so that a benchmark's own process stays light (pandas is
imported by the children measured, not here).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

#: A folder whose ``sitecustomize`` makes pyarrow unimportable (``--without-pyarrow``:
#: the README's install, where pyarrow is the optional ``parquet`` extra).
WITHOUT_PYARROW = Path(__file__).resolve().parent / "without_pyarrow"


def child_env(
    code_dir: Path,
    *,
    pycache: Path | None = None,
    without_pyarrow: bool = False,
    also_on_path: Sequence[Path] = (),
) -> dict[str, str]:
    """This process's environment, for a child that runs the code in ``code_dir``.

    ``PYTHONPATH`` is ``code_dir``, then :data:`WITHOUT_PYARROW` (``without_pyarrow``),
    then ``also_on_path``. A folder's ``sitecustomize`` shadows those of the folders
    after it, so give only one folder with one. ``pycache``: keep compiled modules
    there (``PYTHONPYCACHEPREFIX``) even when this environment says not to write
    bytecode; ``None``: the environment decides.
    """
    path = [code_dir] + ([WITHOUT_PYARROW] if without_pyarrow else []) + list(also_on_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in path))
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env
