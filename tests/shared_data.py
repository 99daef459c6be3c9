"""Where tests find the shared data: ``../shared/data`` beside the checkout (real
traces, the Fluid paper's alphas, measured DVFS sweeps). The installed product
never reads it; tests that need it skip, saying what is missing, when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def _find_shared_data() -> Path | None:
    """The first ``shared/data`` folder beside this checkout or one of its parents
    (a worktree may sit one level deeper than the main checkout)."""
    for base in Path(__file__).resolve().parents[1:]:
        candidate = base / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return None


SHARED_DATA = _find_shared_data()


def shared_path(*parts: str) -> Path | None:
    """``SHARED_DATA / parts`` if it exists, else ``None`` (for ``skipif``)."""
    if SHARED_DATA is None:
        return None
    path = SHARED_DATA.joinpath(*parts)
    return path if path.exists() else None


def require_shared(*parts: str) -> Path:
    """``SHARED_DATA / parts``; skips the calling test when it is not there."""
    path = shared_path(*parts)
    if path is None:
        pytest.skip(f"../shared/data/{'/'.join(parts)} not available")
    return path
