"""Makes pyarrow unimportable in a benchmark's child processes, as in the README's
install, where pyarrow is the optional ``parquet`` extra: ``bench_replay.py`` and
``bench_sweep.py`` with ``--without-pyarrow`` put this folder on the children's ``PYTHONPATH`` (after the
code measured), so that ``import pyarrow`` raises ImportError there and pandas
runs without it. (It shadows a ``sitecustomize`` module of the environment.)"""

import sys

sys.modules["pyarrow"] = None  # type: ignore[assignment]
