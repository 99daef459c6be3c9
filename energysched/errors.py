"""The exception hierarchy shared by every package.

Every error the library raises on purpose derives from :class:`EnergySchedError`
and says what to fix: which file and line, which configuration key, which job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class EnergySchedError(Exception):
    """Root of every error energysched raises on purpose.

    Subclasses keep their constructor arguments in ``args`` so that
    ``type(e)(*e.args)`` rebuilds them (SimPy re-raises that way, and pickling
    across process pools and Dask workers relies on it); ``str(e)`` is the
    formatted message.
    """

    _text: str = ""

    def __str__(self) -> str:
        return self._text or super().__str__()


class TraceFormatError(EnergySchedError, ValueError):
    """A trace file does not follow the Standard Workload Format.

    Carries the file, the 1-based line number, the field name and the expected
    form, so the message can point the user at the exact place to fix.
    """

    def __init__(
        self,
        path: str | None,
        line: int | None,
        field: str | None,
        message: str,
        expected: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.expected = expected
        self.reason = message
        where = str(path) if path is not None else "<trace>"
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field {field!r}"
        text = f"{where}: {message}"
        if expected:
            text += f" (expected {expected})"
        super().__init__(path, line, field, message)
        self.args = (path, line, field, message, expected)
        self._text = text

    def __reduce__(self) -> tuple[Callable[..., TraceFormatError], tuple[Any, ...]]:
        return (_rebuild_trace_error, self.args)


class ConfigError(EnergySchedError, ValueError):
    """A configuration value (platform file, experiment file, parameter) is invalid.

    ``key`` is the dotted path of the offending key, e.g. ``node_types[0].pstates[2].freq_ghz``.
    """

    def __init__(self, key: str, message: str, source: str | None = None) -> None:
        self.key = key
        self.source = source
        self.reason = message
        prefix = f"{source}: " if source else ""
        super().__init__(key, message, source)
        self._text = f"{prefix}{key}: {message}"


class PolicyError(EnergySchedError, RuntimeError):
    """A scheduling policy made a decision the platform cannot honour.

    ``job_id`` names the job, ``limit`` the violated limit (e.g. ``free_nodes``).
    """

    def __init__(self, job_id: int | None, limit: str, message: str) -> None:
        self.job_id = job_id
        self.limit = limit
        self.reason = message
        who = f"job {job_id}" if job_id is not None else "policy"
        super().__init__(job_id, limit, message)
        self._text = f"{who}: {limit}: {message}"


class NotFittedError(EnergySchedError, RuntimeError):
    """A predictor was asked to predict before :meth:`fit` was called."""


def _rebuild_trace_error(
    path: str | None, line: int | None, field: str | None, message: str, expected: str | None
) -> TraceFormatError:
    return TraceFormatError(path, line, field, message, expected=expected)
