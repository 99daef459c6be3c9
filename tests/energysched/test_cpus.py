"""The default number of local workers: the CPUs this process may use, not the machine's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from energysched import cpus
from energysched.cpus import cgroup_cpu_quota, usable_cpus


def _cgroup_tree(root: Path, limits: dict[str, str], own: str) -> Path:
    """A fake cgroup v2 tree under ``root``: ``cpu.max`` per folder, and a
    ``/proc/self/cgroup`` naming ``own``. Returns that file."""
    for folder, text in limits.items():
        path = root / folder.strip("/")
        path.mkdir(parents=True, exist_ok=True)
        (path / "cpu.max").write_text(text + "\n", encoding="ascii")
    proc = root.parent / "proc_self_cgroup"
    proc.write_text(f"0::{own}\n", encoding="ascii")
    return proc


def test_a_quota_of_one_and_a_half_cpus_allows_two(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    proc = _cgroup_tree(root, {"/job": "150000 100000"}, "/job")
    assert cgroup_cpu_quota(root, proc) == 2


def test_no_quota_reads_as_none(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    proc = _cgroup_tree(root, {"/": "max 100000", "/job": "max 100000"}, "/job")
    assert cgroup_cpu_quota(root, proc) is None
    assert cgroup_cpu_quota(tmp_path / "absent", tmp_path / "absent_proc") is None


def test_the_smallest_quota_on_the_way_to_the_root_wins(tmp_path: Path) -> None:
    # a job limited to 8 CPUs inside a slice limited to 3: the slice's limit binds
    root = tmp_path / "cgroup"
    limits = {"/slice": "300000 100000", "/slice/job": "800000 100000"}
    proc = _cgroup_tree(root, limits, "/slice/job")
    assert cgroup_cpu_quota(root, proc) == 3


def test_a_malformed_cpu_max_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    proc = _cgroup_tree(root, {"/job": "lots 100000"}, "/job")
    assert cgroup_cpu_quota(root, proc) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity mask here")
def test_usable_cpus_is_the_affinity_mask_capped_by_the_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a batch job pinned to 3 of the machine's CPUs
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5, 7})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(cpus, "cgroup_cpu_quota", lambda root: None)
    assert usable_cpus() == 3
    # and a container quota of 2 CPUs on top
    monkeypatch.setattr(cpus, "cgroup_cpu_quota", lambda root: 2)
    assert usable_cpus() == 2


def test_the_default_executor_has_one_worker_per_usable_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from energysched import sweep

    monkeypatch.setattr(sweep, "usable_cpus", lambda: 3)
    executor = sweep.make_executor()
    assert isinstance(executor, sweep.ProcessExecutor)
    assert executor.workers == 3
    monkeypatch.setattr(sweep, "usable_cpus", lambda: 1)
    assert isinstance(sweep.make_executor(), sweep.SerialExecutor)
