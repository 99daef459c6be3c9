"""Which run a log line comes from.

A sweep runs many runs, one after another in one process or side by side in
workers that share the terminal, and their log lines (a predictor's warning, a
cleaning report) look alike. While a run runs, :func:`tagged_run` holds its id;
:class:`RunTagFilter`, on the command line's log handler, gives every record a
``run_tag`` attribute (``" [RUN_ID]"`` during a run, ``""`` outside one), which
:data:`LOG_FORMAT` prints after the logger's name::

    WARNING predictors.dvfs [trace__trace__easy-slack-size-freq__auto+fluid__s0]: fluid: ...

Forked local workers inherit the handler and its filter. The module imports
only the standard library, so the command line can use it before any command
loads.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import TextIO

#: the command line's log format: level, logger, the run's tag (see the module docs)
LOG_FORMAT = "%(levelname)s %(name)s%(run_tag)s: %(message)s"

_CURRENT_RUN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "energysched_current_run", default=None
)


@contextlib.contextmanager
def tagged_run(run_id: str) -> Iterator[None]:
    """Tag the log records made inside the ``with`` block with ``run_id``."""
    token = _CURRENT_RUN.set(run_id)
    try:
        yield
    finally:
        _CURRENT_RUN.reset(token)


def current_run() -> str | None:
    """The id of the run being run in this context, or ``None``."""
    return _CURRENT_RUN.get()


class RunTagFilter(logging.Filter):
    """Sets ``record.run_tag`` (``" [RUN_ID]"`` or ``""``); lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        run_id = _CURRENT_RUN.get()
        record.run_tag = f" [{run_id}]" if run_id else ""
        return True


def command_line_handler() -> logging.StreamHandler[TextIO]:
    """A stderr handler with :data:`LOG_FORMAT` and :class:`RunTagFilter`."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RunTagFilter())
    return handler
