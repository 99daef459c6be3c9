"""Tests of what a process imports run their code in a new interpreter, so that
the modules this test process has loaded already do not hide an import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def fresh_python(code: str, cwd: Path | None = None) -> str:
    """What ``code`` prints (stripped) when a new interpreter runs it (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd
    )
    return done.stdout.strip()
