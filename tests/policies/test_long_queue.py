"""Long queues: the indexed EASY scan (policies.queue_index) and the bounded
earliest-start search of conservative backfilling give the schedules of the
plain versions.

* :class:`QueueIndex.first_backfill` against a brute-force walk of the queue on
  random queues, removals, appends and queries (hypothesis), including shadow
  times that a job's end meets exactly in floating point.
* The plain earliest-start search (``tests.policies.replay_helpers.earliest``,
  the reference of :meth:`Profile.place`) with a lower bound against a
  brute-force search over the profile's breakpoints, on random profiles and
  reservations.
* Whole replays of real-trace slices, every job submitted at once: EASY and
  conservative give the start times of straightforward reference policies kept
  here (the module docstring of :mod:`policies.backfilling`, written as plainly
  as possible).
* Predictor-driven EASY and conservative backfilling on a long queue (the
  index of the chooser's decisions, kept up to date from
  :meth:`Chooser.changed_decisions`) make the decisions of the plain scans, and ``changed_decisions`` names every queued job whose
  decision a ``prepare`` made or changed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.backfilling import QueuePolicy, easy_policy, reservation
from policies.base import Decision, Policy, planned_length_s, release_s
from policies.profile import Profile
from policies.profile import may_start_now as _may_start_now
from policies.queue_index import BLOCK, QueueIndex
from policies.registry import get_policy
from tests.policies.replay_helpers import (
    earliest,
    learning_replay,
    reserve,
    start_times,
    submitted_at_once,
    watch_changed_decisions,
)


# ---------------------------------------------------------------------- QueueIndex
class _Job:
    def __init__(self, nodes: int, length: float) -> None:
        self.nodes = nodes
        self.length = length


def _brute_first(jobs, gone, key, free, extra, shadow, now):
    for k in range(key, len(jobs)):
        if k in gone:
            continue
        n, length = jobs[k].nodes, jobs[k].length
        if n <= free and (now + length <= shadow or n <= extra):
            return k
    return -1


_job = st.builds(
    _Job,
    st.integers(1, 20),  # (some larger than the partition: they never fit)
    # (NaN: a length no test passes, which must hide no other job's length)
    st.sampled_from([0.1, 1.0, 3.0, 7.5, 60.0, 3600.0, 1e5, 0.30000000000000004, math.nan]),
)


@settings(max_examples=200, deadline=None)
@given(
    first=st.lists(_job, min_size=1, max_size=3 * BLOCK),
    later=st.lists(_job, max_size=2 * BLOCK),
    data=st.data(),
)
def test_first_backfill_equals_a_walk_of_the_queue(first, later, data):
    jobs = list(first)
    index = QueueIndex(jobs, lambda j: j.nodes, lambda j: j.length, max_nodes=16)
    gone: set[int] = set()
    for _ in range(12):
        action = data.draw(st.sampled_from(["query", "query", "remove", "append", "replace"]))
        if action == "replace" and len(gone) < len(jobs):
            # new decisions for some waiting jobs (smaller, larger, shorter, longer)
            waiting = [k for k in range(len(jobs)) if k not in gone]
            keys = data.draw(st.lists(st.sampled_from(waiting), min_size=1, max_size=5))
            changes = [(key, data.draw(_job)) for key in keys]
            index.replace(changes)
            for key, job in changes:
                jobs[key] = job
        elif action == "append" and later:
            more = later[: data.draw(st.integers(1, len(later)))]
            later = later[len(more) :]
            jobs += more
            index.append(more)
        elif action == "remove" and len(gone) < len(jobs):
            key = data.draw(st.sampled_from([k for k in range(len(jobs)) if k not in gone]))
            index.remove(key)
            gone.add(key)
        now = data.draw(st.sampled_from([0.0, 0.2, 1e8, 1234.5]))
        length = data.draw(st.sampled_from([0.1, 1.0, 3.0, 60.0, 3600.0, math.inf]))
        shadow = now + length  # a job of exactly this length ends at the shadow time
        shadow = data.draw(st.sampled_from([shadow, math.nextafter(shadow, -math.inf), shadow]))
        free = data.draw(st.integers(0, 16))  # (at most the partition's nodes)
        extra = data.draw(st.integers(0, 40))
        key = data.draw(st.integers(0, len(jobs)))
        want = _brute_first(jobs, gone, key, free, extra, shadow, now)
        assert index.first_backfill(key, free, extra, shadow, now) == want
    waiting = [j for k, j in enumerate(jobs) if k not in gone]
    assert index.waiting_jobs() == waiting
    assert index.waiting == len(waiting)
    if waiting:
        assert index.jobs[index.first] is waiting[0] and index.jobs[index.last] is waiting[-1]


def test_first_backfill_reads_every_block_summary_after_removals():
    """A block whose only fitting job started is skipped after its summary is
    refreshed, and the search finds the next block's job."""
    jobs = [_Job(10, 100.0) for _ in range(4 * BLOCK)]
    jobs[BLOCK + 3] = _Job(1, 10.0)
    jobs[3 * BLOCK + 5] = _Job(2, 5.0)
    index = QueueIndex(jobs, lambda j: j.nodes, lambda j: j.length, max_nodes=16)
    assert index.first_backfill(1, free=2, extra=0, shadow=50.0, now=0.0) == BLOCK + 3
    index.remove(BLOCK + 3)
    # the 2-node job ends at 5 <= shadow 50: found behind the stale block
    assert index.first_backfill(1, free=2, extra=0, shadow=50.0, now=0.0) == 3 * BLOCK + 5
    # ending after the shadow time, it still fits in 2 extra nodes, not in 1
    assert index.first_backfill(1, free=2, extra=2, shadow=4.0, now=0.0) == 3 * BLOCK + 5
    assert index.first_backfill(1, free=2, extra=1, shadow=4.0, now=0.0) == -1


# ---------------------------------------------------------------------- Profile
def _brute_earliest(profile: Profile, nodes: int, duration: float) -> float:
    times, free = profile.times, profile.free

    def free_over(start: float) -> bool:
        end = start + duration
        for i, t in enumerate(times):
            seg_end = times[i + 1] if i + 1 < len(times) else math.inf
            if seg_end > start and t < end and free[i] < nodes:
                return False
        return True

    return next((t for t in times if free_over(t)), math.inf)


@settings(max_examples=200, deadline=None)
@given(
    free_now=st.integers(0, 8),
    releases=st.lists(st.tuples(st.sampled_from([1.0, 2.5, 4.0, 9.0]), st.integers(1, 4))),
    jobs=st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from([0.5, 1.0, 1.5, 3.0, 8.0])), max_size=25
    ),
)
def test_earliest_with_a_lower_bound_equals_a_brute_force_search(free_now, releases, jobs):
    profile = Profile(0.0, free_now, releases)
    last: dict[tuple[int, float], float] = {}
    for nodes, duration in jobs:
        want = _brute_earliest(profile, nodes, duration)
        assert earliest(profile, nodes, duration) == want
        assert earliest(profile, nodes, duration, last.get((nodes, duration))) == want
        last[(nodes, duration)] = want
        if want != math.inf:
            reserve(profile, want, duration, nodes)


@settings(max_examples=200, deadline=None)
@given(
    free_now=st.integers(0, 8),
    releases=st.lists(st.tuples(st.sampled_from([1.0, 2.5, 4.0, 9.0]), st.integers(1, 4))),
    reserved=st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from([0.5, 1.0, 1.5, 3.0])), max_size=8
    ),
    shapes=st.dictionaries(st.integers(1, 12), st.sampled_from([0.5, 1.0, 1.5, 2.5, 3.0, 8.0])),
)
def test_may_start_now_equals_a_search_for_a_start_now(free_now, releases, reserved, shapes):
    """The conservative early stop: some shape can start now exactly when the
    brute-force search puts its earliest start now."""
    profile = Profile(0.0, free_now, releases)
    for nodes, duration in reserved:
        start = _brute_earliest(profile, nodes, duration)
        if start != math.inf:
            reserve(profile, start, duration, nodes)
    pairs = sorted(shapes.items())
    want = any(_brute_earliest(profile, n, d) == 0.0 for n, d in pairs)
    assert _may_start_now(profile, 0.0, pairs) == want


# ---------------------------------------------------------------------- replays
class _PlainEasy(Policy):
    """Rigid EASY as the module docstring states it, one queue walk per batch."""

    name = "plain-easy"

    def schedule(self, view):
        free = view.free_nodes[0]
        now = view.now_s
        fmax = self.platform.node_types[0].fmax_ghz
        out, started = [], []
        queue = list(view.queue)
        k = 0
        while k < len(queue) and queue[k].requested_nodes <= free:
            job = queue[k]
            out.append(Decision(job, job.requested_nodes, fmax, 0, None, planned_length_s(job)))
            free -= job.requested_nodes
            started.append((now + planned_length_s(job), job.requested_nodes))
            k += 1
        if k == len(queue) or free == 0:
            return out
        shadow, extra = reservation(view.running[0], started, free, queue[k].requested_nodes, now)
        for job in queue[k + 1 :]:
            n, length = job.requested_nodes, planned_length_s(job)
            if n > free:
                continue
            if now + length <= shadow:
                free -= n
            elif n <= extra:
                free -= n
                extra -= n
            else:
                continue
            out.append(Decision(job, n, fmax, 0, None, length))
        return out


class _PlainConservative(Policy):
    """Rigid conservative backfilling: every queued job placed in queue order in a
    profile rebuilt every batch, each search from the profile's start."""

    name = "plain-conservative"

    def schedule(self, view):
        now = view.now_s
        free = view.free_nodes[0]
        fmax = self.platform.node_types[0].fmax_ghz
        after = math.nextafter(now, math.inf)
        profile = Profile(
            now, free, [(max(release_s(r, now), after), r.nodes) for r in view.running[0]]
        )
        out = []
        for job in view.queue:
            n, length = job.requested_nodes, planned_length_s(job)
            start = earliest(profile, n, length)
            if start == math.inf:
                continue
            if start == now:
                out.append(Decision(job, n, fmax, 0, None, length))
            reserve(profile, start, length, n)
        return out


def test_easy_on_a_long_queue_starts_jobs_as_the_plain_walk():
    trace = submitted_at_once("HPC2N-2002-2.2-cln.swf.gz", 3000)
    policy = easy_policy()
    got = start_times(trace, policy)
    assert policy.indexed_batches > 1000  # the queue index made the decisions
    want = start_times(trace, _PlainEasy())
    assert np.array_equal(got, want)
    assert np.isfinite(got).all()


@pytest.mark.parametrize(
    "trace_file, max_jobs",
    [
        ("SDSC-SP2-1998-4.2-cln.swf.gz", 500),
        ("KTH-SP2-1996-2.1-cln.swf.gz", 600),
        ("CTC-SP2-1996-3.1-cln.swf.gz", 600),
    ],
)
def test_conservative_on_a_long_queue_starts_jobs_as_the_plain_version(trace_file, max_jobs):
    """The indexed scan (block summaries for the stop test, one-pass placement,
    searches from the latest start of a dominated shape) against the plain loop
    that places every queued job from the profile's start in every batch."""
    trace = submitted_at_once(trace_file, max_jobs)
    policy = QueuePolicy(backfill="conservative")
    got = start_times(trace, policy)
    assert policy.indexed_batches > 100  # the long-queue path made the decisions
    want = start_times(trace, _PlainConservative())
    assert np.array_equal(got, want)
    assert np.isfinite(got).all()


# ---------------------------------------------------------------------- predictor-driven
def _plain_scan(policy):
    """``policy`` with a chooser that cannot tell which decisions changed: every batch
    reads every queued job's decision (the plain scans, :meth:`QueuePolicy._one_partition`
    and :meth:`QueuePolicy._conservative`)."""
    policy.chooser.changed_decisions = lambda: None
    return policy


@pytest.mark.parametrize(
    "trace_file, max_jobs, name, predictor, params",
    [
        ("SDSC-SP2-1998-4.2-cln.swf.gz", 3000, "easy-slack-size-freq", "adept+fluid", {}),
        ("CTC-SP2-1996-3.1-cln.swf.gz", 2000, "easy-min-energy", "auto+fluid", {}),
        ("KTH-SP2-1996-2.1-cln.swf.gz", 2000, "easy", "amdahl+fluid", {}),
        ("KTH-SP2-1996-2.1-cln.swf.gz", 800, "conservative", "adept+fluid", {}),
        (
            "SDSC-SP2-1998-4.2-cln.swf.gz",
            800,
            "easy-slack-size-freq",
            "auto+fluid",
            {"backfill": "conservative"},
        ),
    ],
)
def test_predictor_driven_backfilling_on_a_long_queue_decides_as_the_plain_scan(
    trace_file, max_jobs, name, predictor, params, monkeypatch
):
    """Every job submitted at once: the decisions read from the index (new
    decisions of queued jobs put in place as their applications are refitted)
    start the same jobs at the same times on the same nodes and clocks, under
    EASY and under conservative backfilling."""
    replaced: list[int] = []
    original = QueueIndex.replace

    def counting(index, changes):
        changes = list(changes)
        replaced.append(len(changes))
        original(index, changes)

    monkeypatch.setattr(QueueIndex, "replace", counting)
    trace = submitted_at_once(trace_file, max_jobs)
    policy = get_policy(name, predictor=predictor, **params)
    got = learning_replay(trace, policy)
    assert policy.indexed_batches > max_jobs // 2  # the index made the decisions
    assert sum(replaced) > 100  # and queued jobs were decided again while they waited
    plain = _plain_scan(get_policy(name, predictor=predictor, **params))
    want = learning_replay(trace, plain)
    assert plain.indexed_batches == 0
    for column in ("start_s", "end_s", "nodes", "freq_ghz", "planned_runtime_s"):
        assert np.array_equal(got[column].to_numpy(), want[column].to_numpy()), column
    assert np.isfinite(got["start_s"].to_numpy()).all()


def test_changed_decisions_names_every_decision_prepare_made_or_changed():
    """After each prepare, a queued job left out of ``changed_decisions`` holds the
    decision object it held after the previous prepare; the jobs named include
    every job seen for the first time. Checked at every batch of a learning replay
    whose queue grows long and whose applications are refitted while jobs wait."""
    trace = submitted_at_once("SDSC-SP2-1998-4.2-cln.swf.gz", 600)
    policy = get_policy("easy-slack-size-freq", predictor="adept+fluid")
    checked = watch_changed_decisions(policy.chooser)
    learning_replay(trace, policy)
    assert checked["batches"] > 300
    assert checked["kept"] > 10_000 and checked["changed"] > 100


def test_changed_decisions_is_unknown_when_decisions_depend_on_the_cluster():
    """``load-adaptive`` sizes depend on the queue's length: its decisions are not
    cached, so it cannot name the changed ones (backfilling scans the queue)."""
    trace = submitted_at_once("KTH-SP2-1996-2.1-cln.swf.gz", 400)
    policy = get_policy("easy-load-adaptive", predictor="amdahl+fluid")
    seen: list[object] = []
    prepare = policy.chooser.prepare

    def recording(queue, view):
        prepare(queue, view)
        seen.append(policy.chooser.changed_decisions())

    policy.chooser.prepare = recording
    learning_replay(trace, policy)
    assert seen and all(answer is None for answer in seen)
    assert policy.indexed_batches == 0


def test_the_decision_index_holds_the_current_decisions_after_every_sync(monkeypatch):
    """After every sync, each job in the index of the chooser's decisions holds the
    decision the chooser would give it now (the same object), also when every
    third batch took the plain scan instead (as a batch with a short queue
    would): the decisions the chooser changed in such a batch never reached the
    index, which must then be rebuilt, not read. The schedule is the plain
    scan's."""
    calls = {"n": 0, "skipped": 0, "checked": 0}
    indexed, synced = QueuePolicy._indexed_decisions, QueuePolicy._synced_decisions

    def sometimes(policy, queue, view):
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            calls["skipped"] += 1
            return None
        return indexed(policy, queue, view)

    def checked(policy, queue):
        index = synced(policy, queue)
        if index is not None:
            waiting = [d for d in index.jobs[index.first :] if d is not None]
            now = policy.chooser.decisions([d.job for d in waiting])
            assert all(a is b for a, b in zip(waiting, now)), "a stale decision in the index"
            calls["checked"] += len(waiting)
        return index

    monkeypatch.setattr(QueuePolicy, "_indexed_decisions", sometimes)
    monkeypatch.setattr(QueuePolicy, "_synced_decisions", checked)
    trace = submitted_at_once("SDSC-SP2-1998-4.2-cln.swf.gz", 1500)
    policy = get_policy("easy-slack-size-freq", predictor="adept+fluid")
    got = learning_replay(trace, policy)
    assert calls["skipped"] > 300 and calls["checked"] > 100_000
    monkeypatch.undo()
    plain = _plain_scan(get_policy("easy-slack-size-freq", predictor="adept+fluid"))
    want = learning_replay(trace, plain)
    for column in ("start_s", "nodes", "freq_ghz", "planned_runtime_s", "predicted_energy_j"):
        assert np.array_equal(got[column], want[column], equal_nan=True), column


def test_a_chooser_that_decides_its_own_way_does_not_name_changed_decisions():
    """A PredictiveChooser subclass that overrides ``prepare`` or ``decisions``
    answers ``None`` unless it declares ``changed_decisions`` itself: the base
    class cannot know what the override changes."""
    from policies.choosers import PredictiveChooser

    class OwnPrepare(PredictiveChooser):
        def prepare(self, queue, view):
            super().prepare(queue, view)

    class OwnDecisions(PredictiveChooser):
        def decisions(self, jobs):
            return super().decisions(jobs)

    trace = submitted_at_once("KTH-SP2-1996-2.1-cln.swf.gz", 400)
    for cls in (OwnPrepare, OwnDecisions):
        chooser = cls(predictor="amdahl+fluid", size="min-energy-slack")
        policy = QueuePolicy(backfill="easy", chooser=chooser)
        answers: list[object] = []
        prepare = chooser.prepare

        def recording(queue, view, chooser=chooser, prepare=prepare, answers=answers):
            prepare(queue, view)
            answers.append(chooser.changed_decisions())

        chooser.prepare = recording
        learning_replay(trace, policy)
        assert answers and all(a is None for a in answers), cls.__name__
        assert policy.indexed_batches == 0
    # before any prepare(), nothing is known
    assert PredictiveChooser(predictor="amdahl+fluid").changed_decisions() is None
