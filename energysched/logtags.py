"""Which run a log line comes from.

A sweep runs many runs, one after another in one process or side by side in
workers that share the terminal, and their log lines (a predictor's warning, a
cleaning report) look alike. While a run runs, :func:`tagged_run` holds its id;
:class:`RunTagFilter`, on the command line's log handler, gives every record a
``run_tag`` attribute (``" [RUN_ID]"`` during a run, ``""`` outside one), which
:data:`LOG_FORMAT` prints after the logger's name::

    WARNING predictors.dvfs [trace__trace__easy-slack-size-freq__auto+fluid__s0]: fluid: ...

Forked local workers inherit the handler and its filter. :func:`run_log` keeps
a run's warnings, which a sweep records with its results (``run.json``, the
report); so the terminal shows a kind of warning (its logger and message
template) for the first run of a process that gives it, with
:data:`REPEAT_NOTE`, and not again for later runs. The module imports only the
standard library, so the command line can use it before any command loads.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import TextIO

#: the command line's log format: level, logger, the run's tag, the message and, on
#: a run's warning, :data:`REPEAT_NOTE` (see the module docs)
LOG_FORMAT = "%(levelname)s %(name)s%(run_tag)s: %(message)s%(repeat_note)s"

#: what the command line adds to a run's warning (later runs' repeats are not shown)
REPEAT_NOTE = " (not shown again for later runs; each run's run.json lists its warnings)"

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
    """Sets ``record.run_tag`` (``" [RUN_ID]"`` or ``""``) and ``record.repeat_note``;
    drops a run's WARNING record of a kind (logger and message template) that an
    earlier run of this process gave, and lets every other record through."""

    def __init__(self) -> None:
        super().__init__()
        #: (logger, message template) -> the run that first gave that warning
        self._first_run: dict[tuple[str, str], str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        run_id = _CURRENT_RUN.get()
        record.run_tag = f" [{run_id}]" if run_id else ""
        record.repeat_note = ""
        if run_id and record.levelno == logging.WARNING:
            if self._first_run.setdefault((record.name, str(record.msg)), run_id) != run_id:
                return False  # kept with that run's results (run_log)
            record.repeat_note = REPEAT_NOTE
        return True


class _RunLog(logging.Handler):
    """Keeps the records of one run (:func:`run_log`); a record that no other handler
    takes goes on to :data:`logging.lastResort`, as it would without one (passed on by
    the first of these handlers when runs run side by side in threads)."""

    def __init__(self, run_id: str, level: int) -> None:
        super().__init__(level)
        self.run_id = run_id
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if _CURRENT_RUN.get() == self.run_id:
            self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
        last = logging.lastResort
        if (
            last is not None
            and record.levelno >= last.level
            and self is next(h for h in logging.getLogger().handlers if isinstance(h, _RunLog))
            and not _others_take(record)
        ):
            last.handle(record)


def _others_take(record: logging.LogRecord) -> bool:
    """Whether a handler other than the runs' own (:class:`_RunLog`) takes ``record``
    (the walk of :meth:`logging.Logger.callHandlers`)."""
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None:
        if any(not isinstance(h, _RunLog) and record.levelno >= h.level for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


@contextlib.contextmanager
def run_log(run_id: str, level: int = logging.WARNING) -> Iterator[list[str]]:
    """Inside :func:`tagged_run`: the log records of at least ``level`` that the run
    makes while the block runs, as ``"LEVEL logger: message"`` lines (a list that
    fills as they come). Where they are printed does not change."""
    handler = _RunLog(run_id, level)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)


def command_line_handler() -> logging.StreamHandler[TextIO]:
    """A stderr handler with :data:`LOG_FORMAT` and :class:`RunTagFilter`."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RunTagFilter())
    return handler
