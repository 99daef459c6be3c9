"""The compiled kernel of conservative backfilling's long-queue batch
(``policies._placement.conservative_batch``) against its Python reference
(:func:`policies.profile.conservative_batch`).

* Random queues, profiles, removed jobs and stale block summaries
  (hypothesis): the same jobs start and the profile ends with the same steps.
* The stop test is exact: stopping every few keys starts the jobs of a batch
  that never stops early.
* Whole replays, every job submitted at once: the kernel and the Python path
  give the same start times, and 5,000 SDSC-SP2 jobs give the start-time digest
  of ``benchmarks/bench_long_queue.py``.

Without a built kernel (an install without a C compiler, or a source tree
never built) these tests skip, saying so, unless ``ENERGYSCHED_REQUIRE_COMPILED``
is set (CI sets it: there a missing kernel is a failure).
"""

from __future__ import annotations

import hashlib
import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import policies.profile as profile_module
from policies.backfilling import QueuePolicy
from policies.profile import Profile, conservative_batch, long_queue_batch
from policies.queue_index import GONE
from tests.compiled import compiled_module
from tests.policies.replay_helpers import start_times, submitted_at_once


def _kernel():
    return compiled_module("policies._placement").conservative_batch


def _table(jobs: list[tuple[int, float]], block: int, top: int) -> np.ndarray:
    """Block summaries as a QueueIndex keeps them: per block, the shortest length
    among its jobs of at most c nodes, for c = 0..top (jobs above top left out)."""
    n_blocks = max(1, (len(jobs) + block - 1) // block)
    table = np.full((n_blocks, top + 1), math.inf)
    for key, (n, length) in enumerate(jobs):
        if n <= top:
            row = table[key // block]
            row[n] = min(row[n], length)
    np.minimum.accumulate(table, axis=1, out=table)
    return table


_LENGTHS = [0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 8.0, 0.1 + 0.2, 1e5]
_releases = st.lists(
    st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0, 9.0, 30.0]), st.integers(1, 4)),
    max_size=12,
)


@st.composite
def _batches(draw, lengths, fewest_nodes=0):
    """(profile, now, free, jobs with GONE for the removed, first, table, stop_every, block)."""
    now = draw(st.sampled_from([0.0, 0.1, 1e8]))
    free_now = draw(st.integers(0, 10))
    profile = Profile(now, free_now, [(now + t, n) for t, n in draw(_releases)])
    jobs = draw(st.lists(st.tuples(st.integers(fewest_nodes, 14), lengths), max_size=70))
    block = draw(st.sampled_from([1, 2, 4, 8]))
    # as a QueueIndex: columns up to the largest node count of a job that may fit
    partition = max(profile.free) + draw(st.integers(0, 3))
    top = max(1, min(max((n for n, _ in jobs), default=1), partition))
    # summaries taken before some jobs left: stale, they claim jobs that are gone
    table = _table(jobs, block, top)
    gone = draw(st.sets(st.integers(0, max(0, len(jobs) - 1)), max_size=len(jobs) // 3))
    first = draw(st.integers(0, len(jobs)))
    nodes = [GONE if key in gone or key < first else n for key, (n, _) in enumerate(jobs)]
    free = draw(st.sampled_from([profile.free[0], max(0, profile.free[0] - 2)]))
    stop_every = draw(st.sampled_from([1, 2, 3, 5, 32]))
    return (
        profile,
        now,
        free,
        nodes,
        [length for _, length in jobs],
        first,
        table,
        stop_every,
        block,
    )


def _run_both(kernel, profile, now, free, nodes, lengths, first, table, stop_every, block):
    fast = Profile(now, 0, [])
    fast.times, fast.free = list(profile.times), list(profile.free)
    got = kernel(
        fast,
        now,
        free,
        np.array(nodes, dtype=np.int64),
        np.array(lengths, dtype=np.float64),
        first,
        len(nodes),
        table,
        stop_every,
        block,
        GONE,
        update_profile=True,
    )
    want = conservative_batch(
        profile, now, free, nodes, lengths, first, len(nodes), table, stop_every, block, GONE
    )
    return got, want, fast


@settings(max_examples=400, deadline=None)
@given(case=_batches(st.sampled_from([*_LENGTHS, math.inf])))
def test_kernel_starts_the_jobs_of_the_python_reference(case):
    kernel = _kernel()
    profile, _, free, nodes, lengths, *_ = case
    got, want, fast = _run_both(kernel, *case)
    assert got == want
    # the same reservations were made (until the batch stopped)
    assert fast.times == profile.times
    assert fast.free == profile.free
    assert sum(nodes[k] for k in got) <= free
    assert all(lengths[k] >= 0 and nodes[k] != GONE for k in got)


@settings(max_examples=300, deadline=None)
@given(case=_batches(st.sampled_from(_LENGTHS), fewest_nodes=1))
def test_the_stop_test_never_loses_a_start(case):
    """Stopping once no job left could start now (every few keys) starts the same
    jobs as placing the whole queue: reservations only take nodes away. (Jobs
    of at least one node, as in a cleaned trace: the test reads no free node as
    "nothing starts".)"""
    kernel = _kernel()
    profile, now, free, nodes, lengths, first, table, stop_every, block = case
    whole = Profile(now, 0, [])
    whole.times, whole.free = list(profile.times), list(profile.free)
    never_stops = len(nodes) + 1
    want = conservative_batch(
        whole, now, free, nodes, lengths, first, len(nodes), table, never_stops, block, GONE
    )
    got, _, _ = _run_both(
        kernel, profile, now, free, nodes, lengths, first, table, stop_every, block
    )
    assert got == want


def test_kernel_rejects_what_it_cannot_read():
    kernel = _kernel()
    profile = Profile(0.0, 4, [(1.0, 2)])
    nodes = np.array([1, 2], dtype=np.int64)
    lengths = np.array([1.0, 2.0])
    table = _table([(1, 1.0), (2, 2.0)], 64, 4)
    with pytest.raises(ValueError, match="beyond the 2 jobs"):
        kernel(profile, 0.0, 4, nodes, lengths, 0, 3, table, 32, 64, GONE)
    with pytest.raises(ValueError, match="-1 nodes"):
        kernel(profile, 0.0, 4, np.array([1, -1]), lengths, 0, 2, table, 32, 64, GONE)
    with pytest.raises(ValueError, match="blocks"):
        kernel(profile, 0.0, 4, nodes, lengths, 0, 2, table, 32, 1, GONE)


def test_kernel_on_a_batch_worked_by_hand():
    """4 nodes free now and 2 more at 1 s; jobs of (1 node, 1 s) and (2 nodes, 2 s)
    both start now and leave 4 - 1 - 2 = 1 node free until 1 s, 6 - 2 = 4 until
    2 s, and 6 after; a third job of 5 nodes waits until 2 s, so it does not start."""
    kernel = _kernel()
    profile = Profile(0.0, 4, [(1.0, 2)])
    nodes = np.array([1, 2, 5], dtype=np.int64)
    lengths = np.array([1.0, 2.0, 1.0])
    table = _table([(1, 1.0), (2, 2.0), (5, 1.0)], 64, 6)
    assert kernel(
        profile, 0.0, 4, nodes, lengths, 0, 3, table, 32, 64, GONE, update_profile=True
    ) == [0, 1]
    assert (profile.times, profile.free) == ([0.0, 1.0, 2.0, 3.0], [1, 4, 1, 6])


def test_the_path_used_is_logged_once(monkeypatch, caplog):
    monkeypatch.setattr(profile_module, "_path_logged", False)
    monkeypatch.setattr(profile_module, "compiled_conservative_batch", None)
    with caplog.at_level(logging.INFO, logger="policies.profile"):
        assert long_queue_batch() == (conservative_batch, False)  # Python reads lists
        assert long_queue_batch() == (conservative_batch, False)
    assert [r.getMessage() for r in caplog.records if "kernel" in r.getMessage()] == [
        "conservative backfilling on long queues: the compiled kernel (policies._placement) "
        "is not built, the Python reference runs (slower, same schedules); `pip install` "
        "with a C compiler builds it"
    ]


@pytest.mark.parametrize(
    "trace_file, max_jobs",
    [("SDSC-SP2-1998-4.2-cln.swf.gz", 1500), ("CTC-SP2-1996-3.1-cln.swf.gz", 800)],
)
def test_replays_with_the_kernel_and_with_python_give_the_same_starts(
    trace_file, max_jobs, monkeypatch
):
    kernel = _kernel()
    trace = submitted_at_once(trace_file, max_jobs)
    assert long_queue_batch() == (kernel, True)  # the kernel reads the index's arrays
    policy = QueuePolicy(backfill="conservative")
    got = start_times(trace, policy)
    assert policy.indexed_batches > 100  # the long-queue batch made the decisions
    monkeypatch.setattr(profile_module, "compiled_conservative_batch", None)
    want = start_times(trace, QueuePolicy(backfill="conservative"))
    assert np.array_equal(got, want)
    assert np.isfinite(got).all()


def test_five_thousand_jobs_at_once_keep_the_benchmarks_schedule():
    """``python benchmarks/bench_long_queue.py --jobs 5000``'s digest (start times),
    the same before the kernel (11 s of Python per replay, skipped without it)."""
    _kernel()
    trace = submitted_at_once("SDSC-SP2-1998-4.2-cln.swf.gz", 5000)
    starts = start_times(trace, QueuePolicy(backfill="conservative"))
    assert hashlib.sha256(starts.tobytes()).hexdigest()[:16] == "c625211d675271b7"
