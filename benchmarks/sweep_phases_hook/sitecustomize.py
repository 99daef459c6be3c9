"""Measurement hook of ``benchmarks/sweep_phases.py`` (not part of the package).

On a process's ``PYTHONPATH`` with ``SWEEP_PHASES_DIR`` set, every process of a
sweep (the sweep process, the fork server and resource tracker it launches, the
workers the fork server forks) appends JSON lines to ``SWEEP_PHASES_DIR/PID.jsonl``:
an event name, the wall time, the process's CPU time. Functions are wrapped by
name when their module is imported; a name a checkout lacks is skipped. With
``SWEEP_PHASES_WITHOUT_PYARROW`` set, pyarrow cannot be imported (the README's
install; this module shadows ``without_pyarrow/sitecustomize.py``, which does the
same for the other benchmarks).
"""

from __future__ import annotations

import functools
import importlib.abc
import json
import os
import sys
import time

_DIR = os.environ.get("SWEEP_PHASES_DIR")
if os.environ.get("SWEEP_PHASES_WITHOUT_PYARROW"):
    sys.modules["pyarrow"] = None  # type: ignore[assignment]  # "not installed"


def emit(event: str, arg: str = "") -> None:
    record = {"ev": event, "t": time.time(), "cpu": time.process_time(), "pid": os.getpid()}
    if arg:
        record["arg"] = arg
    with open(os.path.join(_DIR, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _run_id(*args, **kwargs) -> str:
    for value in args:
        task = getattr(value, "task", value)
        if hasattr(task, "run_id"):
            return task.run_id
    return ""


def _wrap(owner, name: str, label: str) -> None:
    func = getattr(owner, name, None)
    if func is None:
        return

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        arg = _run_id(*args, **kwargs)
        emit(label + ":start", arg)
        try:
            return func(*args, **kwargs)
        finally:
            emit(label + ":end", arg)

    setattr(owner, name, wrapper)


def _wrap_generator(owner, name: str, label: str) -> None:
    func = getattr(owner, name, None)
    if func is None:
        return

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        emit(label + ":start")
        for outcome in func(*args, **kwargs):
            emit(label + ":outcome", outcome.task.run_id)
            yield outcome
        emit(label + ":end")

    setattr(owner, name, wrapper)


def _instrument(module) -> None:
    if module.__name__ == "energysched.sweep":
        _wrap(module, "run_task", "run")
        _wrap(module, "record_outcome", "record")
        _wrap(module, "run_sweep", "run_sweep")
        _wrap(module, "prepare_shared", "prepare_shared")
        for executor in ("SerialExecutor", "ProcessExecutor"):
            if hasattr(module, executor):
                _wrap_generator(getattr(module, executor), "run", "executor_run")
        if hasattr(module, "ProcessExecutor"):
            _wrap(module.ProcessExecutor, "start", "executor_start")
    elif module.__name__ == "energysched.store":
        _wrap(module, "write_tables", "write_tables")
    elif module.__name__ == "multiprocessing.forkserver":
        serve = module.main

        def main(listener_fd, alive_r, preload, *args, **kwargs):
            import importlib

            emit("forkserver:start")
            for name in preload:
                try:
                    importlib.import_module(name)
                except ImportError:
                    pass
            emit("forkserver:ready")
            return serve(listener_fd, alive_r, preload, *args, **kwargs)

        module.main = main


class _Finder(importlib.abc.MetaPathFinder):
    targets = ("energysched.sweep", "energysched.store", "multiprocessing.forkserver")

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.targets:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                execute = spec.loader.exec_module

                def exec_module(module, execute=execute):
                    execute(module)
                    _instrument(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


if _DIR:
    import atexit

    emit("process:start", " ".join(sys.argv)[:60])
    atexit.register(emit, "process:exit")
    os.register_at_fork(after_in_child=lambda: emit("process:forked"))
    sys.meta_path.insert(0, _Finder())
