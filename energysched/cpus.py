"""How many CPUs this process may use: the default number of local workers.

``os.cpu_count()`` counts the machine's CPUs, not those this process may run on.
Inside a batch job (Slurm and PBS pin a job to its allocated cores with a CPU
set) or a container with a CPU quota (``docker run --cpus 2``), one worker per
machine CPU would start many times more processes than there are cores to run
them, each holding a replay's memory. :func:`usable_cpus` counts what the
scheduler of this process allows:

* the CPUs of the process's affinity mask (``os.sched_getaffinity``, where the
  platform has it), else ``os.cpu_count()``;
* at most the CPU quota of its cgroup (cgroup v2 ``cpu.max``: ``quota period``
  allows ``quota / period`` CPUs of time, rounded up), where one is set.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["cgroup_cpu_quota", "usable_cpus"]


def usable_cpus(cgroup_root: Path | str = "/sys/fs/cgroup") -> int:
    """The CPUs this process may use (module docstring); at least 1."""
    if hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    else:  # macOS, Windows: no affinity mask to read
        count = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        count = min(count, quota)
    return max(1, count)


def cgroup_cpu_quota(
    cgroup_root: Path | str = "/sys/fs/cgroup", proc_cgroup: Path | str = "/proc/self/cgroup"
) -> int | None:
    """CPUs of time this process's cgroup (v2) may use, rounded up; ``None`` without a quota.

    Reads ``cpu.max`` (``"max PERIOD"``: no quota; ``"QUOTA PERIOD"``: ``QUOTA / PERIOD``
    CPUs) in the process's own cgroup (``0::PATH`` of ``proc_cgroup``) and in each
    parent up to ``cgroup_root``; the smallest quota wins. ``None`` where the files
    are absent or unreadable (cgroup v1, not Linux).
    """
    root = Path(cgroup_root)
    try:
        lines = Path(proc_cgroup).read_text(encoding="ascii").splitlines()
    except OSError:
        lines = []
    own = next((line[3:] for line in lines if line.startswith("0::")), "/")
    folder = root / own.strip("/")
    quotas: list[int] = []
    while True:
        quota = _read_cpu_max(folder / "cpu.max")
        if quota is not None:
            quotas.append(quota)
        if folder == root or root not in folder.parents:
            break
        folder = folder.parent
    return min(quotas) if quotas else None


def _read_cpu_max(path: Path) -> int | None:
    """The CPUs one ``cpu.max`` file allows (rounded up), ``None`` for ``max`` or no file."""
    try:
        fields = path.read_text(encoding="ascii").split()
    except OSError:
        return None
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota_us, period_us = int(fields[0]), int(fields[1])
    except ValueError:
        log.debug("%s: unexpected content %r; ignored", path, fields)
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return max(1, math.ceil(quota_us / period_us))
