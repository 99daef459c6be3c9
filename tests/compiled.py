"""The compiled modules' tests: import a kernel, or skip saying it is not built,
unless ``ENERGYSCHED_REQUIRE_COMPILED`` is set (as ``.ci/run`` sets it: there a
kernel that was not built is a failure)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def compiled_module(name: str) -> ModuleType:
    """The compiled module ``name`` (e.g. ``"policies._placement"``); skips the test
    when it is not built, fails it instead under ``ENERGYSCHED_REQUIRE_COMPILED``."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        if os.environ.get("ENERGYSCHED_REQUIRE_COMPILED"):
            pytest.fail(f"ENERGYSCHED_REQUIRE_COMPILED is set but the kernel is not built: {error}")
        pytest.skip(f"compiled kernel not built ({error}): `pip install -e .` builds it")
