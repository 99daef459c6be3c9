"""The engine reads capabilities from declared tags, never from concrete classes."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from energysched.testing import SimpleTruth, check_policy, scenario_trace
from policies.backfilling import QueuePolicy
from policies.base import Policy, PolicyTags, get_policy_tags
from policies.registry import get_policy
from simulator import RunConfig, homogeneous_platform, simulate
from workloads.runs import RunBatch, RunRows
from workloads.truth import TruthTags, get_truth_tags


class Recorder(Policy):
    """Starts the head of the queue rigidly; records what ``observe`` receives."""

    name = "recorder"
    learns = True

    def __init__(self, rows: bool) -> None:
        self.rows = rows
        self.received: list[type] = []

    def __energysched_tags__(self) -> PolicyTags:
        tags = super().__energysched_tags__()
        tags.observe_rows = self.rows
        return tags

    def schedule(self, view: Any) -> list[Any]:
        return _fcfs(view)

    def observe(self, runs: Any) -> None:
        self.received.append(type(runs))


def _fcfs(view: Any) -> list[Any]:
    from policies.base import Decision

    out, free = [], view.free_nodes[0]
    for job in view.queue:
        n = min(job.requested_nodes, view.platform.node_types[0].count)
        if n > free:
            break
        out.append(Decision(job, n, view.platform.node_types[0].fmax_ghz))
        free -= n
    return out


@pytest.fixture(scope="module")
def small() -> tuple[pd.DataFrame, SimpleTruth]:
    return scenario_trace(n_jobs=30, nodes=8)


def test_defaults_for_plain_objects() -> None:
    class Plain:
        learns = True

    assert get_policy_tags(Plain()) == PolicyTags(learns=True)
    assert get_truth_tags(object()) == TruthTags()


def test_a_tag_of_the_wrong_type_is_refused() -> None:
    class Liar(Policy):
        def __energysched_tags__(self) -> Any:
            return {"learns": True}

    with pytest.raises(TypeError, match="must return a PolicyTags"):
        get_policy_tags(Liar())


@pytest.mark.parametrize(("rows", "expected"), [(False, pd.DataFrame), (True, RunBatch)])
def test_the_engine_hands_over_what_the_policy_declares(small, rows, expected) -> None:
    """SimpleTruth declares no tags (a plug-in truth): the engine measures into a
    DataFrame and hands a RunBatch only to a policy that declares ``observe_rows``."""
    jobs, truth = small
    policy = Recorder(rows)
    simulate(jobs, homogeneous_platform(8), policy, RunConfig(), truth)
    assert policy.received and set(policy.received) == {expected}


def test_rows_from_a_truth_that_declares_them(small) -> None:
    """A truth declaring ``measure_rows`` (and columns) gets the row path: RunRows."""
    jobs, base = small

    class RowTruth(SimpleTruth):
        def __energysched_tags__(self) -> TruthTags:
            return TruthTags(measure_columns=True, measure_rows=True)

        def measure(self, *args: Any, as_columns: bool = False) -> Any:
            frame = super().measure(*args)
            return {c: frame[c].to_numpy() for c in frame} if as_columns else frame

        def measure_row_values(self, job_index, node_type, nodes, freq, cores, rt, pw, rng):
            frame = super().measure(job_index, node_type, nodes, freq, cores, rt, pw, rng)
            from workloads.schema import MEASUREMENT_COLUMNS

            return list(frame[["application", *MEASUREMENT_COLUMNS]].itertuples(index=False))

    truth = RowTruth(base.application, base.work_s, base.A, base.sigma, base.alpha)
    policy = Recorder(True)
    simulate(jobs, homogeneous_platform(8), policy, RunConfig(), truth)
    assert set(policy.received) == {RunRows}


def test_queue_policy_copies_its_choosers_tag() -> None:
    learning = get_policy("easy-slack-size-freq")
    assert isinstance(learning, QueuePolicy)
    assert get_policy_tags(learning) == PolicyTags(
        learns=True, observe_rows=True, honours_power_cap=True
    )

    class Overrides(type(learning)):  # a subclass that replaces observe() keeps DataFrames
        def observe(self, runs: Any) -> None:
            super().observe(runs)

    learning.__class__ = Overrides
    assert get_policy_tags(learning).observe_rows is False


def test_conformance_catches_a_false_observe_rows_tag() -> None:
    """A policy that declares ``observe_rows`` but learns differently from rows than
    from DataFrames fails the ``observe_rows`` check."""

    class Moody(Recorder):
        def __init__(self) -> None:
            super().__init__(True)
            self.extra = 0

        def observe(self, runs: Any) -> None:
            if isinstance(runs, pd.DataFrame):
                self.extra = 1

        def schedule(self, view: Any) -> list[Any]:
            decisions = _fcfs(view)
            return decisions[: 1 + self.extra] if decisions else decisions

    failures = check_policy(Moody, raise_on_failure=False)
    assert any("observe_rows" in m for ms in failures.values() for m in ms)


def test_the_row_measurer_moves_no_value() -> None:
    """A learning replay measures every job that finishes alone with the truth's
    ``row_measurer`` (one per node type); the same truth declaring ``measure_rows``
    only (``measure_row_values`` for every batch) gives the same replay, bit for bit."""
    import copy

    from energysched.runner import build_platform, load_trace
    from workloads import assign_ground_truth
    from workloads.applications import TraceGroundTruth

    trace, _ = load_trace("builtin:kth-sp2", max_jobs=800)
    platform = build_platform("trace", trace)
    truth = assign_ground_truth(trace, platform, preset="npb-mix", seed=3)
    made: list[Any] = []
    calls: list[int] = []

    class Counting(TraceGroundTruth):
        def row_measurer(self, node_type: Any, rng: Any) -> Any:
            measure = super().row_measurer(node_type, rng)
            made.append(node_type)

            def counted(*args: Any) -> Any:
                calls.append(args[0])
                return measure(*args)

            return counted

    class RowsOnly(TraceGroundTruth):
        def __energysched_tags__(self) -> TruthTags:
            tags = super().__energysched_tags__()
            tags.row_measurer = False
            return tags

    results = []
    for cls in (Counting, RowsOnly):
        variant = copy.copy(truth)
        variant.__class__ = cls
        results.append(
            simulate(trace, platform, get_policy("easy-slack-size-freq"), RunConfig(), variant)
        )
    with_measurer, rows_only = results
    assert made == [platform.node_types[0]]  # one measurer for the replay's one node type
    assert 0.9 * len(trace.jobs) < len(calls) <= len(trace.jobs)  # most jobs finish alone
    pd.testing.assert_frame_equal(with_measurer.jobs, rows_only.jobs, check_exact=True)
    pd.testing.assert_frame_equal(
        with_measurer.predictor_log, rows_only.predictor_log, check_exact=True
    )
